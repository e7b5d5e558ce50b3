"""The session list as a projection: one row per session, refreshed only where files changed.

Listing a project used to read every snapshot each time, so the cost grew with every session
a user ever had. `listing.sqlite` (beside `index.sqlite`) keeps each session's row with the
identity of the files it came from (the snapshot's inode, size and mtime; the log's size and
mtime): a listing stats the files (one `scandir`, an `lstat` per file) and re-reads only the
sessions whose snapshot changed (or, without one, whose log did); a log that only grew moves
`updated_at` without a parse. A page (`offset`, `limit`) is read in `updated_at` order from
the table, so only its rows are built. Like the search index it holds nothing the logs do
not: missing, unreadable, damaged or of another version, it is rebuilt; on a read-only store
the listing is computed without it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..paths import is_valid_session_id
from ..snapshot import SessionState
from .listing import SessionInfo, session_info

logger = logging.getLogger(__name__)

LISTING_FILE = "listing.sqlite"
VERSION = 2
_SELECT_PAGE = (
    "SELECT session_id, snap_ino, snap_size, snap_mtime, log_size, log_mtime, title,"
    " created_at, state_updated_us, updated_us, turns, parent_session_id, phase"
    " FROM sessions ORDER BY updated_us DESC, session_id LIMIT ? OFFSET ?"
)
_INSERT = (
    "INSERT OR REPLACE INTO sessions (session_id, snap_ino, snap_size, snap_mtime, log_size,"
    " log_mtime, title, created_at, state_updated_us, updated_us, turns, parent_session_id,"
    " phase) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    snap_ino INTEGER, snap_size INTEGER, snap_mtime INTEGER,
    log_size INTEGER, log_mtime INTEGER,
    title TEXT, created_at TEXT NOT NULL,
    state_updated_us INTEGER NOT NULL, updated_us INTEGER NOT NULL,
    turns INTEGER NOT NULL, parent_session_id TEXT, phase TEXT
);
CREATE INDEX IF NOT EXISTS sessions_by_time ON sessions (updated_us DESC, session_id);
"""
SnapshotReader = Callable[[str], SessionState | None]
# (snapshot inode, size, mtime_ns) or None; (log size, mtime_ns) or None
Keys = tuple[tuple[int, int, int] | None, tuple[int, int] | None]
Row = tuple[Any, ...]  # the columns of `sessions`, in table order


def scan_files(sessions_dir: Path) -> dict[str, list[tuple[int, ...] | None]]:
    """Return, per session id, [snapshot key, log key] (one lstat per file)."""
    found: dict[str, list[tuple[int, ...] | None]] = {}
    try:
        entries = os.scandir(sessions_dir)
    except OSError:
        return found
    with entries:
        for entry in entries:
            name = entry.name
            if name.endswith(".events.jsonl"):
                session_id, slot = name[:-13], 1
            elif name.endswith(".json"):
                session_id, slot = name[:-5], 0
            else:
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            keys = found.get(session_id)
            if keys is None:
                keys = found[session_id] = [None, None]
            keys[slot] = (
                (st.st_ino, st.st_size, st.st_mtime_ns)
                if slot == 0
                else (
                    st.st_size,
                    st.st_mtime_ns,
                )
            )
    return {sid: keys for sid, keys in found.items() if is_valid_session_id(sid)}


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)


