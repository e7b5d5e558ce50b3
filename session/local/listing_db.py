"""`listing.sqlite`: the session list's file, opened, checked and written.

Its schema and statements; `ListingFile` opens it (made anew when damaged or of another
version, never through a symlink or a hard link, not made on a read-only store), writes in
one transaction what a listing found (`commit`), and takes the writers' notes
(`note_written`): a writer notes its session after its last write, before its lock file goes,
so that a listing after `sessions/` changed looks again at it without a stat of every file.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..storage import FILE_MODE
from .listing_files import Row

if TYPE_CHECKING:
    from ..store.session import Lock

logger = logging.getLogger(__name__)

LISTING_FILE = "listing.sqlite"
VERSION = 7  # 7: a title from the first prompt of a session file with only recent messages
_BUSY_S = 2.0  # how long a listing or a writer's note waits for another's transaction
# A session without a turn (saved at an exit without one), folded out of a listing unless
# asked for. A title is a turn's input or, without one, the summary's first line, else the
# first prompt of its recent messages: a seed's session file, which has no `turns`, is
# listed if it has any of them.
EMPTY = "turns = 0 AND title IS NULL"
# A page: (1: every session, or 0: none without a turn; the id of one listed anyway, e.g. the
# current session, or None; limit; offset).
SELECT_PAGE = (
    "SELECT session_id, title, created_at, updated_at, turns, parent_session_id, phase,"  # noqa: S608
    f" updated_us FROM sessions WHERE ? OR NOT ({EMPTY}) OR session_id IS ?"
    " ORDER BY updated_us DESC, session_id LIMIT ? OFFSET ?"
)
# How many sessions there are, and how many of them have no turn (the id of one listed
# anyway not counted).
COUNT = (
    f"SELECT count(*), coalesce(sum({EMPTY} AND session_id IS NOT ?), 0)"  # noqa: S608
    " FROM sessions"
)
_INSERT = (
    "INSERT OR REPLACE INTO sessions (session_id, snap_ino, snap_size, snap_mtime, log_ino,"
    " log_size, log_mtime, title, created_at, state_updated_us, updated_us, turns,"
    " parent_session_id, phase, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    snap_ino INTEGER, snap_size INTEGER, snap_mtime INTEGER,
    log_ino INTEGER, log_size INTEGER, log_mtime INTEGER,
    title TEXT, created_at TEXT NOT NULL,
    state_updated_us INTEGER NOT NULL, updated_us INTEGER NOT NULL,
    turns INTEGER NOT NULL, parent_session_id TEXT, phase TEXT, updated_at TEXT NOT NULL
);
-- Covering a page's columns: a page is read from the index alone (10,000 rows: 23 -> 9 ms).
CREATE INDEX IF NOT EXISTS sessions_by_time ON sessions (
    updated_us DESC, session_id, title, created_at, updated_at, turns, parent_session_id, phase
);
-- The lock files of the last scan of `sessions/`, their `.lock` cut off.
CREATE TABLE IF NOT EXISTS locks (name TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS unlisted (
    session_id TEXT PRIMARY KEY,
    snap_ino INTEGER, snap_size INTEGER, snap_mtime INTEGER,
    log_ino INTEGER, log_size INTEGER, log_mtime INTEGER
);
-- The sessions whose writer let go of its lock since they were last looked at.
CREATE TABLE IF NOT EXISTS touched (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT);
"""
# Every session with files, and the keys of the files it was last read from (state_us NULL:
# no row, e.g. an empty log); and the same of one session.
SELECT_KEYS = (
    "SELECT session_id, snap_ino, snap_size, snap_mtime, log_ino, log_size, log_mtime,"
    " state_updated_us FROM sessions UNION ALL SELECT session_id, snap_ino, snap_size,"
    " snap_mtime, log_ino, log_size, log_mtime, NULL FROM unlisted"
)
SELECT_KEY = (
    "SELECT session_id, snap_ino, snap_size, snap_mtime, log_ino, log_size, log_mtime,"
    " state_updated_us FROM sessions WHERE session_id = ? UNION ALL SELECT session_id,"
    " snap_ino, snap_size, snap_mtime, log_ino, log_size, log_mtime, NULL FROM unlisted"
    " WHERE session_id = ?"
)
# The name and inode of every file the rows came from, as `scan_names` lists them.
SELECT_NAMES = (
    "SELECT session_id || '.json', snap_ino FROM sessions WHERE snap_ino IS NOT NULL"
    " UNION ALL SELECT session_id || '.events.jsonl', log_ino FROM sessions"
    " WHERE log_ino IS NOT NULL UNION ALL SELECT session_id || '.json', snap_ino"
    " FROM unlisted WHERE snap_ino IS NOT NULL UNION ALL SELECT session_id || '.events.jsonl',"
    " log_ino FROM unlisted WHERE log_ino IS NOT NULL"
)
# What a listing found changed: rows rewritten, rows of no session (unlisted), logs that
# grew (updated_us, updated_at, log inode, size, mtime, id), sessions gone.
Changes = tuple[list[Row], list[Row], list[Row], list[tuple[str]]]
# After a scan of `sessions/`: its lock files, its record if it is settled, and, if it
# stat'ed every file, when (time.time()).
Scan = tuple[set[str], str | None, float | None]


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:  # none was begun, or it is gone with the connection
        pass


