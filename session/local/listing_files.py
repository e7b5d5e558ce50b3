"""The files a session list is computed from.

`listing_index` keeps one row per session keyed by the identity of its files; this module
reads those identities (`scan_files`, `dir_key`, `file_key`) and the file system's own
clock (`file_system_now`). The rows and their times are both stores' (`store/rows.py`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from ..paths import is_valid_session_id

Row = tuple[Any, ...]  # the columns of `sessions`, in table order
# session id -> [snapshot key, log key], each (inode, size, mtime_ns) or None (no file)
Files = dict[str, list[tuple[int, ...] | None]]
DirKey = tuple[int, int, int, int]  # sessions/: (device, inode, ctime_ns, mtime_ns)


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
