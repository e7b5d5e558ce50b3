"""The projection: a log's events → the changes of files they record, one row per file.

Shared by the local index (`index.py`, fed a log's tail at a time) and PostgreSQL
(`pg.py`, fed the events the database holds): the same events give the same rows.

- `tool/result` with `files`: one row per file, kind `delete` when `after` is null, `edit`
  for a tool whose name says so, else `write` (a `write_file` creating the file included).
- `tool/result` of a `write_file` without a `files` key (a log written before contents were
  kept): one `write` row for the call's `path` argument, digests null. An empty `files`
  (written since) is a write that changed nothing: no row.
- `workspace/drift` `changes`: kind `drift`; `session/rewind` `files`: kind `restore`.
- A fork's copy of its parent's events (seqs `1..fork_boundary`) gives nothing: those
  changes are the parent's, listed once under it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..events import Event
from ..snapshot_meta import TITLE_CHARS

WRITE_TOOLS = frozenset({"write_file"})
OLD_REASON = "recorded before contents were kept"
TYPES = frozenset(
    {"session/start", "turn/start", "tool/call", "tool/result", "workspace/drift", "session/rewind"}
)


@dataclass(frozen=True)
class ChangeRow:
    """One recorded change of one file."""

    path: str
    session_id: str
    seq: int
    turn: int | None
    step: int | None
    ts: datetime
    kind: str
    tool: str | None
    before: str | None
    after: str | None
    withheld: str | None
    user_message: str | None


# A store's changes of one file, newest first (read as iterated), and the titles of the
# sessions named, looked up once at the end.
ChangeRows = tuple[Iterable[ChangeRow], Callable[[set[str]], dict[str, str | None]]]


@dataclass
class Cursor:
    """What a session's projection carries from one tail to the next."""

    title: str | None = None
    turn: int | None = None
    user_message: str | None = None
    fork_boundary: int = 0
    pending: dict[str, str] = field(default_factory=dict)  # write_file call id → its path


def clean_path(path: object) -> str | None:
    """Return a recorded path as the index keys it (workspace-relative POSIX), or None."""
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        return None
    text = posixpath.normpath(path.strip().replace("\\", "/"))
    if text.startswith("/") or text == "." or text == ".." or text.startswith("../"):
        return None
    return text


def _kind(tool: str, after: str | None) -> str:
    if after is None:
        return "delete"
    return "edit" if "edit" in tool.lower() else "write"


def project(session_id: str, events: list[Event], cursor: Cursor) -> list[ChangeRow]:
    """Return the change rows of `events` (a log's next events, in order); update `cursor`."""
    rows: list[ChangeRow] = []

    def add(path: Any, kind: str, tool: str | None, change: Any, event: Event) -> None:
        where = clean_path(path)
        if where is None:
            return
        turn = event.turn if event.turn is not None else None
        rows.append(
            ChangeRow(
                path=where,
                session_id=session_id,
                seq=event.seq,
                turn=turn,
                step=event.step if turn is not None else None,
                ts=event.ts,
                kind=kind,
                tool=tool,
                before=getattr(change, "before", None),
                after=getattr(change, "after", None),
                withheld=getattr(change, "withheld", None) if change is not None else OLD_REASON,
                user_message=cursor.user_message if turn is not None else None,
            )
        )

    for event in events:
        data: Any = event.data
        kind = event.type
        if kind == "session/start":
            cursor.fork_boundary = int(getattr(data, "fork_boundary", None) or 0)
            continue
        if 0 < event.seq <= cursor.fork_boundary:
            if kind == "turn/start":  # the copied turns still name the messages
                cursor.turn, cursor.user_message = event.turn, data.input
                if cursor.title is None and data.input.strip():
                    cursor.title = " ".join(data.input.split())[:TITLE_CHARS]
            continue
        if kind == "turn/start":
            cursor.turn, cursor.user_message = event.turn, data.input
            cursor.pending.clear()
            if cursor.title is None and data.input.strip():
                cursor.title = " ".join(data.input.split())[:TITLE_CHARS]
        elif kind == "tool/call":
            args = data.args if isinstance(data.args, dict) else {}
            if data.name in WRITE_TOOLS and isinstance(args.get("path"), str):
                cursor.pending[data.tool_call_id] = args["path"]
        elif kind == "tool/result":
            old_path = cursor.pending.pop(data.tool_call_id, None)
            if data.files:
                for change in data.files:
                    add(change.path, _kind(data.name, change.after), data.name, change, event)
            elif (
                old_path is not None and not data.is_error and "files" not in data.model_fields_set
            ):
                add(old_path, "write", data.name, None, event)
        elif kind == "workspace/drift":
            for change in data.changes:
                add(change.path, "drift", None, change, event)
        elif kind == "session/rewind":
            for change in data.files:
                add(change.path, "restore", None, change, event)
    return rows