def busy(exc: sqlite3.Error) -> bool:
    """Return True if `exc` says another connection holds the file (SQLITE_BUSY, _LOCKED)."""
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in (5, 6)


class ListingFile:
    """The file of one project's session list."""

    def __init__(self, project_dir: Path) -> None:
        self.path = project_dir / LISTING_FILE

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection | None]:
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
                if attempt or busy(exc):  # busy: another's transaction, not a damaged file
                    logger.info("%s: not usable now (%s); listing without it", self.path, exc)
                    break
                logger.warning("%s: damaged (%s); rebuilt", self.path, exc)
            self.discard()
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
        if st is None:  # made 0600 first: SQLite gives its journals the database's mode
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                os.close(os.open(self.path, flags, FILE_MODE))
            except FileExistsError:
                pass
            except OSError:
                return None
        try:
            return sqlite3.connect(self.path, timeout=_BUSY_S, isolation_level=None)
        except sqlite3.Error:
            return None

    def _prepare(self, conn: sqlite3.Connection) -> bool:
        conn.executescript(_SCHEMA)
        found = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        if found is None:
            conn.execute("INSERT INTO meta VALUES ('version', ?)", (str(VERSION),))
            return True
        return str(found[0]) == str(VERSION)

    def discard(self) -> None:
        """Remove the file (and its journal): the next listing makes it anew."""
        for suffix in ("", "-journal", "-wal", "-shm"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except OSError:
                pass

    def commit(
        self, conn: sqlite3.Connection, changes: Changes, upto: int | None, scan: Scan | None
    ) -> None:
        """Write what a listing found, in one transaction.

        The rows, the notes it took in and, after a scan, its lock files and the record of
        the directory.
        """
        rewrite, unlisted, moved, gone = changes
        try:
            conn.execute("BEGIN IMMEDIATE")
            for table, dropped in (("sessions", gone + unlisted), ("unlisted", gone + rewrite)):
                conn.executemany(
                    f"DELETE FROM {table} WHERE session_id = ?",  # noqa: S608 - fixed names
                    [row[:1] for row in dropped],
                )
            conn.executemany(_INSERT, rewrite)
            conn.executemany(
                "INSERT OR REPLACE INTO unlisted VALUES (?, ?, ?, ?, ?, ?, ?)", unlisted
            )
            conn.executemany(
                "UPDATE sessions SET updated_us = ?, updated_at = ?, log_ino = ?, log_size = ?,"
                " log_mtime = ? WHERE session_id = ?",
                moved,
            )
            if upto is not None:
                conn.execute("DELETE FROM touched WHERE seq <= ?", (upto,))
            if scan is not None:
                locked, trusted, verified = scan
                conn.execute("DELETE FROM locks")
                conn.executemany("INSERT INTO locks VALUES (?)", [(name,) for name in locked])
                if verified is not None:
                    conn.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('verified', ?)", (repr(verified),)
                    )
                if trusted is None:
                    conn.execute("DELETE FROM meta WHERE key = 'dir'")
                else:
                    conn.execute("INSERT OR REPLACE INTO meta VALUES ('dir', ?)", (trusted,))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:  # busy, read-only, full disk: the next listing retries
            logger.info("%s: not updated (%s)", self.path, exc)
            _rollback(conn)

    def note_written(self, session_id: str) -> None:
        """Tell later listings that a session's files may have changed.

        Its writer calls this after its last write, before its lock file goes (`NotingLock`).
        """
        if not os.path.lexists(self.path):
            return  # no listing yet: the first one stats every file
        reason: object = "not usable"
        with self.connect() as conn:
            if conn is not None:
                try:
                    conn.execute("INSERT INTO touched (session_id) VALUES (?)", (session_id,))
                    return
                except sqlite3.Error as exc:
                    reason = exc
        # A listing that cannot learn of this write must start again: from scratch.
        logger.warning("%s: session %s not noted (%s); removed", self.path, session_id, reason)
        self.discard()


class NotingLock:
    """A session's writer lock that, let go, notes the session for the listing first."""

    def __init__(self, lock: Lock, listing: ListingFile, session_id: str) -> None:
        self._lock = lock
        self._listing: ListingFile | None = listing
        self.session_id = session_id

    def release(self) -> None:
        """Note the session (once), then let go of the lock."""
        listing, self._listing = self._listing, None
        try:
            if listing is not None:
                listing.note_written(self.session_id)
        finally:
            self._lock.release()
