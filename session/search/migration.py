"""Rebuilding an index of an older version in the background while it keeps answering.

The new tables are filled a few sessions per transaction (`build_step`), beside the old
ones, which answer searches meanwhile; syncs after turns already write the new tables.
When every session is in them, one transaction catches them up with the logs, drops the
old tables and sets the version: from then on every connection searches the new tables.
Several processes may build at once; each step skips what another already indexed. A
process that stops half way leaves the new tables as they are, and the next one goes on.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

from ..store.backend import BuildProgress
from .schema import LEGACY_TABLES, SCHEMA_VERSION
from .sync import SyncStats, indexed_sessions, optimize, ordered_sessions, sync_all, sync_one

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..local.layout import ProjectLayout


STEP_SECONDS = 0.25  # a step indexes sessions for about this long (at least one)
# Left with more than this share of free pages, the file is vacuumed once rebuilt.
SPARSE_SHARE = 0.25


def finish(conn: sqlite3.Connection, layout: ProjectLayout, stats: SyncStats) -> None:
    """Catch the new tables up with every log, drop the old tables, set this version."""
    sync_all(layout, merge=False)(conn, stats)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for name in LEGACY_TABLES.get(version, ()):
        conn.execute(f"DROP TABLE IF EXISTS {name}")
    optimize(conn)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def build_step(
    layout: ProjectLayout, report: list[BuildProgress]
) -> Callable[[sqlite3.Connection, SyncStats], None]:
    """Return one step of the rebuild (a transaction); it appends where it got to `report`."""

    def step(conn: sqlite3.Connection, stats: SyncStats) -> None:
        known = indexed_sessions(conn)
        present = ordered_sessions(layout, known)
        if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            report.append(BuildProgress(len(present), len(present), finished=True))
            return
        todo = [s for s in present if s not in known]
        deadline = time.monotonic() + STEP_SECONDS
        done = 0
        for session_id in todo:
            if done and time.monotonic() > deadline:
                report.append(BuildProgress(len(present), len(present) - len(todo) + done, False))
                return
            sync_one(conn, layout, session_id, stats)
            done += 1
        finish(conn, layout, stats)
        report.append(BuildProgress(len(present), len(present), finished=True))

    return step


def vacuum_if_sparse(conn: sqlite3.Connection) -> bool:
    """VACUUM the file if dropping the old tables left much of it free; return whether."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    if not pages or free <= SPARSE_SHARE * pages:
        return False
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return True
