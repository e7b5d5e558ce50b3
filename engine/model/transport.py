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

Each event of a stream must be a JSON object a chat completion chunk can be (`choices`, or an
`error`): a malformed one raises `CorruptChunkError` at once, so the stream is closed there and
not read to its end (the SDK would skip a well-formed JSON object without `choices` in
silence). A reply is bounded (`model.maxReplyBytes`): a body larger than
`RAW_FACTOR` × the cap, or one event line larger than `LINE_FACTOR` × the cap, raises
`ReplyTooLargeError` (an endless stream, or one line that never ends, would otherwise grow
the server until the machine runs out of memory).

Requests are changed for what the server turned out to refuse (`quirks.ServerQuirks`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable

import httpx2
import orjson

from .quirks import ServerQuirks, blank_tool_text

CONNECT_TIMEOUT = 10.0
_FINISHED = re.compile(rb'"finish_reason"\s*:\s*"|^data:\s*\[DONE\]', re.MULTILINE)
_TAIL = 64  # bytes of the previous chunk kept, so a marker split across chunks is seen
# A reply's wire bytes per byte of its content: a streamed delta of one token carries ~150
# bytes of JSON around it. The content itself is counted against the cap by the runner.
RAW_FACTOR = 64
LINE_FACTOR = 2  # one event carries at most (about) the whole reply, JSON-escaped
LINE_SLACK = 64 << 10


class StreamCutError(httpx2.RemoteProtocolError):
    """The model's stream ended before it finished (no finish_reason, no [DONE])."""


class EmptyStreamError(StreamCutError):
    """The model's stream ended without sending anything (e.g. a prompt over the window)."""


class StreamStallError(httpx2.ReadTimeout):
    """The model's stream began, then sent nothing for `stream_timeout` seconds."""


class CorruptChunkError(httpx2.RemoteProtocolError):
    """An event of the model's stream is not a chat completion chunk (not JSON, no choices)."""


class ReplyTooLargeError(Exception):
    """The model's reply passed `model.maxReplyBytes` (its content, or its bytes on the wire)."""

    def __init__(self, limit: int, what: str = "reply") -> None:
        self.limit = limit
        super().__init__(
            f"the model's {what} passed {limit:,} bytes (model.maxReplyBytes): it was stopped there"
        )


def check_event_line(line: bytes) -> None:
    """Raise `CorruptChunkError` unless an SSE line is harmless or a well-formed chunk event."""
    if not line.startswith(b"data:"):
        return  # a comment, `event:`, `id:`, `retry:` or a blank line: SSE framing
    data = line[5:].strip()
    if not data or data == b"[DONE]":
        return
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CorruptChunkError(f"the model sent a malformed chunk (not JSON: {exc})") from None
    if not isinstance(event, dict):
        raise CorruptChunkError("the model sent a malformed chunk (not a JSON object)")
    choices = event.get("choices")
    if "error" in event or (
        isinstance(choices, list)
        and all(isinstance(c, dict) and isinstance(c.get("delta") or {}, dict) for c in choices)
    ):
        return
    keys = ", ".join(sorted(map(str, event))[:6]) or "none"
    raise CorruptChunkError(
        f"the model sent a malformed chunk (no list of choices; its keys: {keys})"
    )


class _LineChecker:
    """Splits a streamed body into SSE lines and checks each (`check_event_line`), bounded."""

    def __init__(self, max_reply: int) -> None:
        self.max_reply = max_reply
        self.max_line = max_reply * LINE_FACTOR + LINE_SLACK
        self.pending = b""
        self.error: CorruptChunkError | None = None  # the malformed event `feed` found

    def feed(self, chunk: bytes) -> int | None:
        """Check the lines `chunk` completes; raise if the unfinished one is too long.

        Return None if they are all well formed, else how many bytes of `chunk` come before
        the first malformed one (the events before it are passed on; then the stream ends).
        """
        held = len(self.pending)
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        offset = 0
        for line in lines:
            try:
                check_event_line(line.rstrip(b"\r"))
            except CorruptChunkError as exc:
                self.error = exc
                return max(0, offset - held)
            offset += len(line) + 1
        if len(self.pending) > self.max_line:
            raise ReplyTooLargeError(self.max_reply, "stream (one event larger than the reply cap)")
        return None


class _CheckedStream(httpx2.AsyncByteStream):
    """Passes an SSE body through: a stall between chunks raises, so does an unfinished end.

    So does a malformed event (`CorruptChunkError`) and a body past its size cap
    (`ReplyTooLargeError`).
    """

    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        on_broken: Callable[[], None],
        gap: float | None,
        max_reply: int | None = None,
    ) -> None:
        self.inner = inner
        self.on_broken = on_broken
        self.gap = gap  # seconds allowed between chunks once the first came (None: no limit)
        self.max_reply = max_reply
        self.max_raw = None if max_reply is None else max_reply * RAW_FACTOR
        self.lines = None if max_reply is None else _LineChecker(max_reply)

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
            try:
                good = None if self.lines is None else self.lines.feed(chunk)
                if good is not None and self.lines is not None and self.lines.error is not None:
                    if good:
                        yield chunk[:good]  # the events before the malformed one count
                    raise self.lines.error
                if self.max_raw is not None and received > self.max_raw:
                    raise ReplyTooLargeError(self.max_raw // RAW_FACTOR)
            except (CorruptChunkError, ReplyTooLargeError):
                self.on_broken()
                await self.inner.aclose()  # stop reading now: the server sees us leave
                raise
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
        max_reply: int | None = None,
        on_send: Callable[[bytes], None] | None = None,
    ) -> None:
        self.inner = inner
        self.quirks = quirks or ServerQuirks()
        self.stream_timeout = stream_timeout
        self.max_reply = max_reply
        self.on_send = on_send  # given each POST body as sent (`request_digest`)
        self.suspect = False  # a stream broke: its connection may be dead

    def _broken(self) -> None:
        self.suspect = True

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send `request`; check the body of a successful event stream as it is read."""
        suspect, self.suspect = self.suspect, False
        if self.quirks.blank_tool_text and request.method == "POST":
            request = _changed(request, blank_tool_text(await request.aread()))
        if self.on_send is not None and request.method == "POST":
            self.on_send(await request.aread())  # the body as it goes on the wire
        try:
            response = await self.inner.handle_async_request(request)
        except (httpx2.ReadError, httpx2.WriteError, httpx2.RemoteProtocolError):
            if not suspect:
                raise
            response = await self.inner.handle_async_request(request)
        self.quirks.server = response.headers.get("server", "")
        content_type = response.headers.get("content-type", "")
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        if response.status_code == 200 and content_type.startswith("text/event-stream"):
            response.stream = _CheckedStream(
                stream, self._broken, self.stream_timeout, self.max_reply
            )
        elif self.max_reply is not None:  # an answer in one piece, or an error's body
            response.stream = _SizedBody(stream, self.max_reply * RAW_FACTOR)
        return response

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self.inner.aclose()


class _SizedBody(httpx2.AsyncByteStream):
    """Passes a body through; past `limit` bytes raises `ReplyTooLargeError`."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self.inner:
            received += len(chunk)
            if received > self.limit:
                await self.inner.aclose()
                raise ReplyTooLargeError(self.limit // RAW_FACTOR)
            yield chunk

    async def aclose(self) -> None:
        """Close the wrapped stream."""
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
    stream_timeout: float,
    first_token_timeout: float,
    quirks: ServerQuirks | None = None,
    max_reply: int | None = None,
    *,
    inner: httpx2.AsyncBaseTransport | None = None,
    on_send: Callable[[bytes], None] | None = None,
) -> httpx2.AsyncClient:
    """Return the client for model requests (the timeouts and caps: the module docstring).

    `on_send` is given each request body as sent; `inner` replaces the network (a rebuild
    captures the body instead of sending it: `request_digest`).
    """
    first = max(first_token_timeout, stream_timeout)
    timeout = httpx2.Timeout(first, connect=min(CONNECT_TIMEOUT, stream_timeout))
    transport = CompletionCheckTransport(
        inner or httpx2.AsyncHTTPTransport(), quirks, stream_timeout, max_reply, on_send
    )
    return httpx2.AsyncClient(transport=transport, timeout=timeout)
