"""How far the search index is behind the logs, read without opening it for writing."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .schema import INDEX_FILE, LEGACY_TABLES

if TYPE_CHECKING:
    from ..local.layout import ProjectLayout


@dataclass
class IndexFreshness:
    """What `agent-assist doctor` reports about a project's index."""

    exists: bool
    symlink: bool = False
    error: str | None = None  # unreadable: why (it is rebuilt on the next search)
    indexed: dict[str, int] = field(default_factory=dict)  # session → log bytes indexed
    stale: list[str] = field(default_factory=list)  # sessions whose log grew since


def index_freshness(layout: ProjectLayout) -> IndexFreshness:
    """Compare the bytes of each log the index covers with the log's size now."""
    path = layout.project_dir / INDEX_FILE
    if path.is_symlink():
        return IndexFreshness(exists=True, symlink=True)
    if not path.exists():
        return IndexFreshness(exists=False)
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            # an index being rebuilt from an older version answers with the older tables
            table = "sessions" if version in LEGACY_TABLES else "indexed_logs"
            rows = conn.execute(f"SELECT session_id, scanned_size FROM {table}").fetchall()  # noqa: S608
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return IndexFreshness(exists=True, error=str(exc))
    indexed = {str(sid): int(size) for sid, size in rows}
    stale = []
    for session_id in layout.session_ids():
        log = layout.log_path(session_id)
        size = log.stat().st_size if log.exists() else 0
        if indexed.get(session_id, -1) != size:
            stale.append(session_id)
    return IndexFreshness(exists=True, indexed=indexed, stale=stale)
