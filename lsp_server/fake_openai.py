"""A scriptable OpenAI Chat Completions server on 127.0.0.1, for tests and the offline demo.

Replies are dicts (the same shape as the CLI's JSON script file)::

    "plain text"                                   # same as {"text": "plain text"}
    {"text": "...", "chunk": 8, "delay": 0.0}      # streamed in `chunk`-sized deltas
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "a"}, "id": "call_1"}],
     "text": "optional content first", "chunk": 8, "delay": 0.0}
    {"error": 500, "message": "...", "type": "server_error", "retry": False}
    {"empty": True}                                # finish_reason "stop", no content
    {"length": "partial text", "chunk": 8}         # finish_reason "length"
    {"hang": "first delta"}                        # one delta, then wait for release()

Faults real servers produce (each streams its text first, then fails):

    {"cut": "partial"}             # the stream ends: no finish_reason, no [DONE]
    {"drop": "partial"}            # the connection is reset mid-stream
    {"corrupt": "partial"}         # a chunk that is not JSON, then the rest
    {"stall": "partial", "seconds": 5}   # nothing for `seconds`, then the stream ends
    {"error": 429, "retry_after": 2}     # any error can carry a Retry-After header
    {"error": 400, "code": "context_length_exceeded", "message": "..."}
    {"text": "...", "first_delay": 3}    # headers at once, the first chunk later
    {"text": "...", "usage": False}      # no usage in the stream (llama.cpp's servers)

``FakeOpenAI(context_window=N, overflow="openai"|"llama-cpp"|"vllm"|"llama-server")``
answers every request whose prompt is over N tokens (4 bytes each) the way that server
does, before any scripted reply is used: ``llama-cpp`` (llama-cpp-python) sends HTTP 200
with an empty body when streamed, HTTP 400 ``context_length_exceeded`` when not.

When the queue is empty the reply is ``Echo: <last user message>``.

The server's background session-summary requests (their instructions start with
``SUMMARY_MARKER``) are answered from a queue of their own, ``add_summary()``, and recorded
in ``summary_requests``, not ``requests``: scripted chat replies are never taken by them.
By default the answer is a structured summary listing the user's requests.
Run ``python -m lsp_server.fake_openai --port 0 --script FILE`` to serve from a subprocess; the
first line on stdout is the base URL.
"""

from __future__ import annotations

import argparse
import json
import logging
import select
import signal
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_MODEL = "fake-model"
_KINDS = (
    "text",
    "tool_calls",
    "error",
    "empty",
    "length",
    "hang",
    "cut",
    "drop",
    "corrupt",
    "stall",
)
_FAULTS = ("cut", "drop", "corrupt", "stall")
_OPTIONS = {
    "chunk",
    "delay",
    "message",
    "type",
    "retry",
    "text",
    "code",
    "retry_after",
    "seconds",
    "first_delay",
    "usage",
}
OVERFLOW_STYLES = ("openai", "llama-cpp", "vllm", "llama-server")
SUMMARY_MARKER = "You keep the running summary"


class ClientGoneError(Exception):
    """The client closed the connection before the reply was finished."""


@dataclass
class Reply:
    """One scripted reply, normalised from its dict form by `parse_reply`."""

    kind: str
    text: str = ""
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    status: int = 500
    message: str = "scripted error"
    error_type: str = "server_error"
    retry: bool = False
    chunk: int = 8
    delay: float = 0.0
    code: str | None = None
    retry_after: str | None = None
    seconds: float = 0.0
    first_delay: float = 0.0
    usage: bool = True


