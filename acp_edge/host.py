"""The engine's `Host` for one ACP session: edits on disk, questions as permission requests."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from acp.helpers import update_agent_message_text

from .client import ClientLink

logger = logging.getLogger(__name__)


class Quiet:
    """Progress nobody is shown (ACP has no progress notification)."""

    def report(self, message: str, percentage: int | None = None) -> None:
        """Log the step at debug level."""
        logger.debug("progress: %s (%s%%)", message, percentage)


class Tasks:
    """Background work of the process: tracked, its failures logged, cancelled at the end."""

    def __init__(self) -> None:
        self.running: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        """Run `coro` as a tracked task."""

        async def run() -> Any:
            return await coro

        task = asyncio.ensure_future(run())
        task.set_name(name)
        self.running.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.running.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            logger.error("%s failed: %s", task.get_name(), exc, exc_info=exc)

    async def cancel_all(self, timeout: float) -> None:
        """Cancel what still runs and wait for it (at most `timeout` seconds)."""
        pending = list(self.running)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=timeout)


class DiskEdits:
    """The tools' `EditorHost`: files written by the tools themselves, edits asked about."""

    def __init__(self, link: ClientLink, session_id: str, protected: tuple[str, ...]) -> None:
        self.link = link
        self.session_id = session_id
        self.protected = protected

    async def apply_file_edit(self, relative: str, content: str) -> Any:
        """Say that this editor takes no edits: the tool writes the file itself."""
        from engine.model.tools import EditOutcome

        return EditOutcome(applied=False)

    async def confirm(self, relative: str, reason: str) -> bool:
        """Ask through `session/request_permission` (allow once / reject)."""
        call_id = f"confirm-{secrets.token_hex(4)}"
        return await self.link.allowed(self.session_id, call_id, f"write {relative}: {reason}")

    def protected_globs(self) -> tuple[str, ...]:
        """Return the user's protected-path globs."""
        return self.protected

    def document_text(self, relative: str) -> str | None:
        """Return None: the disk holds what the user sees (no open documents over ACP yet)."""
        return None


class AcpHost:
    """One ACP session's host, as the engine sees it."""

    def __init__(self, link: ClientLink, tasks: Tasks, protected: tuple[str, ...]) -> None:
        self.link = link
        self.tasks = tasks
        self.session_id = ""  # set once the session is known
        self.protected = protected

    @property
    def edits(self) -> DiskEdits:
        """Return the tools' editor side."""
        return DiskEdits(self.link, self.session_id, self.protected)

    def show(self, message: str) -> None:
        """Log a warning and tell the user, as an agent message of the session."""
        logger.warning("%s", message)
        if self.session_id:
            update = update_agent_message_text(f"\n\n_{message}_\n\n")
            self.spawn(self.link.update(self.session_id, update), "warning to the client")

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        """Run tracked background work."""
        return self.tasks.spawn(coro, name)

    @contextlib.asynccontextmanager
    async def long_work(self, title: str) -> AsyncIterator[Quiet]:
        """Progress is not shown over ACP: a no-op reporter."""
        yield Quiet()
