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

While `sessions/` itself is unchanged (same inode, ctime and mtime: no entry was added,
removed or renamed, and snapshots are only ever replaced by a rename), a listing reads no
directory: it stats only the logs that can be growing in place, those with a writer's lock
file beside them (their names kept from the scan that trusted the directory), and a
snapshot only where its log moved. The directory's times are trusted only once
they are older, by the file system's own clock (the mtime of `listing.sqlite` just touched),
than a margin: a change in the same tick as the one seen would leave them as they were.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .listing import SessionInfo, session_info
from .listing_files import (
    DirKey,
    Files,
    ListedRow,
    Row,
    dir_key,
    file_key,
    file_system_now,
    iso,
    iso_of,
    row_info,
    scan_files,
    to_us,
)

if TYPE_CHECKING:
    from .listing import ListedState

logger = logging.getLogger(__name__)

LISTING_FILE = "listing.sqlite"
VERSION = 5
_DIR_MARGIN_NS = 1_000_000_000  # a directory changed this close to being seen is "racy"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SELECT_PAGE = (
    "SELECT session_id, title, created_at, updated_at, turns, parent_session_id, phase,"
    " updated_us FROM sessions ORDER BY updated_us DESC, session_id LIMIT ? OFFSET ?"
)
_INSERT = (
    "INSERT OR REPLACE INTO sessions (session_id, snap_ino, snap_size, snap_mtime, log_size,"
    " log_mtime, title, created_at, state_updated_us, updated_us, turns, parent_session_id,"
    " phase, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    snap_ino INTEGER, snap_size INTEGER, snap_mtime INTEGER,
    log_size INTEGER, log_mtime INTEGER,
    title TEXT, created_at TEXT NOT NULL,
    state_updated_us INTEGER NOT NULL, updated_us INTEGER NOT NULL,
    turns INTEGER NOT NULL, parent_session_id TEXT, phase TEXT, updated_at TEXT NOT NULL
);
-- Covering a page's columns: a page is read from the index alone (10,000 rows: 23 -> 9 ms).
CREATE INDEX IF NOT EXISTS sessions_by_time ON sessions (
    updated_us DESC, session_id, title, created_at, updated_at, turns, parent_session_id, phase
);
-- The lock files of the scan that trusted `sessions/` (meta 'dir'), their `.lock` cut off.
CREATE TABLE IF NOT EXISTS locks (name TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS unlisted (
    session_id TEXT PRIMARY KEY,
    snap_ino INTEGER, snap_size INTEGER, snap_mtime INTEGER,
    log_size INTEGER, log_mtime INTEGER
);
"""
# Every session with files, and the keys of the files it was last read from (state_us NULL:
# no row, e.g. an empty log).
_SELECT_KEYS = (
    "SELECT session_id, snap_ino, snap_size, snap_mtime, log_size, log_mtime, state_updated_us"
    " FROM sessions UNION ALL SELECT session_id, snap_ino, snap_size, snap_mtime, log_size,"
    " log_mtime, NULL FROM unlisted"
)
# The logs to stat while `sessions/` is unchanged (only the columns that check reads).
_SELECT_LOGS = (
    "SELECT session_id, snap_ino, log_size, log_mtime FROM sessions WHERE log_size IS NOT NULL"
    " UNION ALL SELECT session_id, snap_ino, log_size, log_mtime FROM unlisted"
    " WHERE log_size IS NOT NULL"
)
_SELECT_LOG = (
    "SELECT session_id, snap_ino, log_size, log_mtime FROM sessions WHERE session_id = ?"
    " AND log_size IS NOT NULL UNION ALL SELECT session_id, snap_ino, log_size, log_mtime"
    " FROM unlisted WHERE session_id = ? AND log_size IS NOT NULL"
)
_BY_NAME = 200  # up to this many sessions with a lock file, their rows are read by id
SnapshotReader = Callable[[str], "ListedState | None"]


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:  # none was begun, or it is gone with the connection
        pass


def _trusted(key: DirKey) -> str:
    return " ".join(map(str, (*key, "trusted")))


def _writing_logs(conn: sqlite3.Connection, writing: set[str]) -> list[Row]:
    """Return the log keys (`_SELECT_LOGS`' columns) of the sessions named in `writing`."""
    if len(writing) > _BY_NAME:  # many lock files (left by an older version): one pass
        return [row for row in conn.execute(_SELECT_LOGS) if row[0] in writing]
    rows: list[Row] = []
    for sid in writing:
        rows += conn.execute(_SELECT_LOG, (sid, sid)).fetchall()
    return rows


class ListingIndex:
    """The cached rows of one project's session list."""

    def __init__(self, project_dir: Path) -> None:
        self.path = project_dir / LISTING_FILE
        # After a listing: the sessions with a lock file in `sessions/` as it was read (a
        # writer holds it now, or died holding it), for `ProjectLayout.held_locks`.
        self.locked: set[str] = set()

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
        rows, total = self.rows(sessions_dir, read_snapshot, offset, limit)
        return [row_info(row) for row in rows], total

    def rows(
        self,
        sessions_dir: Path,
        read_snapshot: SnapshotReader,
        offset: int = 0,
        limit: int | None = None,
    ) -> tuple[list[ListedRow], int]:
        """Return a page as stored (times as text: no object per row), and the total."""
        self.locked = set()
        with self._connect() as conn:
            if conn is None:
                read = (
                    self._read(sid, sessions_dir, keys, read_snapshot)
                    for sid, keys in scan_files(sessions_dir, self.locked).items()
                )
                every = [row for row in read if row is not None]
                every.sort(key=lambda r: (-r[9], r[0]))
                end = None if limit is None else offset + limit
                page = [(r[0], r[6], r[7], r[13], *r[10:13], r[9]) for r in every[offset:end]]
                return page, len(every)
            seen = dir_key(sessions_dir)
            moved = self._logs_moved(conn, sessions_dir, seen)
            if moved is None:
                known = conn.execute(_SELECT_KEYS).fetchall()
                files = scan_files(sessions_dir, self.locked)
                self._refresh(conn, known, files, sessions_dir, read_snapshot)
                self._remember(conn, sessions_dir, seen)
            elif moved:
                known = conn.execute(_SELECT_KEYS).fetchall()
                self._refresh(conn, known, moved, sessions_dir, read_snapshot, complete=False)
            total = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
            found = conn.execute(_SELECT_PAGE, (-1 if limit is None else limit, offset))
            return found.fetchall(), int(total)

    def _logs_moved(
        self, conn: sqlite3.Connection, sessions_dir: Path, seen: DirKey | None
    ) -> Files | None:
        """With `sessions/` unchanged, return the files of the sessions whose log moved.

        None: the directory is not known unchanged, its files are to be scanned.
        """
        stored = conn.execute("SELECT value FROM meta WHERE key = 'dir'").fetchone()
        if seen is None or stored is None or stored[0] != _trusted(seen):
            return None
        # A log grows in place, so the directory's times do not say; but only while its
        # writer holds the lock, whose file exists from before the first append until after
        # the last (`locks.py`): only the logs of the sessions with a lock file are looked
        # at. The lock files are those of the scan that trusted the directory: one made or
        # removed since would have changed it.
        self.locked = {name for (name,) in conn.execute("SELECT name FROM locks")}
        moved: Files = {}
        if not self.locked:
            return moved
        try:
            fd = os.open(sessions_dir, _DIR_FLAGS)
        except OSError:
            return None
        try:
            for sid, ino, log_size, log_mtime in _writing_logs(conn, self.locked):
                try:
                    st = os.stat(f"{sid}.events.jsonl", dir_fd=fd, follow_symlinks=False)
                except OSError:
                    moved[sid] = [None if ino is None else file_key(fd, f"{sid}.json"), None]
                    continue
                if st.st_size != log_size or st.st_mtime_ns != log_mtime:
                    log = (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None
                    # A snapshot is saved with its log, as a rule: looked at again too.
                    moved[sid] = [None if ino is None else file_key(fd, f"{sid}.json"), log]
        finally:
            os.close(fd)
        return moved

    def _remember(self, conn: sqlite3.Connection, sessions_dir: Path, seen: DirKey | None) -> None:
        """Record the directory just scanned, if its last change is older than the margin."""
        if seen is None or dir_key(sessions_dir) != seen:  # it changed while scanned
            return
        now = file_system_now(self.path, seen[0])
        if now is None or max(seen[2:]) + _DIR_MARGIN_NS >= now:  # racy: scanned next time
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM locks")
            conn.executemany("INSERT INTO locks VALUES (?)", [(name,) for name in self.locked])
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('dir', ?)", (_trusted(seen),))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:  # busy, read-only, full disk: scanned again next time
            logger.info("%s: directory not recorded (%s)", self.path, exc)
            _rollback(conn)

    def _refresh(
        self,
        conn: sqlite3.Connection,
        known: list[Row],
        files: Files,
        sessions_dir: Path,
        read_snapshot: SnapshotReader,
        *,
        complete: bool = True,
    ) -> None:
        """Bring the rows in step with the files: re-read what changed, drop what is gone.

        `complete`: `files` holds every session (the others are gone); otherwise only some,
        and one with neither file is gone.
        """
        cached: dict[str, tuple[tuple[int, ...] | None, tuple[int, ...] | None, int | None]] = {}
        for sid, ino, size, mtime, log_size, log_mtime, state_us in known:
            if not complete and sid not in files:
                continue
            snap_key = None if ino is None else (ino, size, mtime)
            log_key = None if log_size is None else (log_size, log_mtime)
            cached[sid] = (snap_key, log_key, state_us)
        rewrite: list[Row] = []
        unlisted: list[Row] = []  # sessions with files but no row (an empty log, ...)
        moved: list[tuple[int, str, int, int, str]] = []  # a grown log: (updated, size, mtime, id)
        gone = [(sid,) for sid in cached if sid not in files]
        for sid, (snap, log) in files.items():
            old = cached.get(sid)
            if snap is None and log is None:
                gone.append((sid,))
                continue
            if old is not None and old[0] == snap:
                if old[1] == log:
                    continue
                if snap is not None and old[2] is not None:  # listed from its snapshot
                    if log is not None:  # the log grew: updated_at may move
                        updated_us = max(int(old[2]), log[1] // 1000)
                        moved.append((updated_us, iso(updated_us), log[0], log[1], sid))
                    continue
            row = self._read(sid, sessions_dir, [snap, log], read_snapshot)
            if row is not None:
                rewrite.append(row)
            else:
                keys = (*(snap or (None, None, None)), *(log or (None, None)))
                unlisted.append((sid, *keys))
        if not (rewrite or moved or gone or unlisted):
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            for table, dropped in (("sessions", gone + unlisted), ("unlisted", gone + rewrite)):
                conn.executemany(
                    f"DELETE FROM {table} WHERE session_id = ?",  # noqa: S608 - fixed names
                    [row[:1] for row in dropped],
                )
            conn.executemany(_INSERT, rewrite)
            conn.executemany("INSERT OR REPLACE INTO unlisted VALUES (?, ?, ?, ?, ?, ?)", unlisted)
            conn.executemany(
                "UPDATE sessions SET updated_us = ?, updated_at = ?, log_size = ?, log_mtime = ?"
                " WHERE session_id = ?",
                moved,
            )
            conn.execute("COMMIT")
        except sqlite3.Error as exc:  # busy, read-only, full disk: the next listing retries
            logger.info("%s: not updated (%s)", self.path, exc)
            _rollback(conn)

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
        state_us = to_us(info.updated_at)  # the snapshot's time, or its log's if later
        updated_us = state_us if log is None else max(state_us, log[1] // 1000)
        return (
            session_id,
            *(snap if snap is not None else (None, None, None)),
            *(log if log is not None else (None, None)),
            info.title,
            iso_of(info.created_at),
            state_us,
            updated_us,
            info.turns,
            info.parent_session_id,
            info.phase,
            iso(updated_us),
        )
