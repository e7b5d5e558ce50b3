"""SearchIndex: the search index of a project as the rest of the product uses it.

Syncs run in one transaction each, skipped (and caught up later) when another process
holds the index or the store refuses writes; a damaged index is rebuilt whole.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..paths import is_valid_session_id
from .database import _BUSY_CODES, _NO_SPACE_CODES, IndexDatabase, _CorruptIndexError, _error_code
from .query import SearchHit, _query
from .schema import _DROP, _SCHEMA, INDEX_FILE, SearchError, _execute_script, _session_range
from .sync import SyncStats, sync_all, sync_one

if TYPE_CHECKING:
    from ..store.manager import SessionManager

logger = logging.getLogger(__name__)


class SearchIndex(IndexDatabase):
    """The search index of one project (`index.sqlite`); safe to use from several threads.

    Call `sync()` (every session) or `sync_session()` (one, e.g. after each turn) to bring
    it up to date with the logs, then `search()`. Several processes may share the file:
    writes are serialized by SQLite (one transaction per sync), readers are never blocked.
    """

    @classmethod
    def for_project(cls, manager: SessionManager) -> SearchIndex:
        """Return the index of `manager`'s project (`<project dir>/index.sqlite`)."""
        return cls(manager.project_dir / INDEX_FILE)

    # -- writing -----------------------------------------------------------------------

    def _write(
        self, fn: Callable[[sqlite3.Connection, SyncStats], None], manager: SessionManager
    ) -> SyncStats:
        with self._lock:
            stats = SyncStats()
            if self.read_only:
                self.close()  # look again: the store may be writable by now
                self._connection()
                if self.read_only:
                    stats.skipped = "the store is not writable: searching the index as it is"
                    return stats
            try:
                self._attempt(lambda conn: self._transaction(conn, fn, stats))
                return stats
            except _CorruptIndexError as exc:
                self._discard(str(exc))
            except sqlite3.Error as exc:
                return self._failed(exc, stats)
            # The index was damaged: rebuild all of it, whatever was asked.
            stats = SyncStats(index_recreated=True)
            try:
                self._attempt(lambda conn: self._transaction(conn, sync_all(manager), stats))
            except _CorruptIndexError as exc:
                raise SearchError(f"{self.path} is still damaged after rebuilding: {exc}") from None
            except sqlite3.Error as exc:
                return self._failed(exc, stats)
            return stats

    def _failed(self, exc: sqlite3.Error, stats: SyncStats) -> SyncStats:
        if _error_code(exc) in _BUSY_CODES:
            logger.warning("%s is busy (%s); the next sync catches up", self.path, exc)
            stats.skipped = f"index busy: {exc}"
            return stats
        if _error_code(exc) in _NO_SPACE_CODES:  # the existing index still answers searches
            logger.warning("%s cannot be written (%s); searching it as it is", self.path, exc)
            stats.skipped = f"index not writable: {exc}"
            return stats
        raise SearchError(f"{self.path}: {exc}") from None

    @staticmethod
    def _transaction(
        conn: sqlite3.Connection,
        fn: Callable[[sqlite3.Connection, SyncStats], None],
        stats: SyncStats,
    ) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            fn(conn, stats)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def sync(self, manager: SessionManager) -> SyncStats:
        """Bring the index up to date with every log of the project (one transaction)."""
        return self._write(sync_all(manager), manager)

    def sync_session(self, manager: SessionManager, session_id: str) -> SyncStats:
        """Bring one session up to date (e.g. after each turn); raise ValueError on a bad id."""
        _check_id(session_id)

        def one(conn: sqlite3.Connection, stats: SyncStats) -> None:
            sync_one(conn, manager, session_id, stats)

        return self._write(one, manager)

    def rebuild(self, manager: SessionManager) -> SyncStats:
        """Drop everything and index every log from the start (one transaction)."""
        index_all = sync_all(manager)

        def rebuild(conn: sqlite3.Connection, stats: SyncStats) -> None:
            _execute_script(conn, _DROP + _SCHEMA)
            index_all(conn, stats)

        return self._write(rebuild, manager)

    # -- reading -----------------------------------------------------------------------

    def search(self, query: str, session_id: str | None = None, limit: int = 50) -> list[SearchHit]:
        """Find events whose text contains `query` as a phrase (literal, case-insensitive).

        Best matches first (bm25); across sessions the hits are grouped by session, sessions
        ordered by their best hit. `session_id` restricts the search to one session.
        """
        if session_id is not None:
            _check_id(session_id)
        if limit <= 0 or not query.strip():
            return []
        with self._lock:
            try:
                return self._attempt(lambda conn: _query(conn, query, session_id, limit))
            except _CorruptIndexError as exc:
                self._discard(str(exc))
                return []
            except sqlite3.Error as exc:
                raise SearchError(f"{self.path}: {exc}") from None

    def row_count(self, session_id: str | None = None) -> int:
        """Return how many text rows are indexed (for one session, or all)."""
        if session_id is not None:
            _check_id(session_id)

        def count(conn: sqlite3.Connection) -> int:
            if session_id is None:
                return int(conn.execute("SELECT count(*) FROM event_text").fetchone()[0])
            found = conn.execute(
                "SELECT num FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            if found is None:
                return 0
            return int(
                conn.execute(
                    "SELECT count(*) FROM event_text WHERE rowid BETWEEN ? AND ?",
                    _session_range(found[0]),
                ).fetchone()[0]
            )

        with self._lock:
            try:
                return self._attempt(count)
            except _CorruptIndexError as exc:
                self._discard(str(exc))
                return 0


def _check_id(session_id: str) -> None:
    if not is_valid_session_id(session_id):
        raise ValueError(f"invalid session id {session_id!r} (12 lowercase hex characters)")
