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
from ..storage import StorageError
from ..store.restore import parse_snapshot
from ..store.session import Session, boundary_state
from . import snapshot_file
from .layout import ProjectLayout

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
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if os.fstat(fd).st_size < offset or offset <= 0:
            return False
        return _line_seq_at(fd, offset) == state.last_seq
    except OSError:
        return False
    finally:
        os.close(fd)


_BACK = 1 << 16  # bytes read at a time while looking back for the line's start
_SEQ_PREFIX = b'{"seq":'
_HEAD = len(_SEQ_PREFIX) + 21  # the prefix, up to 20 digits, the comma


def _line_seq_at(fd: int, end: int) -> int | None:
    """Return the `seq` of the log line that ends (with its newline) at byte `end`."""
    # After a save the last line is the `session/save` event with the whole manifest
    # (~2 MB at 20,000 files): look back for its start a block at a time, and read only
    # its first bytes and its last, never the whole line.
    tail = os.pread(fd, min(end, _BACK), end - min(end, _BACK))
    if not tail.endswith(b"\n"):
        return None
    block, block_start = tail[:-1], end - len(tail)
    while (cut := block.rfind(b"\n")) < 0 and block_start > 0:
        size = min(block_start, _BACK)
        block_start -= size
        block = os.pread(fd, size, block_start)
        if len(block) != size:
            return None
    start = block_start + cut + 1
    if end - start <= len(tail):
        return _line_seq(tail[len(tail) - (end - start) : -1])
    head = os.pread(fd, _HEAD, start)
    if head.startswith(_SEQ_PREFIX) and tail.endswith(b"}\n"):
        comma = head.find(b",", len(_SEQ_PREFIX))
        digits = head[len(_SEQ_PREFIX) : comma]
        if comma > 0 and digits.isdigit():
            return int(digits)
    line = os.pread(fd, end - start - 1, start)  # written otherwise: parsed whole
    return _line_seq(line) if len(line) == end - start - 1 else None


def _line_seq(line: bytes) -> int | None:
    """Return the `seq` of a log line, read from its start as our writer puts it first.

    A line written otherwise is parsed whole.
    """
    if line.startswith(_SEQ_PREFIX):
        end = line.find(b",", len(_SEQ_PREFIX), _HEAD)
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


class SnapshotReader:
    """Reads a project's snapshot files, handing the resume offer's read to the open after it."""

    def __init__(self, layout: ProjectLayout) -> None:
        self.layout = layout
        self._kept: KeptSnapshot | None = None

    def read(
        self, session_id: str, warnings: list[str] | None, keep: bool
    ) -> tuple[SessionState | None, str | None]:
        """Read and migrate a snapshot: (state or None, read-only reason or None).

        `keep`: the caller only looks at the state, and the session is about to be opened
        (the resume offer): the next read of this snapshot, if the file is unchanged, takes
        this very state instead of parsing it again (a 20,000-file manifest is ~15 ms).
        """
        path = self.layout.snapshot_path(session_id)
        try:
            self.layout.check_store_dirs()
        except StorageError as exc:
            log_warning(warnings, f"{path}: snapshot ignored ({exc})")
            return None, None
        kept, self._kept = self._kept, None
        identity = file_identity(path)
        if kept is not None and identity is not None and kept[:2] == (session_id, identity):
            return kept[2]
        result = read_snapshot_file(path, session_id, warnings)
        if keep and identity is not None and identity == file_identity(path):
            self._kept = (session_id, identity, result)
        return result