def _us(moment: datetime) -> int:
    """Return microseconds since the epoch, exactly (no float on the way)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICRO


def _info(row: Row) -> SessionInfo:
    sid, _, _, _, _, _, title, created, _, updated_us, turns, parent, phase = row
    updated = _EPOCH + timedelta(microseconds=updated_us)
    return SessionInfo(sid, title, datetime.fromisoformat(created), updated, turns, parent, phase)


class ListingIndex:
    """The cached rows of one project's session list."""

    def __init__(self, project_dir: Path) -> None:
        self.path = project_dir / LISTING_FILE

    # -- the file ----------------------------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection | None]:
        """Open the file (made anew if damaged or of another version); None if it cannot be."""
        for attempt in range(2):
            conn = self._open()
            if conn is None:
                break
            try:
                with closing(conn):
                    if self._prepare(conn):
                        yield conn
                        return
            except sqlite3.DatabaseError as exc:
                if attempt:
                    logger.warning("%s: not usable (%s); listing without it", self.path, exc)
                    break
                logger.warning("%s: damaged (%s); rebuilt", self.path, exc)
            self._discard()
        yield None

    def _open(self) -> sqlite3.Connection | None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            st = None
        except OSError:
            return None
        if st is not None and (not stat.S_ISREG(st.st_mode) or st.st_nlink != 1):
            logger.warning("%s is not a plain file; listing without it", self.path)
            return None
        if st is None and not os.access(self.path.parent, os.W_OK):
            return None  # a read-only store: computed without a cache
        try:
            return sqlite3.connect(self.path, timeout=2.0, isolation_level=None)
        except sqlite3.Error:
            return None

    def _prepare(self, conn: sqlite3.Connection) -> bool:
        conn.executescript(_SCHEMA)
        found = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        if found is None:
            conn.execute("INSERT INTO meta VALUES ('version', ?)", (str(VERSION),))
            return True
        return str(found[0]) == str(VERSION)

    def _discard(self) -> None:
        for suffix in ("", "-journal", "-wal", "-shm"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except OSError:
                pass

    # -- listing -----------------------------------------------------------------------

    def sessions(self, sessions_dir: Path, read_snapshot: SnapshotReader) -> list[SessionInfo]:
        """Return every session of the project, newest first, refreshing what changed."""
        return self.page(sessions_dir, read_snapshot)[0]

    def page(
        self,
        sessions_dir: Path,
        read_snapshot: SnapshotReader,
        offset: int = 0,
        limit: int | None = None,
    ) -> tuple[list[SessionInfo], int]:
        """Return a page of the sessions, newest first, and how many there are."""
        files = scan_files(sessions_dir)
        with self._connect() as conn:
            if conn is None:
                read = (
                    self._read(sid, sessions_dir, keys, read_snapshot)
                    for sid, keys in files.items()
                )
                rows = [row for row in read if row is not None]
                rows.sort(key=lambda r: (-r[9], r[0]))
                end = None if limit is None else offset + limit
                return [_info(r) for r in rows[offset:end]], len(rows)
            self._refresh(conn, files, sessions_dir, read_snapshot)
            total = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
            cursor = conn.execute(_SELECT_PAGE, (-1 if limit is None else limit, offset))
            return [_info(row) for row in cursor], int(total)

    def _refresh(
        self,
        conn: sqlite3.Connection,
        files: dict[str, list[tuple[int, ...] | None]],
        sessions_dir: Path,
        read_snapshot: SnapshotReader,
    ) -> None:
        """Bring the rows in step with the files: re-read what changed, drop what is gone."""
        cached: dict[str, tuple[tuple[int, ...] | None, tuple[int, ...] | None, int]] = {}
        query = (
            "SELECT session_id, snap_ino, snap_size, snap_mtime, log_size, log_mtime,"
            " state_updated_us FROM sessions"
        )
        for sid, ino, size, mtime, log_size, log_mtime, state_us in conn.execute(query):
            snap_key = None if ino is None else (ino, size, mtime)
            log_key = None if log_size is None else (log_size, log_mtime)
            cached[sid] = (snap_key, log_key, state_us)
        rewrite: list[Row] = []
        moved: list[tuple[int, int, int, str]] = []  # a grown log: (updated_us, size, mtime, id)
        for sid, (snap, log) in files.items():
            old = cached.get(sid)
            if old is not None and old[0] == snap and (old[1] == log or snap is not None):
                if old[1] != log and log is not None:  # the log grew: updated_at may move
                    updated = max(int(old[2]), log[1] // 1000)
                    moved.append((updated, log[0], log[1], sid))
                continue
            row = self._read(sid, sessions_dir, [snap, log], read_snapshot)
            if row is not None:
                rewrite.append(row)
        gone = [(sid,) for sid in cached if sid not in files]
        if not (rewrite or moved or gone):
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(_INSERT, rewrite)
            conn.executemany(
                "UPDATE sessions SET updated_us = ?, log_size = ?, log_mtime = ?"
                " WHERE session_id = ?",
                moved,
            )
            conn.executemany("DELETE FROM sessions WHERE session_id = ?", gone)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:  # busy, read-only, full disk: the next listing retries
            logger.info("%s: not updated (%s)", self.path, exc)
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def _read(
        self,
        session_id: str,
        sessions_dir: Path,
        keys: list[tuple[int, ...] | None],
        read_snapshot: SnapshotReader,
    ) -> Row | None:
        snap, log = keys
        state = read_snapshot(session_id) if snap is not None else None
        info = session_info(session_id, state, sessions_dir / f"{session_id}.events.jsonl")
        if info is None:
            return None
        state_us = _us(state.updated_at) if state is not None else _us(info.updated_at)
        updated_us = state_us if log is None else max(state_us, log[1] // 1000)
        return (
            session_id,
            *(snap if snap is not None else (None, None, None)),
            *(log if log is not None else (None, None)),
            info.title,
            info.created_at.isoformat(),
            state_us,
            updated_us,
            info.turns,
            info.parent_session_id,
            info.phase,
        )
