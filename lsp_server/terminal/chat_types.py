"""What the chat's parts use of it: small Protocols `ChatApp` meets, so no part imports the app."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import Console

    from .input import LineReader


class Printer(Protocol):
    """Where a part prints: the console, plain lines and warnings."""

    console: Console

    def say(self, text: str, style: str | None = None) -> None:
        """Print plain text."""
        ...

    def warn(self, text: str) -> None:
        """Print a warning line."""
        ...


class Asker(Printer, Protocol):
    """A part that asks the user: the reply's open block printed first, then a prompt."""

    reader: LineReader

    def flush_reply(self) -> None:
        """Print the reply's unfinished block now."""
        ...

    async def read(self, prompt: str) -> str:
        """Read an answer to `prompt`."""
        ...


class Review(Protocol):
    """What a command uses of the edit review (`EditReview`)."""

    def asked_by_user(self) -> AbstractContextManager[None]:
        """Write the edits unasked while a command the user typed runs."""
        ...


class Chat(Printer, Protocol):
    """What a command uses of the chat: its console, where it runs, the server."""

    workspace: Path
    instance_id: str

    @property
    def review(self) -> Review:
        """Return the review of the model's edits."""
        ...

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request to the server and return its result."""
        ...
