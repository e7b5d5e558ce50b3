"""Search the events the database has not indexed yet, without indexing them.

On PostgreSQL a search first indexes what writers appended since (`session.pg.search`
`catch_up`): a write, which `agent-assist mcp` never makes. So the indexed rows answer as
they are, and the events after each session's `indexed_seq` (the "tail") are turned into
the same rows in memory (`session.pg.search._extract`, the index's own extraction) and
matched here with the same folding, filters, ranking and snippets. At most `MAX_TAIL`
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

    from session.pg.query import q
    from session.pg.search import _extract, _read, fold_query
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
                events = _read(conn, pg.schema, session_id, start, min(2_000, budget))
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
