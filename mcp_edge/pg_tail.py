"""Search the events the database has not indexed yet, without indexing them.

On PostgreSQL a search first indexes what writers appended since (`session.pg.search`
`catch_up`): a write, which `agent-assist mcp` never makes. So the indexed rows answer as
they are, and the events after each session's `indexed_seq` (the "tail") are turned into
the same rows in memory (`session.pg.search._extract`, the index's own extraction) and
matched here with the same folding, filters, ranking and snippets. Used only with a
`PgStore` whose search does not do this itself (one without `unindexed`). At most `MAX_TAIL`
events are read per search; past that the answer says how many sessions were left out.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from session.pg.store import PgStore
    from session.search import SearchFilter, SearchHit

MAX_TAIL = 50_000  # events read past the database's index in one search
_MINE = 'owner = (current_user::text COLLATE "default")'
_BEHIND = f"""SELECT s.session_id, coalesce(p.indexed_seq, -1), p.stream_text, p.stream_seq,
        p.stream_turn, p.stream_step, p.stream_ts
    FROM {{s}}.sessions s LEFT JOIN {{s}}.search_progress p
        ON p.owner = s.owner AND p.session_id = s.session_id
    WHERE s.{_MINE} AND s.next_seq > coalesce(p.indexed_seq, -1) + 1
        AND s.project = %(project)s
    ORDER BY s.updated_at DESC, s.session_id"""  # noqa: S608


_READ = f"""SELECT event FROM {{s}}.events WHERE {_MINE} AND session_id = %s AND seq >= %s
    ORDER BY seq LIMIT %s"""  # noqa: S608
_PART_MASK = 3  # a local rowid with session number 0 is seq << 2 | part


def _extract(session_id: str, progress: tuple[Any, ...], events: list[Any]) -> tuple[Any, Any]:
    """Return the rows of `events` (after `progress`) as columns, and the progress after.

    As the database's index makes them (`session.pg.search`): the local index's extraction.
    """
    from session.search.extract import _Extractor
    from session.search.schema import _Progress, rowid_seq
    from session.search.text import fold

    _indexed, text, seq, turn, step, ts = progress
    extractor = _Extractor(session_id, _Progress(0, 0, -1, None, -1, text, seq, turn, step, ts))
    for event in events:
        extractor.feed(event)
    stream_text, stream_seq, stream_turn = extractor.open_stream()
    open_step, open_ts = extractor.stream_step, extractor.stream_ts
    extractor.add_stream(events[-1].ts)  # still streaming: a provisional row
    columns: tuple[list[Any], ...] = ([], [], [], [], [], [], [], [], [], [])
    for rowid, turn_, step_, ts_, type_, text_, _norm, tool, paths in extractor.rows:
        row = (rowid_seq(rowid), rowid & _PART_MASK, type_, turn_, ts_, text_, fold(text_))
        for column, value in zip(columns, (*row, step_, tool, paths), strict=True):
            column.append(value)
    if stream_text is None:
        open_step = open_ts = None
    return columns, (events[-1].seq, stream_text, stream_seq, stream_turn, open_step, open_ts)


def _matches(row: tuple[Any, ...], folded: str, filters: SearchFilter) -> bool:
    seq, part, type_, turn, ts, text, norm, step, tool, paths = row
    if folded not in norm:
        return False
    when = datetime.fromisoformat(ts) if isinstance(ts, str) else ts
    if filters.since is not None and (when is None or when < filters.since):
        return False
    if filters.until is not None and (when is None or when >= filters.until):
        return False
    if filters.types and type_ not in filters.types:
        return False
    if filters.tool is not None and tool != filters.tool:
        return False
    if filters.path is not None:
        listed = paths or ""
        if f"\n{filters.path}\n" not in listed and f"\n{filters.path}/" not in listed:
            return False
    return True


def tail_hits(
    pg: PgStore, project: str, query: str, limit: int, filters: SearchFilter
) -> tuple[list[SearchHit], int]:
    """Return the best hits among the events not indexed yet, and the sessions left out.

    Left out: those met once `MAX_TAIL` events were read.
    """
    from datetime import UTC

    from session.events import EVENT_ADAPTER
    from session.pg.query import q
    from session.pg.search import fold_query
    from session.search import SearchHit
    from session.search.rank import rank, snippet

    folded = fold_query(query)
    if not folded.strip():
        return [], 0
    found: dict[tuple[str, int, int], tuple[Any, ...]] = {}  # (session, seq, part) -> row
    budget = MAX_TAIL
    left_out = 0
    with pg.connection() as conn:
        behind = conn.execute(q(pg.schema, _BEHIND), {"project": project}).fetchall()
        for session_id, *progress in behind:
            if budget <= 0:
                left_out += 1
                continue
            state = tuple(progress)
            while budget > 0:
                start = int(state[0]) + 1
                read = (session_id, start, min(2_000, budget))
                rows = conn.execute(q(pg.schema, _READ), read).fetchall()
                events = [EVENT_ADAPTER.validate_python(row[0]) for row in rows]
                if not events:
                    break
                budget -= len(events)
                if state[2] is not None:  # the stream row is given again, longer
                    found.pop((session_id, int(state[2]), 1), None)
                columns, state = _extract(session_id, state, events)
                for row in zip(*columns, strict=True):
                    if _matches(row, folded, filters):
                        found[(session_id, int(row[0]), int(row[1]))] = row
                if len(events) < 2_000:
                    break
    keyed = list(found.items())
    ranked = rank(((n, row[6]) for n, (_, row) in enumerate(keyed)), folded)[:limit]
    hits = []
    for score, n in ranked:
        (session_id, _seq, _part), row = keyed[n]
        seq, _p, type_, turn, ts, text, norm, step, _tool, _paths = row
        when = datetime.fromisoformat(ts) if isinstance(ts, str) else ts
        shown = snippet(text, norm, folded)
        at = None if when is None else when.astimezone(UTC)
        hits.append(SearchHit(session_id, seq, turn, type_, shown, score, step, at))
    return hits, left_out


def merged(indexed: list[SearchHit], tail: list[SearchHit], limit: int) -> list[SearchHit]:
    """Return the hits of both, best first, grouped by session.

    A tail hit replaces the indexed one of the same event (a stream row indexed before it grew).
    """
    from session.search.query import _grouped

    fresh = {(hit.session_id, hit.seq) for hit in tail}
    kept = [hit for hit in indexed if (hit.session_id, hit.seq) not in fresh]
    best = sorted([*kept, *tail], key=lambda hit: hit.score, reverse=True)[:limit]
    return _grouped(best)
