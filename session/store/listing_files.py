"""The files a session list is computed from, and the conversions of its rows.

`listing_index` keeps one row per session keyed by the identity of its files; this module
reads those identities (`scan_files`, `dir_key`, `file_key`), the file system's own clock
(`file_system_now`), and turns the stored times back and forth (`to_us`, `iso`, `iso_of`,
`listed_row`, `row_info`).
"""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..paths import is_valid_session_id
from .listing import SessionInfo

if TYPE_CHECKING:
    from ..pg.records import SessionRow

Row = tuple[Any, ...]  # the columns of `sessions`, in table order
# session id -> [snapshot key, log key], each (inode, size, mtime_ns) or None (no file)
Files = dict[str, list[tuple[int, ...] | None]]
DirKey = tuple[int, int, int, int]  # sessions/: (device, inode, ctime_ns, mtime_ns)
# A listed session as stored: (session id, title, created_at, updated_at, turns, parent
# session id, phase, updated_us), the times as RFC 3339 text (UTC, `Z`), as JSON shows them.
ListedRow = tuple[str, str | None, str, str, int, str | None, str | None, int]


def _split(name: str) -> tuple[str, int] | None:
    """Return (session id, slot) of a session file's name: 0 its snapshot, 1 its log."""
    if name.endswith(".events.jsonl"):
        return name[:-13], 1
    if name.endswith(".json"):
        return name[:-5], 0
    return None


def scan_files(sessions_dir: Path, locked: set[str] | None = None) -> Files:
    """Return, per session id, [snapshot key, log key] (one lstat per file).

    `locked` collects the names of the lock files met, their `.lock` cut off.
    """
    found: Files = {}
    try:
        entries = os.scandir(sessions_dir)
    except OSError:
        return found
    with entries:
        for entry in entries:
            name = entry.name
            split = _split(name)
            if split is None:
                if locked is not None and name.endswith(".lock"):
                    locked.add(name[:-5])
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            keys = found.get(split[0])
            if keys is None:
                keys = found[split[0]] = [None, None]
            keys[split[1]] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return {sid: keys for sid, keys in found.items() if is_valid_session_id(sid)}


def scan_names(sessions_dir: Path) -> dict[str, int] | None:
    """Return each entry's name and inode as the directory lists them, with no stat.

    None: the directory cannot be read.
    """
    try:
        entries = os.scandir(sessions_dir)
    except OSError:
        return None
    with entries:
        return {entry.name: entry.inode() for entry in entries}


def session_of(name: str) -> str | None:
    """Return the valid session id whose log, snapshot or lock file `name` is; else None."""
    split = _split(name)
    sid = split[0] if split is not None else name[:-5] if name.endswith(".lock") else None
    return sid if sid is not None and is_valid_session_id(sid) else None


def session_keys(dir_fd: int, session_id: str) -> list[tuple[int, ...] | None]:
    """Return [snapshot key, log key] of one session, stat'ed in the directory."""
    return [file_key(dir_fd, f"{session_id}.json"), file_key(dir_fd, f"{session_id}.events.jsonl")]


def dir_key(path: Path) -> DirKey | None:
    """Return the key of a directory whose times say when an entry was added or removed."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns)


def file_system_now(probe: Path, device: int) -> int | None:
    """Return the file system's clock, read by touching `probe` (None: not on `device`)."""
    # Its times, not ours: a clock that is off (or a server's, on a network file system)
    # stamps the directory and the probe alike. A touch is no write: nothing is synced.
    try:
        os.utime(probe, follow_symlinks=False)
        st = os.lstat(probe)
    except (OSError, NotImplementedError):
        return None
    return st.st_mtime_ns if st.st_dev == device and stat.S_ISREG(st.st_mode) else None


def file_key(dir_fd: int, name: str) -> tuple[int, int, int] | None:
    """Return (inode, size, mtime_ns) of a regular file in the directory; None otherwise."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)


def to_us(moment: datetime) -> int:
    """Return microseconds since the epoch, exactly (no float on the way)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICRO


def iso(us: int) -> str:
    """Return the RFC 3339 text (UTC, `Z`) of a time in microseconds since the epoch."""
    return f"{(_EPOCH + timedelta(microseconds=us)).isoformat()[:-6]}Z"


def iso_of(moment: datetime) -> str:
    """Return the RFC 3339 text (UTC, `Z`) of a moment (naive: taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    elif moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return f"{moment.isoformat()[:-6]}Z"


def listed_row(info: SessionInfo | SessionRow) -> ListedRow:
    """Return a row whose times are datetimes (PostgreSQL's) as the local listing keeps it."""
    return (
        info.session_id,
        info.title,
        iso_of(info.created_at),
        iso_of(info.updated_at),
        info.turns,
        info.parent_session_id,
        info.phase,
        to_us(info.updated_at),
    )


def row_info(row: ListedRow) -> SessionInfo:
    """Build a `SessionInfo` from a listed row."""
    sid, title, created, updated, turns, parent, phase, _ = row
    # Both times are stored as text: parsing it is 4x cheaper than epoch + timedelta.
    from_iso = datetime.fromisoformat
    return SessionInfo(sid, title, from_iso(created), from_iso(updated), turns, parent, phase)
