"""One search: every event whose text contains the query, best first, with snippets.

The query is folded (`text.fold`) and taken literally. Candidates come newest first from
the trigram index and each is checked against the stored text (`instr` on the folded
text), so a hit always contains the query:

- three characters or more: rows holding the query's trigrams worth looking up (rare ones;
  a frequent trigram's doclist costs more than it filters, see `grams.py`);
- one or two characters: no trigram is that short, so the newest `SCAN_ROWS` rows are
  read directly (a frequent letter fills the window there), then the rows holding any
  trigram that starts with the query (every character starts one: `GRAM_END`), or, when
  there are more than `MAX_TERMS` such trigrams, every older row;
- without the trigram tokenizer (SQLite < 3.34): every row, newest first.

At most `WINDOW` (or `limit`, if larger) matches are taken, the newest; they are ranked
(`rank.rank`) and the best `limit` get their snippets. A query that matches more rows
than that is ranked among its newest matches.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, NamedTuple

from .filters import NO_FILTER, SearchFilter
from .grams import choose_grams, quoted
from .rank import rank, snippet
from .schema import _session_range, from_micros, rowid_seq, to_micros
from .text import clean, fold

WINDOW = 150
SCAN_ROWS = 2_000
MAX_TERMS = 1_000
_LAST = (1 << 63) - 1
_MAX_CHAR = "\U0010ffff"

# `{}`: the filter's conditions (`_where`), made of constants only; its values are bound.
_GRAMS_SQL = (
    "SELECT event_rows.id, coalesce(norm, lower(text)) FROM event_grams"
    " JOIN event_rows ON event_rows.id = event_grams.rowid"
    " WHERE event_grams MATCH ? AND event_grams.rowid BETWEEN ? AND ?{}"
    " AND instr(coalesce(norm, lower(text)), ?) > 0"
    " ORDER BY event_grams.rowid DESC LIMIT ?"
)
_SCAN_SQL = (  # the newest `rows` rows of a range (-1: all), those that contain the query
    "SELECT id, n FROM (SELECT id, coalesce(norm, lower(text)) AS n FROM event_rows"
    " WHERE id BETWEEN ? AND ?{} ORDER BY id DESC LIMIT ?) WHERE instr(n, ?) > 0 LIMIT ?"
)
_EDGE_SQL = "SELECT id FROM event_rows WHERE id BETWEEN ? AND ?{} ORDER BY id DESC LIMIT 1 OFFSET ?"
_TERMS_SQL = "SELECT term FROM temp.event_terms WHERE term >= ? AND term <= ?"
_VOCAB_SQL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.event_terms USING fts5vocab(main, event_grams, row)"
)
_DETAILS_SQL = (
    "SELECT event_rows.id, turn, type, text, coalesce(norm, lower(text)), session_id, step, ts"
    " FROM event_rows JOIN indexed_logs ON indexed_logs.num = event_rows.id >> 40"
    " WHERE event_rows.id IN ({})"
)


class SearchHit(NamedTuple):
    """One matching event: where it is, its text around the match, and how well it matched.

    `snippet` marks the matches with `[` `]`; `score` is higher for better matches (see
    `rank`). `type` is the event type the text came from (`assistant/chunk` for streamed
    text that no `assistant/message` holds). A named tuple: a search returns up to `limit`
    of them and building frozen dataclasses cost more than the rest of a small query.
    """

    session_id: str
    seq: int
    turn: int | None
    type: str
    snippet: str
    score: float
    step: int | None = None  # the step of the turn (None: not in a step)
    ts: datetime | None = None  # the event's time (None from an index of version 2)


class _Where(NamedTuple):
    """A filter as SQL: conditions to append (` AND ...`) and the values they bind."""

    sql: str
    params: tuple[Any, ...]


def _where(filters: SearchFilter) -> _Where:
    """Return the conditions on `event_rows` of a filter (see `filters.py`)."""
    parts: list[str] = []
    params: list[Any] = []
    if filters.since is not None:
        parts.append("ts >= ?")
        params.append(to_micros(filters.since))
    if filters.until is not None:
        parts.append("ts < ?")
        params.append(to_micros(filters.until))
    if filters.types:
        parts.append(f"type IN ({', '.join('?' * len(filters.types))})")
        params.extend(filters.types)
    if filters.tool is not None:
        parts.append("tool = ?")
        params.append(filters.tool)
    if filters.path is not None:
        parts.append("(instr(paths, ?) > 0 OR instr(paths, ?) > 0)")
        params.extend((f"\n{filters.path}\n", f"\n{filters.path}/"))
    return _Where("".join(f" AND {part}" for part in parts), tuple(params))


_ALL = _Where("", ())


def grouped_by_session(hits: Iterable[SearchHit]) -> list[SearchHit]:
    """Group hits (best first) by session, sessions in the order of their best hit."""
    groups: dict[str, list[SearchHit]] = {}
    for hit in hits:
        found = groups.get(hit.session_id)
        if found is None:
            groups[hit.session_id] = [hit]
        else:
            found.append(hit)
    if len(groups) == 1:
        return next(iter(groups.values()))
    return [hit for hits in groups.values() for hit in hits]


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """Run the statements of the block in one read transaction."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")  # nothing was written


