"""The session listing of a project: a page, newest first, its total and the folded (#43).

A page's keys come from the index in the listing's order (`sessions_listing`, schema
version 6), its counts from `session_counts` (kept by a trigger): at 100,000 sessions a
page of 50 reads 50 rows and one count, not the project (`bench/pg_listing.py`).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from .query import Conn, q
from .records import COLUMNS as _COLUMNS
from .records import SessionRow, row_of

# The same as a subquery's columns (the phase's expression named), and those names.
_COLUMNS_AS = _COLUMNS.replace("snapshot->>'phase')", "snapshot->>'phase') AS phase")
_NAMES = _COLUMNS.replace("coalesce(phase, snapshot->>'phase')", "phase")

# Listed unless folded: a session with a turn, a title (a turn's input), a summary or
# recent messages (a seed's session file has no `turns`), or the one to list anyway (the
# current session). `listable` (schema version 6) holds the first part, kept by a trigger.
_LISTED = "(%(empty)s OR listable OR session_id IS NOT DISTINCT FROM %(keep)s)"
# The page's keys from the index in the listing's order (an index-only scan of offset +
# limit entries), then those rows.
_PAGE = f"""WITH page (id, at) AS (SELECT session_id, updated_at FROM {{s}}.sessions
        WHERE owner = {{me}} AND project = %(project)s AND {_LISTED}
        ORDER BY updated_at DESC, session_id LIMIT %(limit)s OFFSET %(offset)s)
    SELECT {_COLUMNS} FROM page JOIN {{s}}.sessions s ON s.owner = {{me}} AND s.session_id = page.id
    ORDER BY page.at DESC, page.id"""  # noqa: S608
# The project's counts as kept (`session_counts`), and whether `keep` is one it folds.
_KEPT = """SELECT listed, folded, EXISTS (SELECT FROM {s}.sessions WHERE owner = {me}
        AND project = %(project)s AND session_id = %(keep)s AND NOT listable)
    FROM {s}.session_counts WHERE owner = {me} AND project = %(project)s"""
_COUNTS = f"""SELECT count(*) FILTER (WHERE {_LISTED}), count(*) FILTER (WHERE NOT {_LISTED})
    FROM {{s}}.sessions WHERE owner = {{me}} AND project = %(project)s"""  # noqa: S608
# Rows not filled yet (another role's, from before version 6): the condition from the row,
# every row of the project read, as before version 6.
_ROW_LISTED = (
    "(%(empty)s OR turns > 0 OR title IS NOT NULL OR coalesce(snapshot->>'summary', '') <> ''"
    " OR coalesce(snapshot->'recent_messages', '[]'::jsonb) <> '[]'::jsonb"
    " OR session_id IS NOT DISTINCT FROM %(keep)s)"
)
_SCANNED = f"""SELECT {_NAMES}, listed_total, folded FROM (SELECT {_COLUMNS_AS},
    {_ROW_LISTED} AS listed, count(*) FILTER (WHERE {_ROW_LISTED}) OVER () AS listed_total,
    count(*) FILTER (WHERE NOT {_ROW_LISTED}) OVER () AS folded
    FROM {{s}}.sessions WHERE owner = {{me}} AND project = %(project)s) page WHERE listed
    ORDER BY updated_at DESC, session_id LIMIT %(limit)s OFFSET %(offset)s"""  # noqa: S608
_UNFILLED = """SELECT EXISTS (SELECT FROM {s}.sessions
    WHERE owner = {me} AND project = %(project)s AND listable IS NULL)"""
# Setting the column fires the trigger, which computes it.
_FILL = """UPDATE {s}.sessions SET listable = NULL
    WHERE owner = {me} AND project = %(project)s AND listable IS NULL"""
# The table's write lock for this instant: no session of the project can be written between
# the count and its row (the trigger keeps only rows that exist); waiting at most this long.
_LOCK = "LOCK TABLE {s}.sessions IN SHARE ROW EXCLUSIVE MODE"
LOCK_WAIT = "500ms"
_COUNT = """INSERT INTO {s}.session_counts (project, listed, folded)
    SELECT %(project)s, count(*) FILTER (WHERE listable), count(*) FILTER (WHERE NOT listable)
    FROM {s}.sessions WHERE owner = {me} AND project = %(project)s ON CONFLICT DO NOTHING"""


def prepare_counts(conn: Conn, schema: str, project: str) -> bool:
    """Fill this role's unfilled rows of the project and count them into `session_counts`.

    Return False, nothing done, if the table's lock was not had within `LOCK_WAIT` or the
    role may not write.
    """
    values = {"project": project}
    try:
        with conn.transaction():
            conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(LOCK_WAIT)))
            conn.execute(q(schema, _LOCK))
            conn.execute(q(schema, _FILL), values)
            conn.execute(q(schema, _COUNT), values)
    except (
        psycopg.errors.LockNotAvailable,
        psycopg.errors.InsufficientPrivilege,  # a role that may only read
        psycopg.errors.ReadOnlySqlTransaction,  # `default_transaction_read_only`, a standby
    ):
        return False
    return True


def _kept_counts(
    conn: Conn, schema: str, values: dict[str, Any], writable: bool
) -> tuple[int, int, bool] | None:
    """Return the project's kept counts (made first if `writable`), or None."""
    for attempt in (0, 1):
        found = conn.execute(q(schema, _KEPT), values).fetchone()
        if found is not None:
            return int(found[0]), int(found[1]), bool(found[2])
        if attempt or not writable or not prepare_counts(conn, schema, values["project"]):
            return None
    return None


