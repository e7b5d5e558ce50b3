"""Search on the PostgreSQL store, with the local index's literal semantics (`session.search`).

What is searchable in an event (`extract`), what "contains" means (`text.fold`), the order
of the matches and their snippets (`rank`) are the local index's own; only where the rows
live and how the candidates are found differ.

- Rows: `index_events` turns events into the rows the local index would hold, each with
  its folded text (`norm`), in the caller's transaction. `catch_up` indexes what writers
  appended since (`search_progress.indexed_seq`), a batch of events per transaction; every
  search runs it first for its scope, so no writer has to call either.
- Candidates, newest first (by the event's time; in one session, by seq): the newest
  `SCAN_ROWS` rows in scope that contain the query (a frequent query is answered there);
  a query frequent enough there reads on into the newest rows that should hold the window
  (at most `MAX_SPAN`) when that costs less than the trigram index's candidates; else the
  newest of all the rows that contain it, found by the trigram index when the query has
  three letters or digits in a row (pg_trgm makes no trigram of less), else by reading
  the rows in scope newest first. Each candidate is checked with `strpos` on `norm`, so every
  hit contains the query (and LIKE's metacharacters are escaped in the pattern).
- The trigram index is reached through the restrictive policy `search_pattern` (see
  `migrations`): under forced row-level security PostgreSQL uses an index only for the
  leakproof operators of a query, and LIKE is not one, but a policy's own condition may.
- The newest `WINDOW` (or `limit`) matches are ranked by `rank.rank`, ties to the newest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any, Protocol

import psycopg

from ..errors import SessionNotFoundError
from ..events import EVENT_ADAPTER, Event
from ..paths import is_valid_session_id
from ..search.filters import NO_FILTER, SearchFilter
from ..search.query import SCAN_ROWS, WINDOW, SearchHit, grouped_by_session
from ..search.rank import rank, snippet
from ..search.text import clean, fold
from ..store.backend import BuildProgress
from .errors import PgReadOnlyError
from .migrations import BACKFILL
from .query import Conn, _without_nul, q, text_value
from .search_pending import Progress, Unindexed, extract

if TYPE_CHECKING:
    from .store import PgStore

MAX_SPAN = 15 * SCAN_ROWS  # the most rows read newest first before the trigram index is used
READ_COST = 2.0  # checking a candidate of the index ÷ reading a row in order (measured: 2-3)
BATCH = 2_000  # events a catch-up reads and indexes per transaction
ANALYZE_ROWS = 10_000  # a catch-up that wrote this many rows refreshes the planner's statistics
PATTERN_SETTING = "agent_assist.search_pattern"  # read by the policy `search_pattern`
_TRIGRAM = re.compile(r"[^\W_]{3}")  # three letters or digits in a row: one pg_trgm trigram

_NEW_PROGRESS = "INSERT INTO {s}.search_progress (session_id) VALUES (%s) ON CONFLICT DO NOTHING"
_PROGRESS = """SELECT indexed_seq, stream_text, stream_seq, stream_turn, stream_step, stream_ts
    FROM {s}.search_progress WHERE owner = current_user AND session_id = %s FOR UPDATE"""
_SAVE_PROGRESS = """UPDATE {s}.search_progress SET indexed_seq = %s, stream_text = %s,
        stream_seq = %s, stream_turn = %s, stream_step = %s, stream_ts = %s
    WHERE owner = current_user AND session_id = %s"""
_DROP_STREAM = """DELETE FROM {s}.search_texts
    WHERE owner = current_user AND session_id = %s AND seq = %s AND part = 1"""  # PART_STREAM
_INSERT = """INSERT INTO {s}.search_texts
        (session_id, seq, part, type, turn, ts, text, norm, step, tool, paths)
    SELECT %s, * FROM unnest(%s::bigint[], %s::smallint[], %s::text[], %s::integer[],
        %s::timestamptz[], %s::text[], %s::text[], %s::integer[], %s::text[], %s::text[])
    ON CONFLICT DO NOTHING"""
# `owner` of the tables of version 1 has the default collation, `current_user` "C": only
# this form of the comparison can use the indexes that start with `owner`.
_MINE = 'owner = (current_user::text COLLATE "default")'
_READ = f"""SELECT event FROM {{s}}.events WHERE {_MINE} AND session_id = %s AND seq >= %s
    ORDER BY seq LIMIT %s"""  # noqa: S608
_BEHIND = f"""SELECT s.session_id FROM {{s}}.sessions s LEFT JOIN {{s}}.search_progress p
        ON p.owner = s.owner AND p.session_id = s.session_id
    WHERE s.{_MINE} AND s.next_seq > coalesce(p.indexed_seq, -1) + 1
        AND (%(project)s::text IS NULL OR s.project = %(project)s)
        AND (%(session)s::text IS NULL OR s.session_id = %(session)s)
    ORDER BY s.created_at, s.session_id"""  # noqa: S608
_SCOPE = f"""SELECT session_id FROM {{s}}.sessions WHERE {_MINE}
    AND project = %(project)s AND (%(session)s::text IS NULL OR session_id = %(session)s)"""  # noqa: S608
_COLUMNS = "session_id, seq, part, turn, type, text, norm, step, ts"
# The rows of sessions in scope made before schema version 5 by another role: their
# step, tool and paths from their events (see `migrations.BACKFILL`), then marked filled.
_UNFILLED = """SELECT p.session_id FROM {s}.search_progress p JOIN {s}.sessions s
        ON s.owner = p.owner AND s.session_id = p.session_id
    WHERE p.owner = current_user AND NOT p.backfilled
        AND (%(project)s::text IS NULL OR s.project = %(project)s)
        AND (%(session)s::text IS NULL OR s.session_id = %(session)s)"""  # noqa: S608
_BACKFILL = BACKFILL.format(scope=" AND t.owner = current_user AND t.session_id = ANY(%s)")
_FILLED = """UPDATE {s}.search_progress SET backfilled = true
    WHERE owner = current_user AND session_id = ANY(%s)"""
# A filter's conditions (`_where`): constants, their values bound by name.
_CONDITIONS = {
    "since": "ts >= %(since)s",
    "until": "ts < %(until)s",
    "types": "type = ANY(%(types)s)",
    "tool": "tool = %(tool)s",
    "path": "(strpos(paths, %(path)s) > 0 OR strpos(paths, %(under)s) > 0)",
}
# Newest first, in the order of an index (`owner` leads both though it is one value here).
_BY_TIME = "ORDER BY owner DESC, ts DESC, session_id DESC, seq DESC, part DESC"
_BY_SEQ = "ORDER BY owner DESC, session_id DESC, seq DESC, part DESC"
_IN_SCOPE = "owner = current_user AND session_id = ANY(%(ids)s)"
# The statements below are made of these constants only, never of input.
_NEWEST = (  # the newest `rows` rows in scope, those that contain the query
    """SELECT {columns} FROM (SELECT * FROM {{s}}.search_texts WHERE {scope}{where}
        {order} LIMIT %(rows)s) newest WHERE strpos(norm, %(query)s) > 0 {order} LIMIT %(want)s"""
)
_MATCHING = (  # every row in scope that contains the query (and the pattern, if one is set)
    """SELECT {columns} FROM {{s}}.search_texts
        WHERE {scope}{where} AND strpos(norm, %(query)s) > 0 {order} LIMIT %(want)s"""
)
# With no pattern set, the policy's LIKE looks cheap to the trigram index but would read
# all of it: plain scans keep bitmap scans (the only kind a GIN index serves) off.
_PLAIN_SCANS = """SELECT set_config('enable_bitmapscan', 'off', true),
    (SELECT reltuples FROM pg_class WHERE oid = to_regclass(quote_ident(%s) || '.search_texts'))"""
_INDEXED_SCAN = "SELECT set_config('enable_bitmapscan', 'on', true), set_config(%s, %s, true)"
_HAS_GRAMS = "SELECT to_regclass(quote_ident(%s) || '.search_texts_grams') IS NOT NULL"


def like_pattern(query: str) -> str:
    """Return the LIKE pattern of the texts that contain `query` (its metacharacters escaped)."""
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def fold_query(query: str) -> str:
    """Return `query` as it is compared with `norm` (U+0000 is U+FFFD, as PostgreSQL stores it)."""
    return fold(clean(text_value(query)))


def _stored(event: Event | Mapping[str, Any]) -> Event:
    """Return the event as the store holds it (U+0000 in its strings becomes U+FFFD)."""
    raw = dict(event) if isinstance(event, Mapping) else event.model_dump(mode="json")
    return EVENT_ADAPTER.validate_python(_without_nul(raw))


def _read(conn: Conn, schema: str, session_id: str, start: int, limit: int) -> list[Event]:
    rows = conn.execute(q(schema, _READ), (session_id, start, limit)).fetchall()
    return [EVENT_ADAPTER.validate_python(row[0]) for row in rows]


def _index(
    conn: Conn, schema: str, session_id: str, given: Sequence[Event] | None
) -> tuple[int, int]:
    """Index the session's events after its `indexed_seq`: `given` ones, or a batch read.

    Events between `indexed_seq` and the first given one are read from the table (the
    caller's transaction sees its own). Return how many events were indexed, and rows.
    """
    try:
        with conn.transaction():
            conn.execute(q(schema, _NEW_PROGRESS), (session_id,))
            found = conn.execute(q(schema, _PROGRESS), (session_id,)).fetchone()
            if found is None:
                raise SessionNotFoundError(f"no session {session_id} in the PostgreSQL store")
            progress: Progress = (found[0], found[1], found[2], found[3], found[4], found[5])
            start = progress[0] + 1
            events = [event for event in given if event.seq >= start] if given is not None else []
            if given is None:
                events = _read(conn, schema, session_id, start, BATCH)
            elif events and events[0].seq > start:
                events = _read(conn, schema, session_id, start, events[0].seq - start) + events
            if not events:
                return 0, 0
            columns, after = extract(session_id, progress, events)
            if progress[2] is not None:  # the provisional row of the stream open until now
                conn.execute(q(schema, _DROP_STREAM), (session_id, progress[2]))
            if columns[0]:
                conn.execute(q(schema, _INSERT), (session_id, *columns))
            conn.execute(q(schema, _SAVE_PROGRESS), (*after, session_id))
    except psycopg.errors.ForeignKeyViolation:
        raise SessionNotFoundError(f"no session {session_id} in the PostgreSQL store") from None
    return len(events), len(columns[0])


def index_events(
    target: PgStore | Conn,
    session_id: str,
    events: Iterable[Event | Mapping[str, Any]],
    *,
    schema: str | None = None,
) -> int:
    """Index the searchable texts of a session's events (as stored: scrubbed); return rows.

    On a connection (`schema` then names the store's), it runs in the caller's transaction,
    e.g. the one that appended them. Idempotent: events already indexed are skipped.
    """
    stored = [_stored(event) for event in events]
    if isinstance(target, psycopg.Connection):
        if schema is None:
            raise ValueError("index_events on a connection needs the store's schema")
        return _index(target, schema, session_id, stored)[1]
    if reason := target.read_only_reason:
        raise PgReadOnlyError(reason)
    with target.connection() as conn:
        return _index(conn, target.schema, session_id, stored)[1]


def catch_up(store: PgStore, session_id: str | None = None, *, project: str | None = None) -> int:
    """Index the events appended since each session (of `project`, or one) was; return rows."""
    if reason := store.read_only_reason:
        raise PgReadOnlyError(reason)
    written = 0
    with store.connection() as conn:
        scope = {"project": project, "session": session_id}
        behind = [row[0] for row in conn.execute(q(store.schema, _BEHIND), scope)]
        for behind_id in behind:
            try:
                while True:
                    events, rows = _index(conn, store.schema, behind_id, None)
                    written += rows
                    if events < BATCH:
                        break
            except SessionNotFoundError:
                continue  # deleted meanwhile
        unfilled = [row[0] for row in conn.execute(q(store.schema, _UNFILLED), scope)]
        if unfilled:
            with conn.transaction():
                conn.execute(q(store.schema, _BACKFILL), (unfilled,))
                conn.execute(q(store.schema, _FILLED), (unfilled,))
        if written >= ANALYZE_ROWS:  # a bulk load: plans need the new statistics
            conn.execute(q(store.schema, "ANALYZE {s}.search_texts"))
    return written


def read_on(matches: int, want: int, table_rows: float) -> int | None:
    """Return how many of the newest rows to read for `want` matches, or None: use the index.

    `matches` were found among the newest `SCAN_ROWS`. If the query is as frequent further
    back, twice the rows expected to hold `want` are enough. Reading a row in order costs
    less than half of checking a candidate of the trigram index (a random read), and the
    candidates are the matches at least, about `matches / SCAN_ROWS` of the table.
    """
    if not matches or table_rows <= 0:
        return None
    span = math.ceil(2 * want * SCAN_ROWS / matches)
    cheaper = span < READ_COST * matches / SCAN_ROWS * table_rows
    return span if span <= MAX_SPAN and cheaper else None


def _where(filters: SearchFilter) -> tuple[str, dict[str, Any]]:
    """Return a filter's conditions (` AND ...`, of `_CONDITIONS` only) and their values."""
    values: dict[str, Any] = {
        "since": filters.since,
        "until": filters.until,
        "types": list(filters.types) or None,
        "tool": filters.tool,
        "path": None if filters.path is None else text_value(f"\n{filters.path}\n"),
    }
    used = [name for name, value in values.items() if value is not None]
    if filters.path is not None:
        values["under"] = text_value(f"\n{filters.path}/")
    return "".join(f" AND {_CONDITIONS[name]}" for name in used), values


def _statement(template: str, order: str, where: str) -> str:
    return template.format(columns=_COLUMNS, scope=_IN_SCOPE, where=where, order=order)


def _candidates(
    conn: Conn,
    schema: str,
    query: str,
    ids: list[str],
    one_session: bool,
    want: int,
    filters: SearchFilter = NO_FILTER,
) -> list[tuple[Any, ...]]:
    """Return the newest `want` rows in scope that contain `query` (see the module docstring)."""
    order = _BY_SEQ if one_session else _BY_TIME
    where, values = _where(filters)
    newest = q(schema, _statement(_NEWEST, order, where))
    params: dict[str, Any] = {"ids": ids, "query": query, "rows": SCAN_ROWS, "want": want}
    params.update(values)
    with conn.transaction():
        row = conn.execute(_PLAIN_SCANS, (schema,)).fetchone()
        found = conn.execute(newest, params, prepare=False).fetchall()
        if len(found) >= want:
            return found
        grams = _TRIGRAM.search(query) is not None
        span = read_on(len(found), want, row[1] if row and row[1] else 0.0) if grams else None
        if span is not None:
            params["rows"] = span
            found = conn.execute(newest, params, prepare=False).fetchall()
            if len(found) >= want:
                return found
        if grams:
            conn.execute(_INDEXED_SCAN, (PATTERN_SETTING, like_pattern(query)))
        matching = q(schema, _statement(_MATCHING, order, where))
        return conn.execute(matching, params, prepare=False).fetchall()


def search(
    store: PgStore,
    project: str,
    query: str,
    session_id: str | None = None,
    limit: int = 50,
    filters: SearchFilter | None = None,
) -> list[SearchHit]:
    """Find the project's events whose text contains `query`, as `SearchIndex.search` does.

    Literal, after NFKC and case folding; best first, grouped by session. What the writers
    appended since the last search is indexed first; a store that must not write reads it
    from the events instead (`search_pending`), and counts it in `store.unindexed`.
    """
    if session_id is not None and not is_valid_session_id(session_id):
        raise ValueError(f"invalid session id {session_id!r} (12 lowercase hex characters)")
    if limit <= 0 or not query.strip():
        return []
    folded = fold_query(query)
    store.unindexed = 0
    if store.read_only_reason is None:
        catch_up(store, session_id, project=project)
    with store.connection() as conn:
        scope = {"project": text_value(project), "session": session_id}
        ids = [row[0] for row in conn.execute(q(store.schema, _SCOPE), scope)]
        if not ids:
            return []
        one = session_id is not None
        want = max(WINDOW, limit)
        rows = _candidates(conn, store.schema, folded, ids, one, want, filters or NO_FILTER)
        if store.read_only_reason is not None:  # no catch-up: what it would index, read here
            pending = Unindexed()
            pending.read(conn, store.schema, ids, folded, filters or NO_FILTER)
            store.unindexed = pending.events
            rows = pending.merged(rows, one, want)
    count = len(rows)  # rows[0] is the newest: the largest key, as a local rowid
    best = rank(((count - at, row[6]) for at, row in enumerate(rows)), folded)[:limit]
    hits = []
    for score, key in best:
        owner_id, seq, _part, turn, type_, text, norm, step, ts = rows[count - key]
        shown = snippet(text, norm, folded)
        when = None if ts is None else ts.astimezone(UTC)
        hits.append(SearchHit(owner_id, seq, turn, type_, shown, score, step, when))
    return grouped_by_session(hits)


class ProjectStore(Protocol):
    """A store of one project on PostgreSQL (`PgSessionStore`)."""

    pg: PgStore
    project: str


class ProjectSearch:
    """The `StoreSearch` of a project in the database: its own index, caught up when searched."""

    migrating = False  # the database's index has no older version answering meanwhile

    def __init__(self, store: ProjectStore) -> None:
        self._store = store

    def search(
        self,
        query: str,
        session_id: str | None = None,
        limit: int = 50,
        filters: SearchFilter | None = None,
        *,
        stale_ok: bool = False,
    ) -> list[SearchHit]:
        """Find the project's events whose text contains `query` (see `search`)."""
        return search(self._store.pg, self._store.project, query, session_id, limit, filters)

    def build_step(self) -> BuildProgress:
        """Return finished: there is no index of an older version to replace."""
        return BuildProgress(0, 0, True)

    def catch_up(self, session_id: str) -> None:
        """Nothing: a search catches the index up with what writers appended."""

    def close(self) -> None:
        """Nothing: the connections are the store's."""


def has_trigram_index(store: PgStore) -> bool:
    """Whether the trigram index exists (pg_trgm could be installed when the schema was made)."""
    with store.connection() as conn:
        row = conn.execute(_HAS_GRAMS, (store.schema,)).fetchone()
    return bool(row and row[0])
