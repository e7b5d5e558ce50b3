"""A file's timeline: every recorded change of one workspace file, newest first, with diffs.

`file_history` answers from the local index (`index.py`, caught up first) or, for a
PostgreSQL store, from the events the database holds (`pg.py`); the diffs read the sides
from the store's blobs either way. `file_version` finds one change's side.
"""

from __future__ import annotations

import logging
import os
import posixpath
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .diff import BINARY, change_diff, side_bytes, touches
from .project import OLD_REASON, ChangeRow

if TYPE_CHECKING:
    from ..store.backend import SessionStore

logger = logging.getLogger(__name__)


class TimelinePathError(ValueError):
    """The path names nothing inside the workspace (the message says why)."""


@dataclass(frozen=True)
class Change:
    """One change of the file as the look-back contract shows it (`FileChange`)."""

    session_id: str
    session_title: str | None
    turn: int | None
    step: int | None
    ts: datetime
    kind: str
    tool: str | None
    user_message: str | None
    before_sha256: str | None
    after_sha256: str | None
    diff: str | None
    reason: str | None


@dataclass(frozen=True)
class History:
    """The answer: the workspace-relative path, its changes newest first, whether cut."""

    path: str
    changes: list[Change]
    truncated: bool


@dataclass(frozen=True)
class Version:
    """One side of one change: its digest and text (None with `reason` when not kept)."""

    path: str
    sha256: str | None
    text: str | None
    reason: str | None


def workspace_path(root: Path, path: str) -> str:
    """Return `path` workspace-relative (POSIX); an absolute one must be inside `root`."""
    text = path.strip()
    if not text or "\x00" in text:
        raise TimelinePathError("the path is empty or holds a NUL character")
    if os.path.isabs(text):
        base = os.path.normpath(str(root))
        full = os.path.normpath(text)
        if full != base and not full.startswith(base.rstrip(os.sep) + os.sep):
            raise TimelinePathError(f"{path!r} is outside the workspace ({root})")
        text = os.path.relpath(full, base)
    text = text.replace("\\", "/")
    if any(part == ".." for part in text.split("/")):
        raise TimelinePathError(f"{path!r} leaves the workspace ('..')")
    clean = posixpath.normpath(text)
    if clean in (".", "") or clean.startswith("/"):
        raise TimelinePathError(f"{path!r} is not a file of the workspace")
    return clean


def file_history(
    store: SessionStore,
    root: Path,
    path: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    line: str | None = None,
    limit: int = 200,
) -> History:
    """Return the changes of `path` across the project's sessions, newest first."""
    relative = workspace_path(root, path)
    picked: list[tuple[ChangeRow, str | None, str | None]] = []
    truncated = False
    blobs: dict[str, bytes | None] = {}  # one change's after is often the next one's before

    def read_blob(digest: str) -> bytes | None:
        if digest not in blobs:
            blobs[digest] = store.read_blob(digest)
        return blobs[digest]

    with store.file_changes(relative, since, until) as (rows, titles):
        if isinstance(rows, list):  # all at hand: their blobs in as few reads as the store can
            shown = rows if line is not None else rows[:limit]
            sides = {d for r in shown for d in (r.before, r.after) if d is not None}
            blobs.update(store.read_blobs(sides))
        for row in rows:
            if len(picked) == limit and line is None:
                truncated = True
                break
            diff, reason = change_diff(read_blob, row)
            if line is not None and (diff is None or not touches(diff, line)):
                continue
            if len(picked) == limit:
                truncated = True
                break
            picked.append((row, diff, reason))
        names = titles({row.session_id for row, _, _ in picked})
    changes = [
        Change(
            session_id=row.session_id,
            session_title=names.get(row.session_id),
            turn=row.turn,
            step=row.step,
            ts=row.ts,
            kind=row.kind,
            tool=row.tool,
            user_message=row.user_message,
            before_sha256=row.before,
            after_sha256=row.after,
            diff=diff,
            reason=reason,
        )
        for row, diff, reason in picked
    ]
    return History(path=relative, changes=changes, truncated=truncated)


class ChangeNotFoundError(LookupError):
    """No recorded change of the file matches the session, turn/step or time given."""


def file_version(
    store: SessionStore,
    root: Path,
    path: str,
    session_id: str,
    *,
    turn: int | None = None,
    step: int | None = None,
    ts: datetime | None = None,
    side: Literal["before", "after"] = "before",
) -> Version:
    """Return the content of `path` before or after one change (a step's first and last)."""
    relative = workspace_path(root, path)
    with store.file_changes(relative, None, None) as (rows, _):
        mine = [
            r
            for r in rows
            if r.session_id == session_id
            and (turn is None or r.turn == turn)
            and (step is None or r.step == step)
            and (ts is None or r.ts == ts)
        ]
    if not mine:
        raise ChangeNotFoundError(
            f"no recorded change of {relative} in session {session_id}"
            + (f" turn {turn}" if turn is not None else "")
            + (f" step {step}" if step is not None else "")
            + (f" at {ts.isoformat()}" if ts is not None else "")
        )
    row = mine[-1] if side == "before" else mine[0]  # newest first: the step's first, last
    digest = row.before if side == "before" else row.after
    if digest is None:
        if row.withheld == OLD_REASON:
            return Version(relative, None, None, OLD_REASON)
        return Version(relative, None, None, None)
    data = side_bytes(store.read_blob, digest)
    if data is None:
        return Version(relative, digest, None, row.withheld or "the content was not kept")
    if b"\x00" in data:
        return Version(relative, digest, None, BINARY)
    try:
        return Version(relative, digest, data.decode("utf-8"), None)
    except UnicodeDecodeError:
        return Version(relative, digest, None, BINARY)
