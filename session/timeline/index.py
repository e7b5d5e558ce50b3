"""The path → changes index: `timeline.sqlite`, a machine-local cache rebuilt from the logs.

Like the search index (`session/search/`), it is a projection: deleting it loses nothing.
Each session is indexed up to `log_offset` (the end of event `last_seq`), `line_hash` being
the SHA-256 of the line ending there, so a log that shrank or was replaced is noticed and
indexed again; a log whose size is `scanned_size` still is not read at all. `catch_up` runs
before each query, so the answer is never behind the logs; with nothing appended it costs a
listing of the sessions, a `stat` of each log and no write. Another version of the file, or
a damaged one, is deleted and rebuilt; it is never opened through a symlink, and is mode 0600.

    logs(session_id PRIMARY KEY, log_offset, last_seq, line_hash, scanned_size, cursor)
    changes(path, session_id, seq, turn, step, ts, kind, tool, before, after, withheld,
            user_message)   -- `ts` in microseconds since the epoch (UTC)
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

import orjson

from ..log.reader import scan_log
from ..search.sync import _line_hash
from ..storage import FILE_MODE, ensure_private_dir
from .project import ChangeRow, Cursor, project

if TYPE_CHECKING:
    from ..local.layout import ProjectLayout

    pass

INDEX_FILE = "timeline.sqlite"
VERSION = 1
_SIDECARS = ("-wal", "-shm", "-journal")
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS logs (session_id TEXT PRIMARY KEY, log_offset INTEGER NOT NULL,"
    " last_seq INTEGER NOT NULL, line_hash BLOB, scanned_size INTEGER NOT NULL, cursor TEXT)",
    "CREATE TABLE IF NOT EXISTS changes (path TEXT NOT NULL, session_id TEXT NOT NULL,"
    " seq INTEGER NOT NULL, turn INTEGER, step INTEGER, ts INTEGER NOT NULL,"
    " kind TEXT NOT NULL, tool TEXT, before TEXT, after TEXT, withheld TEXT, user_message TEXT)",
    "CREATE INDEX IF NOT EXISTS changes_by_path ON changes (path, ts)",
    "CREATE INDEX IF NOT EXISTS changes_by_session ON changes (session_id)",
)
_COLUMNS = (
    "path, session_id, seq, turn, step, ts, kind, tool, before, after, withheld, user_message"
)


class TimelineError(Exception):
    """The index cannot be used (with why, for the user)."""


def to_micros(ts: datetime) -> int:
    """Return `ts` as microseconds since the epoch."""
    moment = ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int) -> datetime:
    """Return the aware UTC time of microseconds since the epoch."""
    return datetime.fromtimestamp(value // 1_000_000, UTC).replace(microsecond=value % 1_000_000)


def _row(values: tuple[object, ...]) -> ChangeRow:
    path, sid, seq, turn, step, ts, kind, tool, before, after, withheld, message = values
    return ChangeRow(
        path=str(path),
        session_id=str(sid),
        seq=int(seq),  # type: ignore[call-overload]
        turn=turn,  # type: ignore[arg-type]
        step=step,  # type: ignore[arg-type]
        ts=from_micros(int(ts)),  # type: ignore[call-overload]
        kind=str(kind),
        tool=tool,  # type: ignore[arg-type]
        before=before,  # type: ignore[arg-type]
        after=after,  # type: ignore[arg-type]
        withheld=withheld,  # type: ignore[arg-type]
        user_message=message,  # type: ignore[arg-type]
    )


class TimelineIndex:
    """The connection to one project's `timeline.sqlite`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None

    @classmethod
    def for_project(cls, layout: ProjectLayout) -> TimelineIndex:
        """Return the index of `layout`'s project (opened at first use)."""
        return cls(layout.project_dir / INDEX_FILE)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (the next use opens it again)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- the file ------------------------------------------------------------------------

    def _delete_files(self) -> None:
        for name in (self.path.name, *(self.path.name + s for s in _SIDECARS)):
            try:
                os.unlink(self.path.with_name(name))
            except FileNotFoundError:
                pass

    def _open(self) -> sqlite3.Connection:
        ensure_private_dir(self.path.parent)
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            st = None
        if st is not None and (not stat.S_ISREG(st.st_mode) or st.st_nlink > 1):
            raise TimelineError(f"{self.path} is not a plain file; refusing to use it")
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        os.close(os.open(self.path, flags, FILE_MODE))
        conn = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            if conn.execute("PRAGMA user_version").fetchone()[0] != VERSION:
                conn.execute("BEGIN IMMEDIATE")  # (two processes may open it first at once)
                if conn.execute("PRAGMA user_version").fetchone()[0] != VERSION:
                    conn.execute("DROP TABLE IF EXISTS logs")
                    conn.execute("DROP TABLE IF EXISTS changes")
                    for statement in _SCHEMA:
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {VERSION}")
                conn.execute("COMMIT")
            conn.execute("SELECT count(*) FROM logs").fetchone()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self._conn = self._open()
            except sqlite3.DatabaseError as exc:
                if not _is_corrupt(exc):  # busy, read-only...: say so, delete nothing
                    raise TimelineError(f"the file-history index cannot be opened: {exc}") from None
                self._delete_files()  # damaged: it is only a cache
                self._conn = self._open()
        return self._conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # -- catching up ---------------------------------------------------------------------

    def catch_up(self, layout: ProjectLayout) -> int:
        """Index what the project's logs gained since; return how many logs were read."""
        try:
            return self._catch_up(layout)
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise TimelineError(f"the file-history index failed: {exc}") from None
            self.close()
            self._delete_files()
            return self._catch_up(layout)

    def _catch_up(self, layout: ProjectLayout) -> int:
        present = set(layout.session_ids())
        conn = self._connection()
        sizes = dict(conn.execute("SELECT session_id, scanned_size FROM logs").fetchall())
        stale = set(sizes) - present
        for session_id in present:  # a stat each, no open: nothing appended, nothing read
            try:
                size = os.stat(layout.log_path(session_id), follow_symlinks=False).st_size
            except OSError:
                size = -1
            if sizes.get(session_id) != size:
                stale.add(session_id)
        if not stale:
            return 0
        read = 0
        with self._transaction() as conn:
            known = {
                row[0]: row[1:]
                for row in conn.execute(
                    "SELECT session_id, log_offset, last_seq, line_hash, scanned_size, cursor"
                    " FROM logs"
                )
            }
            for session_id in sorted(stale):
                if session_id not in present:
                    _drop(conn, session_id)
                else:
                    read += _sync_one(conn, layout.log_path(session_id), session_id, known)
        return read

    def changes(
        self, path: str, since: datetime | None = None, until: datetime | None = None
    ) -> Iterator[ChangeRow]:
        """Yield the indexed changes of `path`, newest first."""
        sql = f"SELECT {_COLUMNS} FROM changes WHERE path = ?"  # noqa: S608
        args: list[object] = [path]
        if since is not None:
            sql += " AND ts >= ?"
            args.append(to_micros(since))
        if until is not None:
            sql += " AND ts < ?"
            args.append(to_micros(until))
        sql += " ORDER BY ts DESC, session_id DESC, seq DESC"
        for values in self._connection().execute(sql, args):
            yield _row(values)

    def titles(self, session_ids: set[str]) -> dict[str, str | None]:
        """Return the sessions' titles (their first message, as the listing shows it)."""
        found: dict[str, str | None] = {}
        conn = self._connection()
        for session_id in session_ids:
            row = conn.execute("SELECT cursor FROM logs WHERE session_id = ?", (session_id,))
            cursor = row.fetchone()
            found[session_id] = (
                orjson.loads(cursor[0]).get("title") if cursor and cursor[0] else None
            )
        return found


