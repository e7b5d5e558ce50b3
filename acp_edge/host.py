"""The engine's `Host` for one ACP session: edits asked as permission requests, tracked tasks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any, Protocol

from acp.helpers import update_agent_message_text

from .client import ClientFiles, ClientLink

logger = logging.getLogger(__name__)


class Announcer(Protocol):
    """The running turn's sink, as a question waits for it (`turns.AcpSink`)."""

    async def sent(self) -> None:
        """Return once every update queued so far has been sent."""
        ...


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
    protected path is asked about by `confirm`, always. A question names the tool call the
    client was shown (its id), once that call has been sent. Files are read through the
    client when it can read them (its buffers: unsaved text too), else from disk.
    """

    def __init__(self, host: AcpHost, files: ClientFiles) -> None:
        self.host = host
        self.files = files
        self.always = False  # the user allowed every edit of this session
        self._confirmed: set[str] = set()  # protected paths just allowed by `confirm`

    async def apply_file_edit(self, relative: str, content: str, call_id: str | None = None) -> Any:
        """Ask (unless allowed already), then write through the client if it can."""
        from engine.model.tools import EditOutcome

        host = self.host
        target = host.root / relative
        if relative in self._confirmed:
            self._confirmed.discard(relative)  # asked once already, with the reason
        elif not self.always:
            diff = (str(target), content, _text_of(target))
            call = await host.call_named(call_id, "edit")
            answer = await host.link.ask(
                host.session_id, call, f"write {relative}", diff, always=True
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

    async def confirm(self, relative: str, reason: str, call_id: str | None = None) -> bool:
        """Ask about a protected path (allow once / reject), whatever was allowed before."""
        call = await self.host.call_named(call_id, "confirm")
        title = f"write {relative}: {reason}"
        allowed = await self.host.link.ask(self.host.session_id, call, title) != "no"
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

    async def read_document(self, relative: str) -> str | None:
        """Return the client's text of `relative` (`fs/read_text_file`); None: read disk.

        None when the client cannot read files, or its read failed (logged): the tool
        reads the disk then, and the turn goes on.
        """
        if not self.files.read or not self.host.session_id:
            return None
        path = str(self.host.root / relative)
        try:
            return await self.host.link.read_file(self.host.session_id, path)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the client could not say: disk holds the saved text
            logger.warning("fs/read_text_file of %s failed (%s); reading the disk", path, exc)
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
        self.sink: Announcer | None = None  # the running turn's sink (its tool calls)

    @property
    def edits(self) -> AcpEdits:
        """Return the tools' editor side."""
        return self._edits

    async def call_named(self, call_id: str | None, kind: str) -> str:
        """Return the id a question names: the live tool call's, once the client has it.

        Outside a tool call (None) an id of our own, made for the question.
        """
        if call_id is None:
            return f"{kind}-{secrets.token_hex(4)}"
        if self.sink is not None:
            await self.sink.sent()
        return call_id

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
