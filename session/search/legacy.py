"""Searching an index of schema version 2 while this version's tables are built beside it.

Version 2 indexed words (FTS5 `unicode61`): the query is one phrase of words, ranked by
bm25. It answers only until the rebuild is complete (`SearchIndex.build_step`), then its
tables are dropped.
"""

from __future__ import annotations

import sqlite3

from .query import SearchHit, grouped_by_session
from .schema import _session_range
from .text import clean

_QUERY_SQL = (
    "SELECT session_id, seq, turn, type, snippet(event_text, 0, '[', ']', '…', 12),"
    " -bm25(event_text) FROM event_text WHERE event_text MATCH ? AND rowid BETWEEN ? AND ?"
    " ORDER BY bm25(event_text), rowid LIMIT ?"
)


def legacy_query(
    conn: sqlite3.Connection, query: str, session_id: str | None, limit: int
) -> list[SearchHit]:
    """Search the version 2 tables (`event_text`, `sessions`) as version 2 did."""
    phrase = '"' + clean(query).replace('"', '""') + '"'
    lo, hi = 0, (1 << 63) - 1
    if session_id is not None:
        found = conn.execute("SELECT num FROM sessions WHERE session_id = ?", (session_id,))
        row = found.fetchone()
        if row is None:
            return []
        lo, hi = _session_range(row[0])
    rows = conn.execute(_QUERY_SQL, (phrase, lo, hi, limit)).fetchall()
    return grouped_by_session(SearchHit(*row) for row in rows)
