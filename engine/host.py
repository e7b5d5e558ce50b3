"""What the engine asks of the edge it runs behind."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from .model.tools import EditorHost


class Reporter(Protocol):
    """Progress of one piece of long work (a no-op where the client cannot show it)."""

    def report(self, message: str, percentage: int | None = None) -> None:
        """Report a step."""
        ...


class Host(Protocol):
    """An edge, as the engine sees it: how it tells the user, runs work, applies edits."""

    @property
    def edits(self) -> EditorHost:
        """Return the editor side of the tools (edits, questions, open documents)."""
        ...

    def show(self, message: str) -> None:
        """Tell the user something they should know (a warning)."""
        ...

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        """Run tracked background work whose failure is logged, never lost."""
        ...

    def long_work(self, title: str) -> AbstractAsyncContextManager[Reporter]:
        """Show progress for the duration of the block."""
        ...