def list_sessions_page(
    conn: Conn,
    schema: str,
    project: str,
    offset: int,
    limit: int | None,
    *,
    empty: bool = False,
    keep: str | None = None,
    writable: bool = True,
) -> tuple[list[SessionRow], int, int]:
    """Return a page of a project's sessions, newest first, its total and the folded (in SQL).

    Without `empty`, the sessions without a turn (`_LISTED`) but `keep` are folded: neither
    on the page nor in the total; the last value counts them. The counts are the kept ones
    (made at the first listing if `writable`); without them, counted, and with rows of
    this role not filled since version 6 too, every row read (as before version 6).
    """
    values = {"project": project, "limit": limit, "offset": offset, "empty": empty, "keep": keep}
    counts = _kept_counts(conn, schema, values, writable)
    if counts is None:
        unfilled = conn.execute(q(schema, _UNFILLED), values).fetchone()
        if unfilled and unfilled[0]:
            return _scanned(conn, schema, values)
        found = conn.execute(q(schema, _COUNTS), values).fetchone()
        total, folded = (int(found[0]), int(found[1])) if found else (0, 0)
    else:
        listed, folded, kept = counts
        total, folded = (listed + folded, 0) if empty else (listed + kept, folded - kept)
    rows = conn.execute(q(schema, _PAGE), values).fetchall()
    return [row_of(row) for row in rows], total, folded


def _scanned(conn: Conn, schema: str, values: dict[str, Any]) -> tuple[list[SessionRow], int, int]:
    """Return the page and counts read from every row of the project (as version 5 did)."""
    rows = conn.execute(q(schema, _SCANNED), values).fetchall()
    if rows:
        return [row_of(row[:-2]) for row in rows], int(rows[0][-2]), int(rows[0][-1])
    counts = _COUNTS.replace(_LISTED, _ROW_LISTED)
    found = conn.execute(q(schema, counts), values).fetchone()
    return [], int(found[0]) if found else 0, int(found[1]) if found else 0


def explain_page(conn: Conn, schema: str, project: str, offset: int, limit: int) -> list[str]:
    """Return the `EXPLAIN (ANALYZE, BUFFERS)` lines of a listing's queries (for the bench).

    The counts kept and this role's rows filled (`prepare_counts`): the page and the counts.
    """
    values = {"project": project, "limit": limit, "offset": offset, "empty": False, "keep": None}
    lines: list[str] = []
    for name, query in (("the page", _PAGE), ("the counts", _KEPT)):
        found = conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + q(schema, query), values)
        lines += [f"{name}:", *(f"  {row[0]}" for row in found.fetchall())]
    return lines
