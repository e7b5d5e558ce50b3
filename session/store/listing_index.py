"""The session list as a projection: one row per session, refreshed only where files changed.

Listing a project used to read every snapshot each time, so the cost grew with every session
a user ever had. `listing.sqlite` (beside `index.sqlite`) keeps each session's row with the
identity of the files it came from (the snapshot's inode, size and mtime; the log's size and
mtime): a listing stats the files (one `scandir` and an `lstat` per file) and re-reads only
the sessions whose snapshot changed; a log that only grew moves `updated_at` without a parse.
Like the search index it holds nothing the logs do not: missing, unreadable or damaged, it
is rebuilt; on a read-only store the listing is computed without it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..paths import is_valid_session_id
from ..snapshot import SessionState
from .listing import SessionInfo, session_info

logger = logging.getLogger(__name__)

LISTING_FILE = "listing.sqlite"
VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    snapshot_key TEXT NOT NULL,
    log_key TEXT NOT NULL,
    title TEXT,
    created_at TEXT NOT NULL,
    state_updated_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    turns INTEGER NOT NULL,
    parent_session_id TEXT,
    phase TEXT
);
"""
SnapshotReader = Callable[[str], SessionState | None]


@dataclass(frozen=True)
class _Files:
    """What a session's row depends on."""

    snapshot_key: str  # "" without a snapshot
    log_key: str  # "" without a log
    log_mtime: datetime | None


@dataclass
class _Row:
    info: SessionInfo
    files: _Files
    state_updated_at: datetime


def _key(st: os.stat_result, with_inode: bool) -> str:
    parts = (st.st_ino, st.st_size, st.st_mtime_ns) if with_inode else (st.st_size, st.st_mtime_ns)
    return ":".join(map(str, parts))


def scan_files(sessions_dir: Path) -> dict[str, _Files]:
    """Return, per session id, the identity of its snapshot and log (one lstat per file)."""
    snapshots: dict[str, str] = {}
    logs: dict[str, tuple[str, datetime]] = {}
    try:
        entries = list(os.scandir(sessions_dir))
    except OSError:
        return {}
    for entry in entries:
        name = entry.name
        if name.endswith(".events.jsonl"):
            session_id, target = name[: -len(".events.jsonl")], "log"
        elif name.endswith(".json"):
            session_id, target = name[: -len(".json")], "snapshot"
        else:
            continue
        if not is_valid_session_id(session_id):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if target == "log":
            logs[session_id] = (_key(st, False), datetime.fromtimestamp(st.st_mtime, UTC))
        else:
            snapshots[session_id] = _key(st, True)
    out = {}
    for session_id in snapshots.keys() | logs.keys():
        log_key, log_mtime = logs.get(session_id, ("", None))
        out[session_id] = _Files(snapshots.get(session_id, ""), log_key, log_mtime)
    return out


class ListingIndex:
    """The cached rows of one project's session list."""

    def __init__(self, project_dir: Path) -> None:
        self.path = project_dir / LISTING_FILE

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection | None]:
        """Open the file (made anew if damaged or of another version); None if it cannot be."""
        for attempt in range(2):
            conn = self._open()
            if conn is None:
                yield None
                return
            try:
                with closing(conn):
                    ok = self._prepare(conn)
                    if ok:
                        yield conn
                        return
            except sqlite3.DatabaseError as exc:
                if attempt:
                    logger.warning("%s: not usable (%s); listing without it", self.path, exc)
                    yield None
                    return
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

    def sessions(self, sessions_dir: Path, read_snapshot: SnapshotReader) -> list[SessionInfo]:
        """Return every session of the project, newest first, refreshing what changed."""
        files = scan_files(sessions_dir)
        with self._connect() as conn:
            cached = self._load(conn) if conn is not None else {}
            rows: list[_Row] = []
            changed: list[_Row] = []
            for session_id, now in files.items():
                row = cached.get(session_id)
                stale = row is None or row.files.snapshot_key != now.snapshot_key
                if row is not None and not now.snapshot_key:  # listed from its log: re-read
                    stale = stale or row.files.log_key != now.log_key
                if stale or row is None:
                    row = self._read(session_id, sessions_dir, now, read_snapshot)
                    if row is None:
                        continue
                    changed.append(row)
                elif row.files.log_key != now.log_key:  # the log grew: only `updated_at` moves
                    updated = row.state_updated_at
                    if now.log_mtime is not None and now.log_mtime > updated:
                        updated = now.log_mtime
                    row.info.updated_at = updated
                    row.files = now
                    changed.append(row)
                rows.append(row)
            if conn is not None:
                self._store(conn, changed, [sid for sid in cached if sid not in files])
        infos = [row.info for row in rows]
        infos.sort(key=lambda info: info.updated_at, reverse=True)
        return infos

    def _read(
        self, session_id: str, sessions_dir: Path, now: _Files, read_snapshot: SnapshotReader
    ) -> _Row | None:
        state = read_snapshot(session_id) if now.snapshot_key else None
        state_updated = state.updated_at if state is not None else None
        info = session_info(session_id, state, sessions_dir / f"{session_id}.events.jsonl")
        if info is None:
            return None
        return _Row(info, now, state_updated or info.updated_at)

    def _load(self, conn: sqlite3.Connection) -> dict[str, _Row]:
        out = {}
        query = (
            "SELECT session_id, snapshot_key, log_key, title, created_at, state_updated_at,"
            " updated_at, turns, parent_session_id, phase FROM sessions"
        )
        for sid, snap, log, title, created, state_upd, upd, turns, parent, phase in conn.execute(
            query
        ):
            info = SessionInfo(
                sid,
                title,
                datetime.fromisoformat(created),
                datetime.fromisoformat(upd),
                int(turns),
                parent,
                phase,
            )
            # log_mtime is not stored: a row whose log key matches never needs it.
            out[sid] = _Row(info, _Files(snap, log, None), datetime.fromisoformat(state_upd))
        return out

    def _store(self, conn: sqlite3.Connection, rows: list[_Row], gone: list[str]) -> None:
        if not rows and not gone:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        r.info.session_id,
                        r.files.snapshot_key,
                        r.files.log_key,
                        r.info.title,
                        r.info.created_at.isoformat(),
                        r.state_updated_at.isoformat(),
                        r.info.updated_at.isoformat(),
                        r.info.turns,
                        r.info.parent_session_id,
                        r.info.phase,
                    )
                    for r in rows
                ],
            )
            conn.executemany("DELETE FROM sessions WHERE session_id = ?", [(g,) for g in gone])
            conn.execute("COMMIT")
        except sqlite3.Error as exc:  # busy, read-only, full disk: the next listing retries
            logger.info("%s: not updated (%s)", self.path, exc)
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
