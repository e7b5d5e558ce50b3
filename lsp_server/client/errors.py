"""What can go wrong talking to the server: an error answer, or a server that is gone."""

from __future__ import annotations

from typing import Any

from .. import protocol as proto


class LspError(Exception):
    """The server answered a request with an error (or we answer one of its requests so)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @property
    def cancelled(self) -> bool:
        """Return True for RequestCancelled (-32800)."""
        return self.code == proto.REQUEST_CANCELLED

    @property
    def not_served(self) -> bool:
        """Return True for MethodNotFound (-32601): this server does not have the method."""
        return self.code == proto.METHOD_NOT_FOUND


class ServerExitedError(Exception):
    """The server process is gone; the message ends with its last stderr lines."""