def _scan(
    conn: sqlite3.Connection, query: str, span: tuple[int, int], where: _Where, rows: int, want: int
) -> list[Any]:
    sql = _SCAN_SQL.format(where.sql)
    return conn.execute(sql, (*span, *where.params, rows, query, want)).fetchall()


def _grams(
    conn: sqlite3.Connection,
    expression: str,
    query: str,
    span: tuple[int, int],
    where: _Where,
    want: int,
) -> list[Any]:
    sql = _GRAMS_SQL.format(where.sql)
    return conn.execute(sql, (expression, *span, *where.params, query, want)).fetchall()


def _short(
    conn: sqlite3.Connection, query: str, span: tuple[int, int], where: _Where, want: int
) -> list[Any]:
    """Return the matches of a query of one or two characters (see the module docstring)."""
    lo, hi = span
    found = _scan(conn, query, span, where, SCAN_ROWS, want)
    if len(found) >= want:
        return found
    edge_sql = _EDGE_SQL.format(where.sql)
    edge = conn.execute(edge_sql, (lo, hi, *where.params, SCAN_ROWS - 1)).fetchone()
    if edge is None:  # the range has no more rows than that: all were read
        return found
    older = (lo, edge[0] - 1)
    conn.execute(_VOCAB_SQL)
    bound = query + _MAX_CHAR * (3 - len(query))
    terms = [term for (term,) in conn.execute(_TERMS_SQL, (query, bound))]
    if len(terms) > MAX_TERMS:
        return found + _scan(conn, query, older, where, -1, want - len(found))
    if not terms:
        return found
    expression = " OR ".join(quoted(term) for term in terms)
    return found + _grams(conn, expression, query, older, where, want - len(found))


def _matches(
    conn: sqlite3.Connection,
    query: str,
    span: tuple[int, int],
    where: _Where,
    want: int,
    grams: bool,
) -> list[Any]:
    """Return (rowid, folded text) of the newest `want` rows in `span` containing `query`."""
    if not grams:
        return _scan(conn, query, span, where, -1, want)
    if len(query) >= 3:
        return _grams(conn, choose_grams(conn, query), query, span, where, want)
    return _short(conn, query, span, where, want)


def _details_sql(count: int) -> tuple[str, int]:
    """Return `_DETAILS_SQL` for `count` rowids and its number of placeholders.

    Rounded up to a power of two (the caller pads with NULLs): few distinct statements to
    prepare, and no dependency on the JSON1 functions for passing a list.
    """
    size = 8
    while size < count:
        size *= 2
    return _DETAILS_SQL.format(", ".join("?" * size)), size


def run_query(
    conn: sqlite3.Connection,
    query: str,
    session_id: str | None,
    limit: int,
    grams: bool,
    filters: SearchFilter = NO_FILTER,
) -> list[SearchHit]:
    """Run one search (see `SearchIndex.search`); `grams`: the trigram table is there."""
    folded = fold(clean(query))
    lo, hi = 0, _LAST
    with _snapshot(conn):  # the rows ranked are the rows shown
        if session_id is not None:
            found = conn.execute("SELECT num FROM indexed_logs WHERE session_id = ?", (session_id,))
            row = found.fetchone()
            if row is None:
                return []
            lo, hi = _session_range(row[0])
        where = _ALL if filters.empty else _where(filters)
        matches = _matches(conn, folded, (lo, hi), where, max(WINDOW, limit), grams)
        best = rank(matches, folded)[:limit]
        if not best:
            return []
        sql, size = _details_sql(len(best))
        ids = [rowid for _score, rowid in best]
        found = conn.execute(sql, (*ids, *[None] * (size - len(ids))))
        details = {row[0]: row[1:] for row in found}
    hits = []
    for score, rowid in best:
        found_row = details.get(rowid)
        if found_row is None:
            continue
        turn, type_, text, norm, owner, step, ts = found_row
        shown = snippet(text, norm, folded)
        when = None if ts is None else from_micros(ts)
        hits.append(SearchHit(owner, rowid_seq(rowid), turn, type_, shown, score, step, when))
    return grouped_by_session(hits)
