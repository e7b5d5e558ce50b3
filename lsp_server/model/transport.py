"""The HTTP client the model is spoken to with: timeouts, and streams that must finish.

A request may wait `first_token_timeout` for its answer to begin (the client's read
timeout: a local server reads the whole prompt before it sends anything); once a stream
has begun, `stream_timeout` without a chunk is a stall (`StreamStallError`).

A streamed completion is complete when it carried a `finish_reason` or ended with
`data: [DONE]`. One that simply stops (the connection closed cleanly mid-answer, a proxy
giving up, a server that died behind a load balancer) looks to the OpenAI SDK like a short
answer; here it raises `StreamCutError`, so the turn can be retried instead of recording
half an answer as complete. A stream that ends before sending anything at all (what
llama-cpp-python's server sends for a prompt over its window) raises `EmptyStreamError`.

Requests are changed for what the server turned out to refuse (`quirks.ServerQuirks`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable

import httpx2

from .quirks import ServerQuirks, blank_tool_text

CONNECT_TIMEOUT = 10.0
_FINISHED = re.compile(rb'"finish_reason"\s*:\s*"|^data:\s*\[DONE\]', re.MULTILINE)
_TAIL = 64  # bytes of the previous chunk kept, so a marker split across chunks is seen


class StreamCutError(httpx2.RemoteProtocolError):
    """The model's stream ended before it finished (no finish_reason, no [DONE])."""


class EmptyStreamError(StreamCutError):
    """The model's stream ended without sending anything (e.g. a prompt over the window)."""


class StreamStallError(httpx2.ReadTimeout):
    """The model's stream began, then sent nothing for `stream_timeout` seconds."""


class _CheckedStream(httpx2.AsyncByteStream):
    """Passes an SSE body through: a stall between chunks raises, so does an unfinished end."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, on_broken: Callable[[], None], gap: float | None
    ) -> None:
        self.inner = inner
        self.on_broken = on_broken
        self.gap = gap  # seconds allowed between chunks once the first came (None: no limit)

    async def _chunks(self) -> AsyncIterator[bytes]:
        chunks = aiter(self.inner)
        try:
            yield await anext(chunks)  # within the client's read timeout (the first token's)
        except StopAsyncIteration:
            return
        while True:
            try:
                async with asyncio.timeout(self.gap):
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                return
            except TimeoutError:
                self.on_broken()
                raise StreamStallError(
                    f"the model stopped sending: nothing for {self.gap:g} s (model.streamTimeout)"
                ) from None
            yield chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        finished = False
        received = 0
        tail = b""
        async for chunk in self._chunks():
            received += len(chunk)
            if not finished:
                finished = _FINISHED.search(tail + chunk) is not None
                tail = chunk[-_TAIL:]
            yield chunk
        if not received:
            self.on_broken()
            raise EmptyStreamError("the model's stream ended without sending anything")
        if not finished:
            self.on_broken()
            raise StreamCutError(
                "the model's stream ended before the answer was complete "
                "(no finish_reason, no [DONE])"
            )

    async def aclose(self) -> None:
        """Close the wrapped stream."""
        await self.inner.aclose()


class CompletionCheckTransport(httpx2.AsyncBaseTransport):
    """Wraps a transport so that event streams that stop short raise instead of ending.

    A server whose stream broke may also have left its connection half dead: after an
    empty stream, llama-cpp-python says `keep-alive`, then resets the connection once the
    next request is on it. So after a broken stream, a request that fails before any
    answer (read, write or protocol error) is sent once more, on a fresh connection (the
    pool has dropped the dead one).
    """

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        quirks: ServerQuirks | None = None,
        stream_timeout: float | None = None,
    ) -> None:
        self.inner = inner
        self.quirks = quirks or ServerQuirks()
        self.stream_timeout = stream_timeout
        self.suspect = False  # a stream broke: its connection may be dead

    def _broken(self) -> None:
        self.suspect = True

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send `request`; check the body of a successful event stream as it is read."""
        suspect, self.suspect = self.suspect, False
        if self.quirks.blank_tool_text and request.method == "POST":
            request = _changed(request, blank_tool_text(await request.aread()))
        try:
            response = await self.inner.handle_async_request(request)
        except (httpx2.ReadError, httpx2.WriteError, httpx2.RemoteProtocolError):
            if not suspect:
                raise
            response = await self.inner.handle_async_request(request)
        self.quirks.server = response.headers.get("server", "")
        content_type = response.headers.get("content-type", "")
        if response.status_code == 200 and content_type.startswith("text/event-stream"):
            stream = response.stream
            assert isinstance(stream, httpx2.AsyncByteStream)
            response.stream = _CheckedStream(stream, self._broken, self.stream_timeout)
        return response

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self.inner.aclose()


def _changed(request: httpx2.Request, body: bytes | None) -> httpx2.Request:
    """Return `request` with `body` (the same request when None)."""
    if body is None:
        return request
    headers = httpx2.Headers(request.headers)
    headers["content-length"] = str(len(body))
    return httpx2.Request(
        request.method, request.url, headers=headers, content=body, extensions=request.extensions
    )


def build_http_client(
    stream_timeout: float, first_token_timeout: float, quirks: ServerQuirks | None = None
) -> httpx2.AsyncClient:
    """Return the client for model requests (the timeouts: see the module docstring)."""
    first = max(first_token_timeout, stream_timeout)
    timeout = httpx2.Timeout(first, connect=min(CONNECT_TIMEOUT, stream_timeout))
    transport = CompletionCheckTransport(httpx2.AsyncHTTPTransport(), quirks, stream_timeout)
    return httpx2.AsyncClient(transport=transport, timeout=timeout)
