"""Which of a query's trigrams to look up: the frequent ones cost more than they filter.

A query's candidates are the rows holding the trigrams looked up (each then checked against
its text), so which trigrams are looked up changes how fast a search is, never what it
finds. Looking up every trigram reads every doclist, and a common trigram's (`the`, `on `)
holds most rows; looking up only the rarest lets through every row holding it. Both costs
are estimated from `gram_docs`, how many rows hold each frequent trigram:

- a doclist costs about one unit per row it holds, checking a candidate's text about
  `CHECK_COST` units;
- trigrams inside one word are taken as found together (the rarest of them stands for the
  word), those of different words, or across a space, as found independently;
- trigrams are taken rarest first while one more cuts the candidates by more than its
  doclist costs.

`gram_docs` holds the trigrams that at least 1/`FREQUENT_SHARE` of the rows held when they
were counted (a trigram not in it is taken to be held by half that), and, under the term
`""`, how many rows there were then. Trigrams are counted once the index has `MIN_ROWS`
rows and again each time it has doubled since (`note_rows`), and after a build
(`count_grams`). Without counts (a small index, an older file, no trigram tokenizer), every
other trigram is looked up, as before.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

GRAM_DOCS_TABLE = (
    "CREATE TABLE IF NOT EXISTS gram_docs (term TEXT PRIMARY KEY, docs INTEGER NOT NULL)"
    " WITHOUT ROWID"
)
FREQUENT_SHARE = 64  # a trigram held by 1/64 of the rows or more is counted
MIN_ROWS = 4_096  # below this, any choice is fast: nothing is counted
MAX_LOOKUP = 500  # a query with more distinct trigrams looks up every other one
CHECK_COST = 1_500  # checking one candidate's text, in doclist entries (measured at 1M events)
_ROWS = ""  # the term under which the row count at counting time is kept
_ADDED = "\x00"  # the term under which the rows added since are kept (never a trigram)
_UNSPACED = "\u2e80"  # from here on (CJK radicals, kana, ideographs...): no spaces between words
_VOCAB = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.gram_vocab USING fts5vocab(main, event_grams, row)"
)


def quoted(term: str) -> str:
    """Return `term` as an FTS5 string (a literal, never query syntax)."""
    return '"' + term.replace('"', '""') + '"'


def every_other(query: str) -> str:
    """Return the FTS5 query for the rows holding every other trigram of `query` (and its last)."""
    starts = list(range(0, len(query) - 2, 2))
    if starts[-1] != len(query) - 3:
        starts.append(len(query) - 3)
    grams = dict.fromkeys(query[i : i + 3] for i in starts)
    return " AND ".join(quoted(gram) for gram in grams)


def count_grams(conn: sqlite3.Connection) -> None:
    """Count the rows of each frequent trigram anew (in the caller's write transaction)."""
    rows = conn.execute("SELECT count(*) FROM event_rows").fetchone()[0]
    conn.execute("DELETE FROM gram_docs")
    if rows < MIN_ROWS:
        conn.execute("INSERT INTO gram_docs VALUES (?, 0)", (_ADDED,))
        return
    conn.execute(_VOCAB)
    conn.execute(
        "INSERT INTO gram_docs SELECT term, doc FROM temp.gram_vocab WHERE doc >= ?",
        (max(1, rows // FREQUENT_SHARE),),
    )
    conn.executemany("INSERT OR REPLACE INTO gram_docs VALUES (?, ?)", ((_ROWS, rows), (_ADDED, 0)))


def note_rows(
    conn: sqlite3.Connection,
    added: int,
    recount: Callable[[sqlite3.Connection], None] = count_grams,
) -> None:
    """Count `added` new rows; count the trigrams again (`recount`) once the rows have doubled.

    An index never counted (made before the counts) is counted at its first sync.
    `recount` must end with `count_grams`; the index's sync merges the segments first.
    """
    found = dict(
        conn.execute("SELECT term, docs FROM gram_docs WHERE term IN (?, ?)", (_ROWS, _ADDED))
    )
    if _ADDED not in found:
        recount(conn)
        return
    if added <= 0:
        return
    since = found[_ADDED] + added
    if since >= max(MIN_ROWS, found.get(_ROWS, 0)):
        recount(conn)
    else:
        conn.execute("INSERT OR REPLACE INTO gram_docs VALUES (?, ?)", (_ADDED, since))


def _groups(query: str) -> dict[str, object]:
    """Return each trigram of `query` (first occurrence) and what it is found with.

    A trigram within a word goes with the word's other trigrams; one across words (holding
    a space or punctuation) stands alone, as does one of a script written without spaces
    (Chinese, Japanese: a sentence is one run of letters there, not a word).
    """
    word, words = 0, []
    for ch in query:
        inside = ch.isalnum() and ch < _UNSPACED
        words.append(word if inside else None)
        word += not inside
    groups: dict[str, object] = {}
    for i in range(len(query) - 2):
        gram = query[i : i + 3]
        if gram not in groups:
            inside = words[i] is not None and words[i] == words[i + 2]
            groups[gram] = ("word", words[i]) if inside else ("gram", gram)
    return groups


def choose_grams(conn: sqlite3.Connection, query: str) -> str:
    """Return the FTS5 query for the trigrams of `query` (3+ characters) worth looking up."""
    groups = _groups(query)
    if len(groups) > MAX_LOOKUP:
        return every_other(query)
    try:
        marks = "?, " * len(groups)  # placeholders only: the terms are parameters
        sql = f"SELECT term, docs FROM gram_docs WHERE term IN ({marks}?)"  # noqa: S608
        found = dict(conn.execute(sql, (*groups, _ROWS)))
    except sqlite3.OperationalError:  # an index from before the counts, opened read-only
        found = {}
    rows = found.pop(_ROWS, 0)
    if rows <= 0:
        return every_other(query)
    rare = max(1, rows // FREQUENT_SHARE) / 2
    docs = {gram: found.get(gram, rare) for gram in groups}
    chosen: list[str] = []
    share: dict[object, float] = {}  # per word (or lone trigram): the share of rows left
    candidates = float(rows)
    for gram in sorted(groups, key=docs.__getitem__):
        before = share.get(groups[gram], 1.0)
        after = min(before, docs[gram] / rows)
        if chosen and CHECK_COST * candidates * (1 - after / before) <= docs[gram]:
            continue  # cuts fewer candidates than its doclist costs
        chosen.append(gram)
        share[groups[gram]] = after
        candidates *= after / before
    return " AND ".join(quoted(gram) for gram in chosen)
