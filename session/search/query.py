"""One search: a literal phrase query, ranked with FTS5's bm25, with snippets.

A search is one phrase query. bm25() reads the phrase's doclists twice (the second pass
counts the matching rows, for the IDF) and `ORDER BY rank` prepares a statement per query,
so `_query` mostly does without them: most phrases match a handful of rows, and one pass
fetches them all with their snippets and what bm25 needs (occurrences, row length, table
totals), scored in Python with FTS5's own formula. A query with many matches is ranked by
FTS5 (`ORDER BY bm25 LIMIT`) and a second pass makes snippets of the best rows only.
"""

from __future__ import annotations

import math
import re
import sqlite3
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from .extract import _clean
from .schema import _session_range

# How a search runs (see `_query`). Snippets: matches in [ ], cut with …, at
# most 12 tokens. Every match in rowid order, with its snippet and what bm25 needs: the
# phrase's occurrences in the row (the `]`s highlight() adds), the row's length in tokens
# (FTS5's docsize record) and the table's row and token counts (its averages record, read
# once per statement).
_MATCHES_SQL = (
    "SELECT rowid, session_id, seq, turn, type, snippet(event_text, 0, '[', ']', '…', 12),"
    " length(highlight(event_text, 0, '', ']')) - length(text),"
    " (SELECT sz FROM event_text_docsize WHERE id = event_text.rowid),"
    " (SELECT block FROM event_text_data WHERE id = 1)"
    " FROM event_text WHERE event_text MATCH ?"
)
_COUNT_SQL = "SELECT count(*) FROM (SELECT 1 FROM event_text WHERE event_text MATCH ? LIMIT ?)"
# Too many matches to make a snippet of each: FTS5 ranks them (bm25), snippets of the best.
_TOP_SQL = (
    "SELECT rowid, -bm25(event_text) AS score FROM event_text WHERE event_text MATCH ?"
    " AND rowid BETWEEN ? AND ? ORDER BY score DESC, rowid LIMIT ?"
)
_SNIPPETS_SQL = (  # `+rowid`: scan the matches, not one FTS5 lookup per rowid
    "SELECT rowid, session_id, seq, turn, type, snippet(event_text, 0, '[', ']', '…', 12)"
    " FROM event_text WHERE event_text MATCH ? AND rowid BETWEEN ? AND ? AND +rowid IN ({})"
)
# Matches fetched with their snippets before counting them: n_rows / _ROWS_PER_SNIPPET (a
# snippet costs about as much as a phrase's doclists for 1,000 rows), at least _MIN_BUDGET.
_ROWS_PER_SNIPPET = 1000
_MIN_BUDGET = 8
_BM25_K1 = 1.2  # FTS5's bm25() constants
_BM25_B = 0.75
_WORD = re.compile(r"[^\W_]+")  # roughly a unicode61 token


class SearchHit(NamedTuple):
    """One matching event: where it is, its text around the match, and how well it matched.

    `snippet` marks the matched words with `[` `]`; `score` is the negated bm25 rank
    (higher is better). `type` is the event type the text came from (`assistant/chunk` for
    streamed text that no `assistant/message` holds). A named tuple: a search returns up to
    `limit` of them and building frozen dataclasses cost more than the rest of a small query.
    """

    session_id: str
    seq: int
    turn: int | None
    type: str
    snippet: str
    score: float


def fts_phrase(query: str) -> str:
    """Quote `query` as one FTS5 phrase: every character is literal, operators included."""
    return '"' + _clean(query).replace('"', '""') + '"'


def _grouped(rows: Iterable[tuple[str, int, int | None, str, str, float]]) -> list[SearchHit]:
    """Group hits (best first) by session, sessions in the order of their best hit."""
    groups: dict[str, list[SearchHit]] = {}
    for row in rows:
        hit = SearchHit._make(row)
        found = groups.get(hit.session_id)
        if found is None:
            groups[hit.session_id] = [hit]
        else:
            found.append(hit)
    if len(groups) == 1:
        return next(iter(groups.values()))
    return [hit for hits in groups.values() for hit in hits]


def _varints(blob: bytes) -> list[int]:
    """Decode a run of SQLite varints (FTS5's docsize and averages records)."""
    out = []
    value = 0
    width = 0
    for byte in blob:
        if width == 8:  # the ninth byte of a varint holds 8 bits
            out.append((value << 8) | byte)
            value = width = 0
        elif byte < 0x80:
            out.append((value << 7) | byte)
            value = width = 0
        else:
            value = (value << 7) | (byte & 0x7F)
            width += 1
    return out


