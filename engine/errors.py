"""What the engine raises for the user to read."""

from __future__ import annotations


class UserError(Exception):
    """Something the user can fix or should know; the message says what (an edge shows it).

    The LSP edge answers it as RequestFailed (-32803), the ACP edge as a JSON-RPC error.
    """

    @property
    def message(self) -> str:
        """Return the message."""
        return str(self)
