"""The session listing (from snapshots, the log only without one) and a log's last event time.

A listing whose rows are current imports no model, and one that rebuilds a row from a
snapshot our writer made reads its listed fields without one (`listed_fields`): `agent-assist
sessions list` starts fast.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..paths import is_valid_session_id
from ..snapshot_meta import SCHEMA_VERSION, TITLE_CHARS
from ..store.rows import SessionInfo

LAST_EVENT_WINDOW = 256 * 1024  # bytes read from the end of a log for its last event


@dataclass
class SnapshotFields:
    """The listed fields of a snapshot, read without the models (see `listed_fields`)."""

    title: str | None
    summary: str | None
    created_at: datetime
    updated_at: datetime
    turns: int
    parent_session_id: str | None
    phase: str | None


if TYPE_CHECKING:
    from ..snapshot import SessionState

    # What a listing row is made of: a snapshot, whole or only the fields a listing shows.
    ListedState = SessionState | SnapshotFields


def listed_fields(raw: object, session_id: str) -> SnapshotFields | None:
    """Return the fields a listing shows of a raw snapshot, if they are as our writer makes them.

    None: anything else (another version, another session's, a field missing or of another
    type), for the full reader (`snapshots.read_snapshot_file`) to take, with its warnings:
    importing the models costs a command ~100-200 ms. The listing reads only these fields;
    damage elsewhere in a snapshot is met when the session is opened.
    """
    if not isinstance(raw, dict) or raw.get("session_id") != session_id:
        return None
    version = raw.get("schema_version", 1)
    if type(version) is not int or not 1 <= version <= SCHEMA_VERSION:
        return None
    created, updated = _moment(raw.get("created_at")), _moment(raw.get("updated_at"))
    turns = raw.get("turns", 0)
    title, summary, parent, phase = (
        raw.get(key) for key in ("title", "summary", "parent_session_id", "phase")
    )
    texts = (title, summary, parent, phase)
    if created is None or updated is None or type(turns) is not int:
        return None
    if any(text is not None and type(text) is not str for text in texts):
        return None
    if parent is not None and not is_valid_session_id(parent):
        return None
    if title is None and not summary:  # a seed's file with only its recent messages
        title = first_prompt_line(raw.get("recent_messages"))
    return SnapshotFields(title, summary, created, updated, turns, parent, phase)


def first_prompt_line(messages: object) -> str | None:
    """Return the first line of the first user prompt in stored messages, if any.

    The title of a session file that has neither a title nor a summary (the seed's tool
    writes no title): without one it would be listed as a session without content.
    """
    for message in messages if isinstance(messages, list) else []:
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and part.get("part_kind") == "user-prompt":
                content = part.get("content")
                line = (
                    content.strip().split("\n")[0][:TITLE_CHARS] if isinstance(content, str) else ""
                )
                if line:
                    return line
    return None


def _moment(value: object) -> datetime | None:
    """Return an ISO date and time as our snapshots hold them (naive: UTC); None otherwise."""
    if type(value) is not str or len(value) < 19 or value[10] != "T":
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def session_info(session_id: str, state: ListedState | None, log_path: Path) -> SessionInfo | None:
    """Return the listing row of a session from its snapshot (or, without one, its log)."""
    if state is None:
        from ..log.reader import scan_log  # the events' models: only for a session without one
        from ..snapshot import state_from_events

        scan = scan_log(log_path)
        if not scan.events:
            return None
        state = state_from_events(session_id, scan.events)
    updated_at = state.updated_at
    if updated_at.tzinfo is None:
        updated_at = updated_at.replace(tzinfo=UTC)
    log_updated = _log_mtime(log_path)
    if log_updated is not None and log_updated > updated_at:
        updated_at = log_updated
    summary_line = (state.summary or "").strip().split("\n")[0][:TITLE_CHARS]
    title = (
        state.title
        or summary_line
        or first_prompt_line(getattr(state, "recent_messages", None))
        or None
    )
    return SessionInfo(
        session_id,
        title,
        state.created_at,
        updated_at,
        state.turns,
        state.parent_session_id,
        state.phase,
    )


def _tail_records(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the events at the end of a log (its last `LAST_EVENT_WINDOW` bytes), newest first."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            return
        start = max(0, st.st_size - LAST_EVENT_WINDOW)
        fh.seek(start)
        lines = fh.read(LAST_EVENT_WINDOW).split(b"\n")
    for line in reversed(lines[1:] if start else lines):  # the first may be cut
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict):
            yield record


def last_event_time(path: Path) -> datetime | None:
    """Return the time of the log's last recorded event (recovery markers aside).

    Reads only the end of the log: the snapshot's time is stale after a crash.
    """
    for record in _tail_records(path):
        try:
            data = record.get("data") or {}
            if record.get("type") == "session/recover" or data.get("synthesized"):
                continue
            moment = datetime.fromisoformat(str(record["ts"]))
        except (ValueError, TypeError, KeyError, AttributeError):
            continue
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return None


def last_turn_end(path: Path) -> str | None:
    """Return how the log's last turn ended when not `completed`, else None.

    `interrupted` for a turn still open (its process died; the next open closes it so).
    Only the end of the log is read: a turn further back counts as ended.
    """
    for record in _tail_records(path):
        kind = record.get("type")
        if kind == "turn/start":
            return "interrupted"
        if kind == "turn/end":
            data = record.get("data")
            reason = data.get("reason") if isinstance(data, dict) else None
            return reason if isinstance(reason, str) and reason != "completed" else None
    return None


def _log_mtime(path: Path) -> datetime | None:
    try:
        st = path.stat()
    except OSError:
        return None
    # From the nanoseconds, not the float: the listing projection stores the same microsecond.
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=st.st_mtime_ns // 1000)