def _query(
    conn: sqlite3.Connection, query: str, session_id: str | None, limit: int
) -> list[SearchHit]:
    """Run one search (see `SearchIndex.search`).

    bm25() costs two passes over the phrase's doclists (the second counts the rows that match,
    for the IDF), and ORDER BY rank prepares a statement per query. Most phrases match a few
    rows, so the usual plan is one pass that fetches every match with its snippet
    (`_MATCHES_SQL`), scored here exactly as bm25() would. When there are more matches than
    that is worth (each costs a snippet) FTS5 ranks them and only the best get a snippet.
    """
    phrase = fts_phrase(query)
    lo, hi = 0, (1 << 63) - 1
    if session_id is not None:
        # Scored among all sessions like an unrestricted search: FTS5 ranks them.
        num = conn.execute("SELECT num FROM sessions WHERE session_id = ?", (session_id,))
        row = num.fetchone()
        if row is None:
            return []
        lo, hi = _session_range(row[0])
    else:
        rows = _all_matches(conn, query, phrase, limit)
        ranked = None if rows is None else _rank(rows, limit)
        if ranked is not None:
            return ranked
    with _snapshot(conn):  # the rows ranked are the rows whose snippets are read
        top = conn.execute(_TOP_SQL, (phrase, lo, hi, limit)).fetchall()
        if not top:
            return []
        ids = [rowid for rowid, _score in top]
        sql, size = _snippets_sql(len(ids))
        params = (phrase, min(ids), max(ids), *ids, *[None] * (size - len(ids)))
        found = {row[0]: row[1:] for row in conn.execute(sql, params)}
    return _grouped((*found[rowid], score) for rowid, score in top if rowid in found)


def _snippets_sql(count: int) -> tuple[str, int]:
    """Return `_SNIPPETS_SQL` for `count` rowids and its number of rowid placeholders.

    Rounded up to a power of two (the caller pads with NULLs): few distinct statements to
    prepare, and no dependency on the JSON1 functions for passing a list.
    """
    size = 8
    while size < count:
        size *= 2
    return _SNIPPETS_SQL.format(", ".join("?" * size)), size


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """Run the statements of the block in one read transaction."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")  # nothing was written


def _words(query: str) -> list[str]:
    """Roughly the tokens unicode61 makes of `query` (case and diacritics folded)."""
    if not query.isascii():
        query = "".join(
            c for c in unicodedata.normalize("NFKD", query) if not unicodedata.combining(c)
        )
    return _WORD.findall(query.casefold())


def _all_matches(conn: sqlite3.Connection, query: str, phrase: str, limit: int) -> list[Any] | None:
    """Return every row that matches `phrase` with its snippet and what bm25 needs.

    Returns None when that would cost more than FTS5's ranking, or could score differently.
    """
    words = _words(query)
    if len(set(words)) < len(words):
        # "a a" occurs twice in "a a a": bm25 counts both, highlight() marks one run.
        return None
    if len(words) == 1:
        # One word: its doclist is either short or a few rows are enough to count past
        # `limit`, so counting first is cheap (a phrase may be rare among common words).
        if conn.execute(_COUNT_SQL, (phrase, limit + 1)).fetchone()[0] > limit:
            return None
        return conn.execute(_MATCHES_SQL, (phrase,)).fetchall()
    cursor = conn.execute(_MATCHES_SQL, (phrase,))
    try:
        rows = cursor.fetchmany(1)
        if not rows:
            return rows
        totals = _varints(rows[0][8]) if isinstance(rows[0][8], bytes) else []
        if not totals:
            return None
        budget = max(_MIN_BUDGET, totals[0] // _ROWS_PER_SNIPPET)
        rows += cursor.fetchmany(budget)
        if len(rows) <= budget:
            return rows
        if budget >= limit or conn.execute(_COUNT_SQL, (phrase, limit + 1)).fetchone()[0] > limit:
            return None
        return rows + cursor.fetchall()
    finally:
        cursor.close()


def _rank(rows: list[Any], limit: int) -> list[SearchHit] | None:
    """Score `rows` (every row that matches the phrase) with bm25 exactly as FTS5 does.

    bm25 = idf · tf·(k1 + 1) / (tf + k1·(1 - b + b·len/avglen)), idf from the number of
    matching rows. `tf` counts the phrase's occurrences as highlight() marks them (occurrences
    that overlap, as "a a" in "a a a", count once). Returns None if FTS5's records cannot be read.
    """
    if not rows:
        return []
    averages = rows[0][8]
    if not isinstance(averages, bytes):
        return None
    totals = _varints(averages)
    n_rows = totals[0] if totals else 0
    if n_rows <= 0:
        return None
    avgdl = sum(totals[1:]) / n_rows
    n_hit = len(rows)
    idf = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
    if idf <= 0.0:
        idf = 1e-6
    k1, b = _BM25_K1, _BM25_B
    scored = []
    for rowid, owner, seq, turn, type_, snippet, tf, size, _averages in rows:
        if not isinstance(size, bytes) or not tf:
            return None
        length = sum(size) if max(size) < 0x80 else sum(_varints(size))
        score = idf * ((tf * (k1 + 1.0)) / (tf + k1 * (1 - b + b * length / avgdl)))
        scored.append((-score, rowid, owner, seq, turn, type_, snippet, score))
    scored.sort()
    return _grouped(row[2:] for row in scored[:limit])