@dataclass
class RecordedRequest:
    """A chat completion request as the server received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)  # when it arrived


def parse_reply(spec: str | dict[str, Any] | Reply) -> Reply:
    """Turn a reply in its dict (or plain string) form into a `Reply`; raise ValueError if bad."""
    if isinstance(spec, Reply):
        return spec
    if isinstance(spec, str):
        spec = {"text": spec}
    kinds = [k for k in _KINDS[1:] if k in spec] or [k for k in ("text",) if k in spec]
    unknown = spec.keys() - set(_KINDS) - _OPTIONS
    if len(kinds) != 1 or unknown:
        raise ValueError(f"bad reply {spec!r}: need one of {_KINDS}; unknown keys {unknown}")
    kind = kinds[0]
    chunk, delay = max(1, int(spec.get("chunk", 8))), float(spec.get("delay", 0))
    text = str(spec.get("text", "")) if kind in ("text", "tool_calls") else ""
    reply = Reply(kind=kind, text=text, chunk=chunk, delay=delay)
    reply.first_delay = float(spec.get("first_delay", 0))
    reply.usage = bool(spec.get("usage", True))
    if kind in _FAULTS:
        reply.text = str(spec[kind])
        reply.seconds = float(spec.get("seconds", 0))
    if kind == "tool_calls":
        for call in spec["tool_calls"]:
            args = call.get("arguments", {})
            reply.tool_calls.append(
                {
                    "name": str(call["name"]),
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                    "id": str(call.get("id", "")),
                }
            )
    elif kind == "error":
        reply.status = int(spec["error"])
        reply.message = str(spec.get("message", reply.message))
        reply.error_type = str(spec.get("type", reply.error_type))
        reply.retry = bool(spec.get("retry", False))
        reply.code = str(spec["code"]) if spec.get("code") is not None else None
        if spec.get("retry_after") is not None:
            reply.retry_after = str(spec["retry_after"])
    elif kind == "length":
        reply.text = str(spec["length"])
    elif kind == "hang":
        reply.text = spec["hang"] if isinstance(spec["hang"], str) and spec["hang"] else "..."
    return reply


def _content_text(content: Any) -> str:
    """Flatten a message's content (string or list of parts) to text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


class FakeOpenAI:
    """A scripted OpenAI-compatible chat completions server running in a background thread."""

    def __init__(
        self,
        replies: list[Any] | None = None,
        *,
        label: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        context_window: int | None = None,
        overflow: str = "openai",
    ) -> None:
        if overflow not in OVERFLOW_STYLES:
            raise ValueError(f"overflow must be one of {OVERFLOW_STYLES}")
        self.model_id = f"agent-assist-{label}" if label else DEFAULT_MODEL
        self.context_window = context_window
        self.overflow = overflow
        self.disconnects = 0
        self._queue: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._summary_queue: deque[Reply] = deque()
        self._summary_requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._hangs: set[threading.Event] = set()
        self._hang_cond = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._counter = 0
        self._address = (host, port)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.add(*(replies or []))

    # -- scripting ---------------------------------------------------------
    def add(self, *replies: str | dict[str, Any] | Reply) -> None:
        """Append replies (dict/str/`Reply`) to the script queue."""
        parsed = [parse_reply(r) for r in replies]
        with self._lock:
            self._queue.extend(parsed)

    def add_summary(self, *replies: str | dict[str, Any] | Reply) -> None:
        """Append replies for the server's background session-summary requests."""
        parsed = [parse_reply(r) for r in replies]
        with self._lock:
            self._summary_queue.extend(parsed)

    @property
    def summary_requests(self) -> list[RecordedRequest]:
        """Every background session-summary request received so far."""
        with self._lock:
            return list(self._summary_requests)

    @property
    def remaining(self) -> int:
        """Number of scripted replies not yet consumed."""
        with self._lock:
            return len(self._queue)

    def release(self) -> None:
        """Let every currently hanging reply finish."""
        with self._lock:
            for event in self._hangs:
                event.set()

    def wait_hanging(self, timeout: float = 5.0) -> bool:
        """Block until some reply is hanging (its first delta sent); False on timeout."""
        with self._hang_cond:
            return self._hang_cond.wait_for(lambda: bool(self._hangs), timeout)

    # -- recorded requests -------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every chat completion request received so far."""
        with self._lock:
            return list(self._requests)

    def last_request(self) -> RecordedRequest:
        """Return the most recent chat completion request."""
        return self.requests[-1]

    def messages(self, i: int = -1) -> list[dict[str, Any]]:
        """Return the `messages` list of request `i`."""
        return list(self.requests[i].body.get("messages", []))

    def system_text(self, i: int = -1) -> str:
        """Concatenated content of the system/developer messages of request `i`."""
        parts = [
            _content_text(m.get("content"))
            for m in self.messages(i)
            if m.get("role") in ("system", "developer")
        ]
        return "\n".join(parts)

    # -- lifecycle ---------------------------------------------------------
    @property
    def base_url(self) -> str:
        """Base URL for an OpenAI client, e.g. ``http://127.0.0.1:PORT/v1``."""
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not running")
        return f"http://{self._address[0]}:{self._server.server_port}/v1"

    def start(self) -> FakeOpenAI:
        """Bind the port and serve in a daemon thread."""
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(self._address, handler)
        self._server.daemon_threads = True
        self._server.handle_error = self._handle_error  # type: ignore[method-assign]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, releasing hanging and delayed replies."""
        self._stopping.set()
        self.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handle_error(self, request: Any, client_address: Any) -> None:
        log.exception("fake_openai: error while handling %s", client_address)

    # -- reply selection (called from handler threads) ---------------------
    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> int:
        with self._lock:
            if _is_summary_request(body):
                self._summary_requests.append(RecordedRequest(path, headers, body))
                return len(self._summary_requests)
            self._requests.append(RecordedRequest(path, headers, body))
            return len(self._requests)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        if _is_summary_request(body):
            with self._lock:
                if self._summary_queue:
                    return self._summary_queue.popleft()
            return _default_summary(body)
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        last_user = ""
        for message in body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "user":
                last_user = _content_text(message.get("content"))
        return Reply(kind="text", text=f"Echo: {last_user}")

    def _call_id(self) -> str:
        with self._lock:
            self._counter += 1
            return f"call_{self._counter}"


