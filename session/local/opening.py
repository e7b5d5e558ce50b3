"""Opening a local session: its snapshot and the log after it, or a rebuild from the log.

A snapshot that matches the log (the line at its `log_offset` is event `last_seq`) is read
with only the log after it (`restore.py`, as PostgreSQL's). A missing, damaged or
mismatched snapshot is rebuilt from the log, keeping what only it knows; a log that is
missing leaves the snapshot to continue from; a turn left open by a process that died is
closed as interrupted.
"""

from __future__ import annotations

from pathlib import Path

from ..derive.history import HistoryBuilder
from ..errors import SessionNotFoundError
from ..log.reader import LogScan, scan_log
from ..log.writer import EventLog
from ..redaction import Redactor
from ..snapshot import SessionState
from ..store.restore import continue_snapshot, rebuild, without_content
from ..store.session import Lock, Session, settle_opened
from .snapshots import snapshot_matches_log


def open_from_files(
    session_id: str,
    log_path: Path,
    snapshot: tuple[SessionState | None, str | None],
    warnings: list[str],
    *,
    lock: Lock | None,
    redactor: Redactor | None,
    read_only: bool,
) -> Session:
    """Open a session from `snapshot` (state, read-only reason) and its log at `log_path`.

    Problems found go to `warnings`; `lock` is the writer lock already taken (None when
    opening read-only).
    """
    state, read_only_reason = snapshot
    scan: LogScan | None = None
    builder: HistoryBuilder | None = None
    if state is not None and log_path.exists() and snapshot_matches_log(log_path, state):
        scan = scan_log(log_path, state.log_offset, state.last_seq + 1)
        builder = continue_snapshot(state, scan.events)
    if builder is None or scan is None:
        full = scan_log(log_path)
        if full.events:
            if state is None and log_path.exists():
                warnings.append(f"{session_id}: no usable snapshot; rebuilt from the log")
            state, builder = rebuild(session_id, full.events, state)
        elif state is not None:
            if state.last_seq >= 0:
                warnings.append(
                    f"{session_id}: the event log is missing; continuing from the snapshot"
                )
            builder = HistoryBuilder.from_snapshot(state.recent_messages, -1)
            state.last_seq = -1
        else:
            raise SessionNotFoundError(f"session {session_id} has no readable data")
        scan = full
    assert state is not None
    warnings.extend(p.message for p in scan.problems)
    read_only_reason = read_only_reason or scan.read_only_reason
    if read_only_reason is not None:
        warnings.append(f"session {session_id} opened read-only: {read_only_reason}")
    elif read_only:
        read_only_reason = "opened read-only"
    # The session's own mode, recorded when it started, whatever this process is set to.
    redactor = (redactor or Redactor()).with_mode(state.persistence == "metadata")
    builder = without_content(state, builder)
    log = EventLog.for_scan(log_path, scan, redactor=redactor)
    log.read_only = read_only_reason is not None
    if scan.last_seq is None:
        log.next_seq = state.last_seq + 1
    log.offset = scan.end_offset if scan.events else log.offset
    session = Session(state, log, builder, lock, read_only_reason, warnings)
    settle_opened(session, state.log_offset)
    return session