def _is_corrupt(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (11, 26):  # SQLITE_CORRUPT, SQLITE_NOTADB
        return True
    return "malformed" in str(exc) or "not a database" in str(exc)


def _drop(conn: sqlite3.Connection, session_id: str) -> None:
    conn.execute("DELETE FROM changes WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM logs WHERE session_id = ?", (session_id,))


def _sync_one(
    conn: sqlite3.Connection, log: Path, session_id: str, known: dict[str, tuple[object, ...]]
) -> int:
    """Index one log from where it was indexed; return 1 if it was read."""
    try:
        fd = os.open(log, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        if session_id in known:
            _drop(conn, session_id)
        return 0
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return 0
        offset, last_seq, cursor = 0, -1, Cursor()
        if session_id in known:
            k_offset, k_seq, k_hash, k_size, k_cursor = known[session_id]
            if st.st_size == k_size:
                return 0  # nothing appended since
            if st.st_size >= int(k_offset) and _line_hash(fd, int(k_offset)) == k_hash:  # type: ignore[call-overload]
                offset, last_seq = int(k_offset), int(k_seq)  # type: ignore[call-overload]
                cursor = Cursor(**orjson.loads(str(k_cursor)))
            else:  # shrunk or replaced: index it again from the start
                _drop(conn, session_id)
        scan = scan_log(log, offset, last_seq + 1)
        rows = project(session_id, scan.events, cursor)
        conn.executemany(
            f"INSERT INTO changes ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: S608
            [
                (
                    r.path,
                    r.session_id,
                    r.seq,
                    r.turn,
                    r.step,
                    to_micros(r.ts),
                    r.kind,
                    r.tool,
                    r.before,
                    r.after,
                    r.withheld,
                    r.user_message,
                )
                for r in rows
            ],
        )
        if scan.events:
            offset, last_seq = scan.end_offset, scan.events[-1].seq
        conn.execute(
            "INSERT OR REPLACE INTO logs (session_id, log_offset, last_seq, line_hash,"
            " scanned_size, cursor) VALUES (?, ?, ?, ?, ?, ?)",
            (
                session_id,
                offset,
                last_seq,
                _line_hash(fd, offset),
                st.st_size,
                orjson.dumps(asdict(cursor)).decode(),
            ),
        )
        return 1
    finally:
        os.close(fd)
