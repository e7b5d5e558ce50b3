"""agentAssist/fileHistory, fileVersion, restoreFile: a file's timeline (#42).

Answered from `session.timeline` (the local index caught up first, in a worker thread; or
the PostgreSQL store's events). `restoreFile` writes a recorded side back through the
editor (`WorkspaceEdits.apply_file_edit`, the assistant's own path: undoable there), or on
disk when the client cannot take edits; it never writes outside the workspace, through a
symlink or into git's files, asks as for the assistant's writes about a protected path, and
deletes only with `allowDelete`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from typing import Any, TypeVar

from session.errors import SessionError
from session.search.when import parse_when
from session.storage import StorageError
from session.timeline import (
    ChangeNotFoundError,
    TimelinePathError,
    Version,
    file_history,
    file_version,
)
from session.timeline.index import TimelineError
from session.workspace.files import unlink_if_hard_linked
from session.workspace.protected import fold, in_git_directory, protection
from session.workspace.safe_paths import is_safe_relative_path

from .. import protocol as proto
from ..protocol import lookback as lb
from ..server import RequestFailedError
from .base import Feature, request

T = TypeVar("T")


def _when(method: str, field: str, text: str | None, *, end: bool = False) -> datetime | None:
    if text is None:
        return None
    try:
        return parse_when(text, end=end)
    except ValueError as exc:
        raise proto.ParamsError(f"{method}: invalid field '{field}': {exc}") from None


def git_reason(root: Any, relative: str) -> str | None:
    """Return why `relative` is git's (never restored), or None."""
    if ".git" in fold(relative).split("/"):
        return "it is inside .git (git runs commands named in its config and hooks)"
    return in_git_directory(root, relative)


class FileHistory(Feature):
    """See the module."""

    name = "file_history"

    def _store(self) -> Any:
        return self.server.lifecycle.store

    async def _run(self, method: str, work: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(work)
        except TimelinePathError as exc:
            raise proto.ParamsError(f"{method}: invalid field 'path': {exc}") from None
        except ChangeNotFoundError as exc:
            raise RequestFailedError(str(exc)) from None
        except (TimelineError, SessionError, StorageError, OSError) as exc:
            raise RequestFailedError(f"the file history is unavailable: {exc}") from None

    @request(lb.FILE_HISTORY)
    async def file_history(self, params: lb.FileHistoryParams) -> lb.FileHistoryResult:
        """Return every recorded change of the file, newest first."""
        method = lb.FILE_HISTORY
        since = _when(method, "since", params.since)
        until = _when(method, "until", params.until, end=True)
        store, root = self._store(), self.server.root
        found = await self._run(
            method,
            lambda: file_history(
                store,
                root,
                params.path,
                since=since,
                until=until,
                line=params.line,
                limit=params.limit,
            ),
        )
        return lb.FileHistoryResult(
            path=found.path,
            changes=[lb.FileChange(**asdict(c)) for c in found.changes],
            truncated=found.truncated,
        )

    async def _version(self, method: str, params: lb.FileVersionParams) -> Version:
        store, root = self._store(), self.server.root
        return await self._run(
            method,
            lambda: file_version(
                store,
                root,
                params.path,
                params.session_id,
                turn=params.turn,
                step=params.step,
                ts=params.ts,
                side=params.side,
            ),
        )

    @request(lb.FILE_VERSION)
    async def file_version(self, params: lb.FileVersionParams) -> lb.FileVersionResult:
        """Return the file's content before or after one change."""
        version = await self._version(lb.FILE_VERSION, params)
        return lb.FileVersionResult(**asdict(version))

    @request(lb.RESTORE_FILE)
    async def restore_file(self, params: lb.RestoreFileParams) -> lb.RestoreFileResult:
        """Write one recorded side of the file back, as an edit of the editor."""
        version = await self._version(lb.RESTORE_FILE, params)
        relative, root, ls = version.path, self.server.root, self.server
        if not is_safe_relative_path(root, relative):
            raise RequestFailedError(f"{relative} is outside the workspace: not restored")
        if why := git_reason(root, relative):
            raise RequestFailedError(f"{relative} is not restored: {why}")
        if version.sha256 is not None and version.text is None:
            raise RequestFailedError(
                f"{relative}: that version's content was not kept ({version.reason}); "
                "nothing was written"
            )
        if version.sha256 is None and version.reason is not None:
            raise RequestFailedError(f"{relative}: {version.reason}; nothing was written")
        why = protection(relative, ls.edits.protected_globs())
        if why is not None and not await ls.edits.confirm(relative, why):
            raise RequestFailedError(
                f"{relative} is a protected path ({why}) and the user did not allow the write"
            )
        target = root / relative
        if version.sha256 is None:  # the file did not exist on that side
            if not params.allow_delete:
                raise RequestFailedError(
                    f"{relative} did not exist in that version: restoring it deletes the file, "
                    "which needs allowDelete"
                )
            if not os.path.lexists(target):
                return lb.RestoreFileResult(path=relative, restored=True)
            try:
                os.unlink(target)  # (a symlink itself, never what it points to)
            except OSError as exc:
                raise RequestFailedError(f"cannot delete {relative}: {exc.strerror}") from None
            return lb.RestoreFileResult(path=relative, restored=True)
        text = version.text or ""
        outcome = await ls.edits.apply_file_edit(relative, text)
        if outcome.applied:
            return lb.RestoreFileResult(path=relative, restored=True)
        if outcome.refused is not None:
            return lb.RestoreFileResult(path=relative, restored=False, reason=outcome.refused)
        await asyncio.to_thread(self._write, relative, text)
        return lb.RestoreFileResult(path=relative, restored=True)

    def _write(self, relative: str, text: str) -> None:
        """Write on disk (the client cannot take edits), as the write_file tool does."""
        root = self.server.root
        target = root / relative
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not is_safe_relative_path(root, relative):  # parent dirs may have changed
                raise RequestFailedError(f"{relative} is outside the workspace: not restored")
            unlink_if_hard_linked(target)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(target, flags, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(text.encode("utf-8"))
        except OSError as exc:
            raise RequestFailedError(f"cannot write {relative}: {exc.strerror}") from None
