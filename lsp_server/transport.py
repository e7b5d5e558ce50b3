"""The JSON-RPC transport under pygls: raw custom params, in-loop stdin, guarded writes."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import stat
import sys
from typing import Any, BinaryIO

import cattrs
import orjson
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidRequest
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
)

logger = logging.getLogger(__name__)


def keep_params_as_dicts() -> cattrs.Converter:
    """Build a converter that keeps custom params as plain JSON (pydantic validates them)."""
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]

    def request(obj: dict[str, Any], cls: type) -> Any:
        return cls(
            id=obj.get("id"),
            method=obj.get("method", ""),
            jsonrpc=obj.get("jsonrpc", ""),
            params=obj.get("params"),
        )

    def notification(obj: dict[str, Any], cls: type) -> Any:
        return cls(
            method=obj.get("method", ""), jsonrpc=obj.get("jsonrpc", ""), params=obj.get("params")
        )

    converter.register_structure_hook(JsonRPCRequestMessage, request)
    converter.register_structure_hook(JsonRPCNotification, notification)
    return converter


_HEADER_TAIL = b"\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"


def _plain_response(message: Any) -> bytes | None:
    """Return a successful response holding plain JSON serialized, else None (pygls' path).

    An lsprotocol result (an attrs class) and anything orjson refuses (lone surrogates,
    non-string keys, huge ints) are left to pygls, as is a null result, which its converter
    writes its own way.
    """
    if not isinstance(message, JsonRPCResponseMessage) or message.result is None:
        return None
    if not isinstance(message.result, dict | list | str | int | float | bool):
        return None
    try:
        plain = {"jsonrpc": message.jsonrpc, "id": message.id, "result": message.result}
        return orjson.dumps(plain)
    except TypeError:
        return None


class PipeReader:
    """pygls' reader interface over an asyncio stream: no thread hop per header line or body.

    pygls reads stdin in its thread pool, one executor round trip per header line and per
    body (three or four per message, ~0.3 ms each on a busy machine); reading the pipe in
    the event loop itself makes a request reach its handler in one wake-up.
    """

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.stream = stream

    async def readline(self) -> bytes:
        """Return the next line with its newline (shorter at end of input, b"" at EOF)."""
        pieces: list[bytes] = []
        while True:
            try:
                pieces.append(await self.stream.readuntil(b"\n"))
            except asyncio.IncompleteReadError as exc:
                pieces.append(exc.partial)
            except asyncio.LimitOverrunError as exc:  # a huge line: take it in pieces
                pieces.append(await self.stream.readexactly(max(1, exc.consumed)))
                continue
            return b"".join(pieces)

    async def readexactly(self, n: int) -> bytes:
        """Return `n` bytes (fewer at end of input, like a blocking `read(n)`)."""
        try:
            return await self.stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


def readable_in_loop(stdin: BinaryIO, stdout: BinaryIO) -> bool:
    """Return True if stdin is a pipe or socket that is not also stdout.

    The event loop makes the descriptor non-blocking: never a terminal or file (shared with
    a shell), nor the very object written with blocking writes.
    """
    if sys.platform == "win32":
        return False
    try:
        st_in = os.fstat(stdin.fileno())
        st_out = os.fstat(stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    if not (stat.S_ISFIFO(st_in.st_mode) or stat.S_ISSOCK(st_in.st_mode)):
        return False
    return (st_in.st_dev, st_in.st_ino) != (st_out.st_dev, st_out.st_ino)


class AgentAssistProtocol(LanguageServerProtocol):
    """pygls' protocol, answering malformed JSON-RPC instead of dropping or crashing on it."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Structure a message; one that cannot be is kept raw (an invalid request)."""
        try:
            return super().structure_message(data)
        except JsonRpcException:
            return data

    def handle_message(self, message: Any) -> None:
        """Answer -32600 to anything that is not a JSON-RPC request, notification or reply."""
        raw = message if isinstance(message, dict) else None
        msg_id = raw.get("id") if raw is not None else getattr(message, "id", None)
        method = raw.get("method") if raw is not None else getattr(message, "method", "")
        valid_id = msg_id is None or (
            isinstance(msg_id, str | int) and not isinstance(msg_id, bool)
        )
        if raw is not None or not hasattr(message, "jsonrpc") or not isinstance(method, str):
            self.send_error(msg_id if valid_id else None, JsonRpcInvalidRequest())
            return
        if not valid_id:
            self.send_error(None, JsonRpcInvalidRequest())
            return
        super().handle_message(message)

    def notify_json(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification whose params are plain JSON, serialized in one step.

        pygls builds an attrs message, unstructures it with cattrs and `json.dumps` it
        (~16 µs); a chat streams one notification per delta. Anything orjson refuses
        (lone surrogates, non-string keys, huge ints) takes pygls' own path.
        """
        try:
            body = orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params})
        except TypeError:
            super().notify(method, params)
            return
        self._write_frame(b"Content-Length: %d%s%s" % (len(body), _HEADER_TAIL, body))

    def _send_data(self, data: Any) -> None:
        """Send a message (pygls' serialization), through the one guarded write.

        A response whose result is plain JSON (every agentAssist result) is serialized in
        one `orjson` step: pygls would unstructure it with cattrs, walking every value, and
        `json.dumps` it (~60 ms for a list of 10,000 sessions; this takes ~1 ms).
        """
        if not data:
            return
        body = _plain_response(data)
        if body is None:
            try:
                body = json.dumps(data, default=self._serialize_message).encode(self.CHARSET)
            except Exception as error:  # a result that cannot be serialized: answer the error
                logger.exception("cannot serialize a message")
                self._server._report_server_error(error, JsonRpcInternalError)
                return
        if not self._include_headers:
            self._write_frame(body)
            return
        self._write_frame(b"Content-Length: %d%s%s" % (len(body), _HEADER_TAIL, body))

    def _write_frame(self, frame: bytes) -> None:
        """Write one framed message; a transport that is gone is reported once, never raised.

        Raising here would fail whatever was sending (a streamed delta would fail its turn),
        and logging each failure as an error would be forwarded to the same dead transport.
        """
        server = self._server
        writer = self.writer
        if writer is None or getattr(server, "output_closed", False):
            return
        try:
            sent = writer.write(frame)
            if inspect.isawaitable(sent):  # a websocket writer
                asyncio.ensure_future(sent)
        except (OSError, ValueError) as exc:  # EPIPE, a closed file, ECONNRESET...
            lost = getattr(server, "transport_lost", None)
            if lost is None:
                raise
            lost(exc)

    def send_error(self, msg_id: Any, error: JsonRpcException) -> None:
        """Send an error response (id null when the request's id is unknown)."""
        # A plain dict: the converter would drop `"id": null`, which JSON-RPC requires.
        body = {"code": error.code, "message": error.message}
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": body})
