"""The session listing (from snapshots, the log only without one) and a log's last event time.

A listing whose rows are current imports no model: `agent-assist sessions list` starts fast.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from ..snapshot import SessionState

LAST_EVENT_WINDOW = 256 * 1024  # bytes read from the end of a log for its last event


@dataclass
class SessionInfo:
    """One row of a session listing."""

    session_id: str
    title: str | None
    created_at: datetime
    updated_at: datetime
    turns: int
    parent_session_id: str | None = None
    phase: str | None = None


def session_info(session_id: str, state: SessionState | None, log_path: Path) -> SessionInfo | None:
    """Return the listing row of a session from its snapshot (or, without one, its log)."""
    from ..log.reader import scan_log  # the events' models: only when a row is rebuilt
    from ..snapshot import TITLE_CHARS, state_from_events

    if state is None:
        scan = scan_log(log_path)
        if not scan.events:
            return None
        state = state_from_events(session_id, scan.events)
    else:
        updated = _log_mtime(log_path)
        if updated is not None and updated > state.updated_at:
            state.updated_at = updated
    summary_line = (state.summary or "").strip().split("\n")[0][:TITLE_CHARS]
    title = state.title or summary_line or None
    return SessionInfo(
        session_id,
        title,
        state.created_at,
        state.updated_at,
        state.turns,
        state.parent_session_id,
        state.phase,
    )


def last_event_time(path: Path) -> datetime | None:
    """Return the time of the log's last recorded event (recovery markers aside).

    Reads only the end of the log: the snapshot's time is stale after a crash.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None
        start = max(0, st.st_size - LAST_EVENT_WINDOW)
        fh.seek(start)
        lines = fh.read(LAST_EVENT_WINDOW).split(b"\n")
    for line in reversed(lines[1:] if start else lines):  # the first may be cut
        try:
            record = orjson.loads(line)
            data = record.get("data") or {}
            if record.get("type") == "session/recover" or data.get("synthesized"):
                continue
            moment = datetime.fromisoformat(str(record["ts"]))
        except (ValueError, TypeError, KeyError, AttributeError, orjson.JSONDecodeError):
            continue
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return None


def _log_mtime(path: Path) -> datetime | None:
    try:
        st = path.stat()
    except OSError:
        return None
    # From the nanoseconds, not the float: the listing projection stores the same microsecond.
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=st.st_mtime_ns // 1000)
