"""SearchIndex: the search index of a project as the rest of the product uses it.

Syncs run in one transaction each, skipped (and caught up later) when another process
holds the index or the store refuses writes; a damaged index is rebuilt whole. An index of
an older version answers searches while this version's is built (`migrating`,
`build_step`), or at once by `sync()` and `rebuild()`.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..paths import is_valid_session_id
from ..store.backend import BuildProgress
from . import schema
from .database import _BUSY_CODES, _NO_SPACE_CODES, IndexDatabase, _CorruptIndexError, _error_code
from .filters import NO_FILTER, SearchFilter
from .legacy import legacy_query
from .migration import build_step, finish, vacuum_if_sparse
from .query import SearchHit, run_query
from .schema import (
    INDEX_FILE,
    SCHEMA_VERSION,
    SearchError,
    _session_range,
    create_statements,
    drop_statements,
    execute_all,
    has_table,
)
from .sync import SyncStats, note_new_rows, sync_all, sync_one

if TYPE_CHECKING:
    from ..local.layout import ProjectLayout

    pass

logger = logging.getLogger(__name__)


class SearchIndex(IndexDatabase):
    """The search index of one project (`index.sqlite`); safe to use from several threads.

    Call `sync()` (every session) or `sync_session()` (one, e.g. after each turn) to bring
    it up to date with the logs, then `search()`. Several processes may share the file:
    writes are serialized by SQLite (one transaction per sync), readers are never blocked.
    """

    _builder: SearchIndex | None = None  # the connection a background rebuild writes with

    @classmethod
    def for_project(cls, layout: ProjectLayout) -> SearchIndex:
        """Return the index of `layout`'s project (`<project dir>/index.sqlite`)."""
        return cls(layout.project_dir / INDEX_FILE)

    def close(self) -> None:
        """Close the database connections (the next call opens them again)."""
        with self._lock:
            super().close()
            if self._builder is not None:
                self._builder.close()
                self._builder = None

    def _current(self, conn: sqlite3.Connection) -> int | None:
        """Return the older version answering searches (re-read: another may have finished)."""
        if self.legacy is not None:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == SCHEMA_VERSION:
                self.legacy = None
                self.grams = schema.trigram_available() and has_table(conn, "event_grams")
        return self.legacy

    @property
    def migrating(self) -> bool:
        """Whether an index of an older version answers searches while this one is built."""
        with self._lock:
            try:
                return self._attempt(self._current) is not None
            except _CorruptIndexError as exc:
                self._discard(str(exc))
                return False
            except sqlite3.Error as exc:
                raise SearchError(f"{self.path}: {exc}") from None

    # -- writing -----------------------------------------------------------------------

    def _write(
        self, fn: Callable[[sqlite3.Connection, SyncStats], None], layout: ProjectLayout
    ) -> SyncStats:
        with self._lock:
            stats = SyncStats()
            if self.read_only:
                self.close()  # look again: the store may be writable by now
                self._connection()
                if self.read_only:
                    stats.skipped = "the store is not writable: searching the index as it is"
                    return stats

            def unless_read_only(conn: sqlite3.Connection) -> None:
                if self.read_only:  # found out on opening it just now
                    stats.skipped = "the store is not writable: searching the index as it is"
                else:
                    self._transaction(conn, fn, stats)

            try:
                self._attempt(unless_read_only)
                return stats
            except _CorruptIndexError as exc:
                self._discard(str(exc))
            except sqlite3.Error as exc:
                return self._failed(exc, stats)
            # The index was damaged: rebuild all of it, whatever was asked.
            stats = SyncStats(index_recreated=True)
            try:
                self._attempt(lambda conn: self._transaction(conn, sync_all(layout), stats))
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

    def sync(self, layout: ProjectLayout) -> SyncStats:
        """Bring the index up to date with every log of the project (one transaction).

        An index being rebuilt from an older version is finished at once.
        """
        index_all = sync_all(layout)

        def sync(conn: sqlite3.Connection, stats: SyncStats) -> None:
            if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
                index_all(conn, stats)
            else:
                finish(conn, layout, stats)

        stats = self._write(sync, layout)
        with self._lock:
            if stats.skipped is None:
                self._attempt(self._current)
        return stats

    def sync_session(self, layout: ProjectLayout, session_id: str) -> SyncStats:
        """Bring one session up to date (e.g. after each turn); raise ValueError on a bad id."""
        _check_id(session_id)

        def one(conn: sqlite3.Connection, stats: SyncStats) -> None:
            sync_one(conn, layout, session_id, stats)
            note_new_rows(conn, stats.rows)

        return self._write(one, layout)

    def rebuild(self, layout: ProjectLayout) -> SyncStats:
        """Drop everything and index every log from the start (one transaction)."""
        index_all = sync_all(layout)

        def rebuild(conn: sqlite3.Connection, stats: SyncStats) -> None:
            execute_all(conn, drop_statements())
            execute_all(conn, create_statements(schema.trigram_available()))
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            index_all(conn, stats)

        stats = self._write(rebuild, layout)
        if stats.skipped is None:
            self.legacy = None
            self.grams = schema.trigram_available()
        return stats

    def build_step(self, layout: ProjectLayout) -> BuildProgress:
        """Index a few more sessions into the new tables of an index being rebuilt.

        Each step is a transaction of its own connection (searches on this handle are not
        held up); the last one swaps the tables, after which the file may be vacuumed.
        Call it until `finished`; on an index of this version it is finished at once.
        """
        with self._lock:
            if self._builder is None:
                self._builder = SearchIndex(self.path, busy_timeout=self.busy_timeout)
            builder = self._builder
        report: list[BuildProgress] = []
        stats = builder._write(build_step(layout, report), layout)
        if stats.index_recreated:  # it was damaged: rebuilt whole, in this version
            report.append(BuildProgress(stats.sessions, stats.sessions, finished=True))
        elif builder.read_only:  # the old index answers until the store is writable
            raise SearchError(f"{self.path} cannot be rebuilt now: {stats.skipped}")
        elif not report:  # another process held the index: try again later
            report.append(BuildProgress(stats.sessions, 0, finished=False))
        if report[-1].finished:
            with builder._lock:
                try:
                    builder._attempt(vacuum_if_sparse)
                except sqlite3.Error as exc:  # another connection was busy: it stays as is
                    logger.info("%s not vacuumed after the rebuild: %s", self.path, exc)
                builder.close()
        return report[-1]

    # -- reading -----------------------------------------------------------------------

    def search(
        self,
        query: str,
        session_id: str | None = None,
        limit: int = 50,
        filters: SearchFilter | None = None,
    ) -> list[SearchHit]:
        """Find the events whose text contains `query` (literal; after NFKC and case folding).

        Best matches first (`rank`); across sessions the hits are grouped by session,
        sessions ordered by their best hit. `session_id` restricts the search to one session,
        `filters` to some times, kinds, tools, paths (`filters.py`). While an older index
        answers (`migrating`), it is searched as that version did, and cannot be filtered
        (SearchError: `sync()` finishes the new one).
        """
        if session_id is not None:
            _check_id(session_id)
        if limit <= 0 or not query.strip():
            return []

        narrowed = NO_FILTER if filters is None else filters

        def run(conn: sqlite3.Connection) -> list[SearchHit]:
            if self._current(conn) is not None:
                if not narrowed.empty:
                    raise SearchError("the search index is being rebuilt: filters work once it is")
                return legacy_query(conn, query, session_id, limit)
            return run_query(conn, query, session_id, limit, self.grams, narrowed)

        with self._lock:
            try:
                return self._attempt(run)
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
                return int(conn.execute("SELECT count(*) FROM event_rows").fetchone()[0])
            found = conn.execute(
                "SELECT num FROM indexed_logs WHERE session_id = ?", (session_id,)
            ).fetchone()
            if found is None:
                return 0
            return int(
                conn.execute(
                    "SELECT count(*) FROM event_rows WHERE id BETWEEN ? AND ?",
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
