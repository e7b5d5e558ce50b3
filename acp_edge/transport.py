"""Newline-delimited JSON-RPC on stdio, under the SDK's `Connection`.

The SDK's own transport logs a line that is not JSON and drops it, and a message that is
JSON but not a JSON-RPC object stops its receive loop. Here both are answered with the
JSON-RPC error the spec names (parse error, invalid request) and the agent reads on.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson

logger = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def envelope_problem(message: object) -> str | None:
    """Return why `message` is not a JSON-RPC 2.0 request, notification or response."""
    if not isinstance(message, dict):
        return "a JSON-RPC message must be an object"
    request_id = message.get("id")
    if request_id is not None and (
        isinstance(request_id, bool) or not isinstance(request_id, int | str)
    ):
        return "id must be a string, a number or null"
    method = message.get("method")
    if "method" in message and not isinstance(method, str):
        return "method must be a string"
    if "method" not in message and "id" not in message:
        return "a message needs a method (a request or a notification) or an id (a response)"
    params = message.get("params")
    if params is not None and not isinstance(params, dict | list):
        return "params must be an object or an array"
    return None


def _answerable_id(message: object) -> int | str | None:
    if isinstance(message, dict):
        found = message.get("id")
        if isinstance(found, int | str) and not isinstance(found, bool):
            return found
    return None


class LineTransport:
    """One JSON-RPC message per line each way (`acp`'s Transport protocol)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()
        self._held: list[dict[str, Any]] = []

    def push_back(self, message: dict[str, Any]) -> None:
        """Make `message` the next one `receive` returns (read before the connection began)."""
        self._held.append(message)

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message (whole: writes never interleave)."""
        data = orjson.dumps(message) + b"\n"
        async with self._lock:
            self._writer.write(data)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """Return the next well-formed message, answering the others; None at the end."""
        if self._held:
            return self._held.pop(0)
        while True:
            line = await self._read_line()
            if line is None:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                await self._refuse(None, PARSE_ERROR, f"Parse error: {exc}")
                continue
            problem = envelope_problem(message)
            if problem is not None:
                await self._refuse(
                    _answerable_id(message), INVALID_REQUEST, f"Invalid Request: {problem}"
                )
                continue
            result: dict[str, Any] = message
            return result

    async def close(self) -> None:
        """Close the writing end."""
        try:
            self._writer.close()
        except (OSError, RuntimeError):  # stdout already gone
            pass

    async def _read_line(self) -> bytes | None:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None
        except asyncio.LimitOverrunError:
            await self._skip_line()
            await self._refuse(None, INVALID_REQUEST, "Invalid Request: the message is too large")
            return b""
        return line

    async def _skip_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return

    async def _refuse(self, request_id: int | str | None, code: int, message: str) -> None:
        logger.warning("refused a malformed message: %s", message)
        error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
        try:
            await self.send(error)
        except (OSError, RuntimeError):  # the client is gone: the read loop ends next
            pass
