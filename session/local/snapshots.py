"""Snapshot files (`sessions/<id>.json`): read and migrated, checked against the log, written.

A snapshot is written atomically at the last turn boundary of its log, its conversation
content scrubbed. One that cannot be used is ignored with a warning (the log rebuilds it);
one of a newer schema is read but makes the session read-only.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ..events import utcnow
from ..log.reader import parse_event_line
from ..redaction import Redactor
from ..snapshot import SessionState
from ..store.restore import parse_snapshot
from ..store.session import Session, boundary_state
from . import snapshot_file

logger = logging.getLogger(__name__)

# What a snapshot holds of the conversation: scrubbed when written.
_CONTENT = ("summary", "decisions", "recent_messages", "compacted_history_summary", "title")


def log_warning(warnings: list[str] | None, message: str) -> None:
    """Log `message` as a warning and add it to `warnings` (when given)."""
    logger.warning("%s", message)
    if warnings is not None:
        warnings.append(message)


def read_snapshot_file(
    path: Path, session_id: str, warnings: list[str] | None = None
) -> tuple[SessionState | None, str | None]:
    """Read and migrate the snapshot at `path`: (state or None, read-only reason or None)."""
    try:
        raw = snapshot_file.read(path)
    except FileNotFoundError:
        return None, None
    except ValueError as exc:
        log_warning(warnings, f"{path}: snapshot ignored ({exc}); rebuilding from the log")
        return None, None
    state, read_only = parse_snapshot(raw, session_id, str(path), warnings)
    return state, None if read_only is None else f"{path.name}: {read_only}"


def write_snapshot_file(path: Path, session: Session, redactor: Redactor | None = None) -> None:
    """Write the session's snapshot to `path` atomically, at the last turn boundary of its log.

    As the seed's schema v3 (`snapshot_file`); `updated_at` is the time of this save.
    """
    state = boundary_state(session)
    state.updated_at = utcnow()
    write_state_file(path, state, redactor or session.log.redactor)


def write_state_file(path: Path, state: SessionState, scrubber: Redactor | None = None) -> None:
    """Write `state` as a session file (v3), its conversation content scrubbed."""
    payload = state.model_dump(mode="json", exclude={"file_manifest"})
    if scrubber is not None:
        for key in (
            "summary",
            "decisions",
            "recent_messages",
            "compacted_history_summary",
            "title",
        ):
            payload[key] = scrubber.scrub({key: payload[key]})[key]
    snapshot_file.write(path, payload, state.file_manifest)


def snapshot_matches_log(path: Path, state: SessionState) -> bool:
    """Check cheaply that the line ending at `log_offset` is event `last_seq`."""
    if state.last_seq < 0:
        return state.log_offset == 0
    offset = state.log_offset
    back = 1 << 16
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size < offset or offset <= 0:
                return False
            while True:  # widen the window until it holds the whole last line
                back = min(back, offset)
                fh.seek(offset - back)
                window = fh.read(back)
                if not window.endswith(b"\n"):
                    return False
                start = window.rfind(b"\n", 0, len(window) - 1) + 1
                if start > 0 or back == offset:
                    break
                back *= 4
    except OSError:
        return False
    return _line_seq(window[start:-1]) == state.last_seq


_SEQ_PREFIX = b'{"seq":'


def _line_seq(line: bytes) -> int | None:
    """Return the `seq` of a log line, read from its start as our writer puts it first.

    A line written otherwise is parsed whole (the last line can be a 2 MB `session/save`).
    """
    if line.startswith(_SEQ_PREFIX):
        end = line.find(b",", len(_SEQ_PREFIX), len(_SEQ_PREFIX) + 21)
        digits = line[len(_SEQ_PREFIX) : end]
        if end > 0 and digits.isdigit() and line.endswith(b"}"):
            return int(digits)
    try:
        return parse_event_line(line).seq
    except ValueError:
        return None


def file_identity(path: Path) -> tuple[int, int, int, int] | None:
    """Return what changes when a file is replaced or written: device, inode, size, mtime."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


# A snapshot read for the resume offer and kept for the open that follows: the session, the
# file's identity when read, and what the read returned (`SessionManager.read_snapshot`).
KeptSnapshot = tuple[str, tuple[int, int, int, int], tuple[SessionState | None, str | None]]
