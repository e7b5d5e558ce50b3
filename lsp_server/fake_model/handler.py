"""The fake model's HTTP side: the Chat Completions routes, SSE streaming and the faults.

`FakeOpenAI.start` binds one `ChatCompletionsHandler` subclass per server to its script.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import struct
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from .replies import FAULTS, FLOODS, Reply, null_content_at, prompt_tokens, split_text
from .script import SILENT_STYLES, ClientGoneError, ModelScript

log = logging.getLogger(__name__)
# finish_reason of a reply kind (else "stop")
FINISH = {"tool_calls": "tool_calls", "length": "length", "filtered": "content_filter"}


class ChatCompletionsHandler(BaseHTTPRequestHandler):
    """Answers `/v1/chat/completions` and `/v1/models` from the bound `fake` script."""

    fake: ModelScript
    protocol_version = "HTTP/1.1"
    timeout = 60

    def log_message(self, format: str, *args: Any) -> None:
        """Log each request at debug level (not on stderr)."""
        log.debug("fake model: " + format, *args)

    def version_string(self) -> str:
        """Return the `Server` header: llama-server's own when the fake is one."""
        return "llama.cpp" if self.fake.template_tools is not None else super().version_string()

    def do_GET(self) -> None:  # noqa: N802
        """Serve `/v1/models` (and llama-server's `/props`)."""
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            model = {"id": self.fake.model_id, "object": "model", "created": 0, "owned_by": "fake"}
            model.update(self.fake.models_entry)  # a window, or another server's fields
            self._json(200, {"object": "list", "data": [model]})
        elif self.path == "/props" and self.fake.template_tools is not None:
            takes = self.fake.template_tools
            props: dict[str, Any] = {
                "chat_template_caps": {"supports_tools": takes, "supports_tool_calls": takes},
                "build_info": "b1-fake",
                "total_slots": self.fake.slots or 1,
            }
            if self.fake.context_window is not None:  # a slot's context: the window
                props["default_generation_settings"] = {"n_ctx": self.fake.context_window}
            self._json(200, props)
        else:
            self._error(404, f"no route {self.path}", "invalid_request_error")

    def do_POST(self) -> None:  # noqa: N802
        """Serve `/v1/chat/completions`: record the request, then answer it."""
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
        if (probe := self.fake.probe_answer(body)) is not None:  # not a turn: not recorded
            self._json(200, probe) if probe else self._handler_failed(body)
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        number = self.fake._record(self.path, headers, body)
        window = self.fake.context_window
        if (
            window is not None
            and prompt_tokens(body) > window
            and self.fake.overflow not in SILENT_STYLES
        ):
            self._overflow(body, window, prompt_tokens(body))
            return
        if self.fake.no_tools is not None and body.get("tools"):
            self._refuse_tools(body)
            return
        if self.fake.null_content is not None and (at := null_content_at(body)) is not None:
            self._refuse_null_content(at)
            return
        if (
            not self.fake.tool_streams
            and body.get("tools")
            and body.get("tool_choice") == "required"
        ):
            self._handler_failed(body)  # llama-cpp-python: `assert tool_choice == "auto"`
            return
        slot = None
        try:
            slot = self.fake.take_slot(self._client_gone)  # a server of `slots` at a time
            reply = self.fake._next_reply(body)
            if reply.kind == "error":
                self._error(
                    reply.status,
                    reply.message,
                    reply.error_type,
                    retry=reply.retry,
                    code=reply.code,
                    retry_after=reply.retry_after,
                )
            elif body.get("stream") and reply.kind == "tool_calls" and not self.fake.tool_streams:
                self.fake._put_back(reply)  # asked again in one piece, the model calls it again
                self._empty_stream()
            elif body.get("stream"):
                self._stream(reply, body, number)
            else:
                self._complete(reply, body, number)
        except (ClientGoneError, BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            log.info("fake model: client disconnected during request %d", number)
            self.fake.count_disconnect()
            self.close_connection = True
        finally:
            if slot is not None:
                slot.release()

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
        retry: bool | None = None,
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
        if style == "llama-cpp" and body.get("stream"):
            self._empty_stream()
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

    def _refuse_tools(self, body: dict[str, Any]) -> None:
        """Refuse a request's tools, as the chosen server does."""
        style = self.fake.no_tools
        if style == "llama-server":  # without --jinja: a 500
            error = {"code": 500, "message": "tools param requires --jinja flag"}
            self._json(500, {"error": {**error, "type": "server_error"}})
        elif style == "vllm":  # without --enable-auto-tool-choice; no "error" wrapper
            message = (
                '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
                "to be set"
            )
            payload = {"object": "error", "message": message, "type": "BadRequestError"}
            self._json(400, {**payload, "param": None, "code": 400})
        else:  # Ollama, a model whose template has no tools
            model = body.get("model") or self.fake.model_id
            message = f"registry.ollama.ai/library/{model}:latest does not support tools"
            self._error(400, message, "api_error")

    def _handler_failed(self, body: dict[str, Any]) -> None:
        """Fail as llama-cpp-python does when its chat handler raises (here an assertion)."""
        if body.get("stream"):
            self._empty_stream()
        else:  # its exception handler answers 500 with the exception's text: none
            self._error(500, "", "internal_server_error")

    def _empty_stream(self) -> None:
        """Fail a stream as llama-cpp-python does when its handler raises (overflow, tools).

        llama-cpp-python 0.3.36, byte for byte: 200, an empty chunked body, the connection
        said to be kept alive; then, once the client sent its next request on it, reset.
        """
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Connection", "keep-alive")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        select.select([self.connection], [], [], 2.0)  # the next request arrives
        linger = struct.pack("ii", 1, 0)
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
        self.close_connection = True

    def _refuse_null_content(self, index: int) -> None:
        """Refuse an assistant message with null content, as the chosen server does."""
        if self.fake.null_content == "llama-server":  # builds before null was taken
            error = {"code": 500, "message": "Expected 'content' to be a string or an array"}
            self._json(500, {"error": {**error, "type": "server_error"}})
            return
        # llama-cpp-python validates the body with pydantic: one error per message type
        # the message could have been (the assistant one says what is wrong); HTTP 500.
        where = f"'loc': ('body', 'messages', {index}, "
        lines = [
            f"{{'type': 'literal_error', {where}'ChatCompletionRequestSystemMessage', 'role'), "
            "'msg': \"Input should be 'system'\", 'input': 'assistant'}",
            f"{{'type': 'string_type', {where}'ChatCompletionRequestAssistantMessage', "
            "'content'), 'msg': 'Input should be a valid string', 'input': None}",
        ]
        message = f"{len(lines)} validation errors:\n" + "\n".join(f"  {line}" for line in lines)
        message += '\n\n  File "llama_cpp/server/app.py", in create_chat_completion\n'
        error = {"message": message, "type": "internal_server_error", "param": None, "code": None}
        self._json(500, {"error": error})

    def _complete(self, reply: Reply, body: dict[str, Any], number: int) -> None:
        if reply.kind == "hang":
            self._hang()
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.reasoning:
            message[reply.reasoning_field] = reply.reasoning
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
        for i, piece in enumerate(split_text(reply.reasoning, reply.chunk)):
            if i:
                self._pause(reply.delay)
            send(
                {"role": "assistant", reply.reasoning_field: piece}
                if not i
                else {reply.reasoning_field: piece}
            )
        if reply.text or not calls:
            send({"role": "assistant", "content": ""})
        if reply.kind in FLOODS:
            self._flood(reply, send)
            return
        if reply.kind == "hang":
            send({"content": reply.text})
            self._hang()
        else:
            for i, piece in enumerate(split_text(reply.text, reply.chunk)):
                if i:
                    self._pause(reply.delay)
                send({"content": piece})
        if reply.kind in FAULTS:
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
            for piece in split_text(call["arguments"], reply.chunk):
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
            bad = reply.bad.encode() or b'{"id": "chatcmpl-broken", "choices": [{"delta": {"cont'
            self.wfile.write(b"data: " + bad + b"\n\n")
            self.wfile.flush()
            for _ in range(reply.rest):  # a client still reading gets them all
                self._pause(reply.delay)
                choice = {"index": 0, "delta": {"content": " more"}, "finish_reason": None}
                self._event(self._envelope("chat.completion.chunk", body, number, [choice]))
            choice = {"index": 0, "delta": {"content": " and more"}, "finish_reason": "stop"}
            self._event(self._envelope("chat.completion.chunk", body, number, [choice]))
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()  # "cut": the handler returns and the connection closes cleanly

    def _flood(self, reply: Reply, send: Any) -> None:
        """Send without end until the client leaves (BrokenPipeError ends the request)."""
        if reply.kind == "flood":
            piece = (reply.text * (reply.chunk // len(reply.text) + 1))[: reply.chunk]
            while True:
                send({"content": piece})
        self.wfile.write(b'data: {"choices": [{"index": 0, "delta": {"content": "')
        block = (reply.text * (65536 // len(reply.text) + 1))[:65536].encode()
        while True:
            self.wfile.write(block)
            self.wfile.flush()

    def _event(self, payload: dict[str, Any]) -> None:
        self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
        self.wfile.flush()

    def _pause(self, delay: float) -> None:
        self.fake.pause(delay, self._client_gone)

    def _hang(self) -> None:
        self.fake.hang(self._client_gone)

    def _client_gone(self) -> bool:
        """Report whether the peer closed its end (readable socket, no data)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and not self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True

    # -- shared pieces -----------------------------------------------------
    def _calls(self, reply: Reply) -> list[dict[str, str]]:
        return [dict(c, id=c["id"] or self.fake.call_id()) for c in reply.tool_calls]

    @staticmethod
    def _finish(reply: Reply) -> str:
        return FINISH.get(reply.kind, "stop")

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

    def _usage(self, body: dict[str, Any], reply: Reply) -> dict[str, int]:
        """Count the prompt as the window check does; a silent style reports what it kept."""
        prompt = prompt_tokens(body)
        window = self.fake.context_window
        if window is not None and prompt > window:  # only a silent style gets here
            prompt = window // 2 + 2 if self.fake.overflow == "ollama" else window
        completion = len(reply.text.split()) + sum(
            len(c["arguments"]) // 4 + 1 for c in reply.tool_calls
        )
        return dict(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
        )