class _Handler(BaseHTTPRequestHandler):
    """Request handler; `fake` is bound per server by `FakeOpenAI.start`."""

    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"
    timeout = 60

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("fake_openai: " + format, *args)

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            model = {"id": self.fake.model_id, "object": "model", "created": 0, "owned_by": "fake"}
            self._json(200, {"object": "list", "data": [model]})
        else:
            self._error(404, f"no route {self.path}", "invalid_request_error")

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.split("?")[0].rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route {self.path}", "invalid_request_error")
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not an object")
        except ValueError as exc:
            self._error(400, f"invalid JSON body: {exc}", "invalid_request_error")
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        number = self.fake._record(self.path, headers, body)
        window = self.fake.context_window
        if window is not None and (tokens := prompt_tokens(body)) > window:
            self._overflow(body, window, tokens)
            return
        reply = self.fake._next_reply(body)
        try:
            if reply.kind == "error":
                self._error(
                    reply.status,
                    reply.message,
                    reply.error_type,
                    retry=reply.retry,
                    code=reply.code,
                    retry_after=reply.retry_after,
                )
            elif body.get("stream"):
                self._stream(reply, body, number)
            else:
                self._complete(reply, body, number)
        except (ClientGoneError, BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            log.info("fake_openai: client disconnected during request %d", number)
            with self.fake._lock:
                self.fake.disconnects += 1
            self.close_connection = True

    # -- plain responses ---------------------------------------------------
    def _json(
        self,
        status: int,
        payload: dict[str, Any],
        retry: bool | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if retry is not None:
            self.send_header("x-should-retry", "true" if retry else "false")
        self.end_headers()
        self.wfile.write(data)

    def _error(
        self,
        status: int,
        message: str,
        kind: str,
        retry: bool = False,
        code: str | None = None,
        retry_after: str | None = None,
    ) -> None:
        error = {"message": message, "type": kind, "param": None, "code": code}
        extra = {"Retry-After": retry_after} if retry_after is not None else {}
        self._json(status, {"error": error}, retry=retry, headers=extra)

    def _overflow(self, body: dict[str, Any], window: int, tokens: int) -> None:
        """Refuse a prompt over the window, worded as the chosen server words it."""
        style = self.fake.overflow
        completion = 100
        if style == "llama-cpp" and body.get("stream"):  # llama-cpp-python: 200, empty body
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            return
        requested = f"you requested {tokens + completion} tokens ({tokens} in the messages, "
        requested += f"{completion} in the completion)"
        if style == "llama-server":
            error = {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": tokens,
                "n_ctx": window,
            }
            self._json(400, {"error": error})
        elif style == "vllm":  # no "error" wrapper, no code string
            message = (
                f"This model's maximum context length is {window} tokens. However, {requested}. "
                "Please reduce the length of the messages or completion."
            )
            payload = {"object": "error", "message": message, "type": "BadRequestError"}
            self._json(400, {**payload, "param": None, "code": 400})
        else:  # OpenAI, and llama-cpp-python without streaming
            message = (
                f"This model's maximum context length is {window} tokens. However, {requested}."
            )
            self._error(400, message, "invalid_request_error", code="context_length_exceeded")

    def _complete(self, reply: Reply, body: dict[str, Any], number: int) -> None:
        if reply.kind == "hang":
            self._hang()
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        calls = self._calls(reply)
        if calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in calls
            ]
        choice = {"index": 0, "message": message, "finish_reason": self._finish(reply)}
        payload = self._envelope("chat.completion", body, number, [choice])
        payload["usage"] = self._usage(body, reply)
        self._json(200, payload)

    # -- streaming ---------------------------------------------------------
    def _stream(self, reply: Reply, body: dict[str, Any], number: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def send(delta: dict[str, Any], finish: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            self._event(self._envelope("chat.completion.chunk", body, number, [choice]))

        calls = self._calls(reply)
        self._pause(reply.first_delay)
        if reply.text or not calls:
            send({"role": "assistant", "content": ""})
        if reply.kind == "hang":
            send({"content": reply.text})
            self._hang()
        else:
            for i, piece in enumerate(_split(reply.text, reply.chunk)):
                if i:
                    self._pause(reply.delay)
                send({"content": piece})
        if reply.kind in _FAULTS:
            self._fault(reply, body, number)
            return
        for index, call in enumerate(calls):
            self._pause(reply.delay)
            head = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": ""},
            }
            send(
                {"role": "assistant", "content": None, "tool_calls": [head]}
                if index == 0 and not reply.text
                else {"tool_calls": [head]}
            )
            for piece in _split(call["arguments"], reply.chunk):
                self._pause(reply.delay)
                send({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        send({}, self._finish(reply))
        if reply.usage and (body.get("stream_options") or {}).get("include_usage"):
            usage = self._envelope("chat.completion.chunk", body, number, [])
            usage["usage"] = self._usage(body, reply)
            self._event(usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _fault(self, reply: Reply, body: dict[str, Any], number: int) -> None:
        """End a stream the way a failing server does (after its text was sent)."""
        if reply.kind == "stall":
            self._pause(reply.seconds)  # then the stream just ends, unfinished
        elif reply.kind == "drop":  # RST instead of FIN: the client sees a reset
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        elif reply.kind == "corrupt":
            self.wfile.write(b'data: {"id": "chatcmpl-broken", "choices": [{"delta": {"cont\n\n')
            self.wfile.flush()
            choice = {"index": 0, "delta": {"content": " and more"}, "finish_reason": "stop"}
            self._event(self._envelope("chat.completion.chunk", body, number, [choice]))
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()  # "cut": the handler returns and the connection closes cleanly

    def _event(self, payload: dict[str, Any]) -> None:
        self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
        self.wfile.flush()

    def _pause(self, delay: float) -> None:
        """Sleep between chunks; notice a client that hung up meanwhile."""
        end = time.monotonic() + delay
        while delay > 0 and (left := end - time.monotonic()) > 0:
            if self.fake._stopping.wait(min(left, 0.05)):
                return
            if self._client_gone():
                raise ClientGoneError

    def _hang(self) -> None:
        """Wait until released, the server stops, or the client disconnects."""
        event = threading.Event()
        with self.fake._hang_cond:
            self.fake._hangs.add(event)
            self.fake._hang_cond.notify_all()
        try:
            while not event.wait(0.05):
                if self.fake._stopping.is_set():
                    return
                if self._client_gone():
                    raise ClientGoneError
        finally:
            with self.fake._lock:
                self.fake._hangs.discard(event)

    def _client_gone(self) -> bool:
        """Report whether the peer closed its end (readable socket, no data)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and not self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True

    # -- shared pieces -----------------------------------------------------
    def _calls(self, reply: Reply) -> list[dict[str, str]]:
        return [dict(c, id=c["id"] or self.fake._call_id()) for c in reply.tool_calls]

    @staticmethod
    def _finish(reply: Reply) -> str:
        return {"tool_calls": "tool_calls", "length": "length"}.get(reply.kind, "stop")

    def _envelope(
        self, obj: str, body: dict[str, Any], number: int, choices: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-fake-{number}",
            "object": obj,
            "created": int(time.time()),
            "model": body.get("model") or self.fake.model_id,
            "choices": choices,
        }

    @staticmethod
    def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
        messages = body.get("messages") or []
        prompt = sum(
            len(_content_text(m.get("content")).split()) for m in messages if isinstance(m, dict)
        )
        completion = len(reply.text.split()) + sum(
            len(c["arguments"]) // 4 + 1 for c in reply.tool_calls
        )
        return dict(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
        )


def _is_summary_request(body: dict[str, Any]) -> bool:
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            if SUMMARY_MARKER in _content_text(message.get("content")):
                return True
    return False


def _default_summary(body: dict[str, Any]) -> Reply:
    """Answer a summary request with a structured summary naming the user's requests."""
    text = " ".join(
        _content_text(m.get("content"))
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "user"
    )
    asked = [line[len("User: ") :][:60] for line in text.splitlines() if line.startswith("User: ")]
    summary = "Running summary: the user asked " + ("; ".join(asked) or "nothing yet") + "."
    arguments = json.dumps({"summary": summary, "decisions": []})
    return Reply(
        kind="tool_calls", tool_calls=[{"name": "final_result", "arguments": arguments, "id": ""}]
    )


def prompt_tokens(body: dict[str, Any]) -> int:
    """Estimate a request's prompt tokens as the fake counts them: 4 bytes each."""
    return len(json.dumps(body.get("messages") or [])) // 4


def load_script(path: str | Path) -> tuple[list[Any], str | None]:
    """Read a JSON script file: a list of replies (``{"label": ...}`` entries set the label)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    label: str | None = None
    if isinstance(data, dict):
        label, data = data.get("label"), data.get("replies", [])
    replies: list[Any] = []
    for item in data:
        if isinstance(item, dict) and set(item) == {"label"}:
            label = str(item["label"])
        else:
            replies.append(item)
    return replies, label


def main(argv: list[str] | None = None) -> int:
    """Serve a scripted fake OpenAI endpoint; print the base URL on the first stdout line."""
    parser = argparse.ArgumentParser(prog="python -m lsp_server.fake_openai")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help="JSON file with a list of replies")
    parser.add_argument("--label", help="model id becomes agent-assist-LABEL")
    args = parser.parse_args(argv)
    replies, label = load_script(args.script) if args.script else ([], None)
    logging.basicConfig(level=logging.WARNING)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with FakeOpenAI(replies, label=args.label or label, host=args.host, port=args.port) as fake:
        print(fake.base_url, flush=True)  # noqa: T201
        try:
            while not done.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
