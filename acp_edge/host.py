"""The engine's `Host` for one ACP session: edits asked as permission requests, tracked tasks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

from acp.helpers import update_agent_message_text

from .client import ClientFiles, ClientLink

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


class AcpEdits:
    """The tools' `EditorHost` over ACP: each edit asked, written by the client if it can.

    Each edit is asked with its diff unless the user allowed every edit of the session; it
    is written through the client when it can write files, else by the tool itself. A
    protected path is asked about by `confirm`, always.
    """

    def __init__(self, host: AcpHost, files: ClientFiles) -> None:
        self.host = host
        self.files = files
        self.always = False  # the user allowed every edit of this session
        self._confirmed: set[str] = set()  # protected paths just allowed by `confirm`

    async def apply_file_edit(self, relative: str, content: str) -> Any:
        """Ask (unless allowed already), then write through the client if it can."""
        from engine.model.tools import EditOutcome

        host = self.host
        target = host.root / relative
        if relative in self._confirmed:
            self._confirmed.discard(relative)  # asked once already, with the reason
        elif not self.always:
            diff = (str(target), content, _text_of(target))
            call_id = f"edit-{secrets.token_hex(4)}"
            answer = await host.link.ask(
                host.session_id, call_id, f"write {relative}", diff, always=True
            )
            if answer == "no":
                return EditOutcome(applied=False, refused="the user rejected the edit")
            self.always = answer == "always"
        if not self.files.write:
            return EditOutcome(applied=False)  # the tool writes it
        try:
            await host.link.write_file(host.session_id, str(target), content)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # nothing written behind the client's back
            return EditOutcome(applied=False, refused=f"the editor could not write it: {exc}")
        return EditOutcome(applied=True)

    async def confirm(self, relative: str, reason: str) -> bool:
        """Ask about a protected path (allow once / reject), whatever was allowed before."""
        call_id = f"confirm-{secrets.token_hex(4)}"
        title = f"write {relative}: {reason}"
        allowed = await self.host.link.ask(self.host.session_id, call_id, title) != "no"
        if allowed:
            self._confirmed.add(relative)
        return allowed

    async def confirm_tool(self, server: str, tool: str, args: dict[str, Any]) -> bool:
        """Ask before an MCP server's tool runs (the servers the client marked to confirm)."""
        call_id = f"mcp-{secrets.token_hex(4)}"
        title = f"{server}: {tool} {json.dumps(args, ensure_ascii=False)[:200]}"
        answer = await self.host.link.ask(self.host.session_id, call_id, title, kind="execute")
        return answer != "no"

    def protected_globs(self) -> tuple[str, ...]:
        """Return the user's protected-path globs."""
        return self.host.protected

    def document_text(self, relative: str) -> str | None:
        """Return None: the disk holds what the user sees (`fs/read_text_file` is async)."""
        return None


def _text_of(target: Path) -> str | None:
    """Return a file's text as it is now (None: no such file, or not text)."""
    try:
        return target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


class AcpHost:
    """One ACP session's host, as the engine sees it."""

    def __init__(
        self,
        link: ClientLink,
        tasks: Tasks,
        root: Path,
        protected: tuple[str, ...],
        files: ClientFiles,
    ) -> None:
        self.link = link
        self.tasks = tasks
        self.root = root
        self.session_id = ""  # set once the session is known
        self.protected = protected
        self._edits = AcpEdits(self, files)

    @property
    def edits(self) -> AcpEdits:
        """Return the tools' editor side."""
        return self._edits

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
