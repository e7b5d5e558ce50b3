"""What the shared search index has not caught up yet, turned into rows without writing.

A search by a store that may write first indexes what writers appended since
(`search.catch_up`). A store that must not write (opened by a command that only reads, or
a schema newer than this code) cannot: it reads the events after each session's
`indexed_seq` itself and turns them into the rows the index would hold (`rows_of`, as
`catch_up` would), matched in Python with the same literal semantics and filters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..events import EVENT_ADAPTER, Event
from ..search.extract import Extractor
from ..search.filters import SearchFilter
from ..search.schema import SyncProgress, rowid_seq
from ..search.text import fold
from .query import Conn, q, text_value

BATCH = 2_000  # events read per statement
_PART_MASK = 3  # a local rowid with session number 0 is seq << 2 | part

Columns = tuple[list[Any], ...]  # seq, part, type, turn, ts, text, norm, step, tool, paths
# indexed_seq and the open stream: text, seq, turn, step, time
Progress = tuple[int, str | None, int | None, int | None, int | None, Any]

_MINE = 'owner = (current_user::text COLLATE "default")'
_BEHIND = f"""SELECT s.session_id, s.next_seq, coalesce(p.indexed_seq, -1), p.stream_text,
        p.stream_seq, p.stream_turn, p.stream_step, p.stream_ts
    FROM {{s}}.sessions s LEFT JOIN {{s}}.search_progress p
        ON p.owner = s.owner AND p.session_id = s.session_id
    WHERE s.{_MINE} AND s.session_id = ANY(%s)
        AND s.next_seq > coalesce(p.indexed_seq, -1) + 1"""  # noqa: S608 - constants only
_READ = f"""SELECT event FROM {{s}}.events WHERE {_MINE} AND session_id = %s AND seq >= %s
    ORDER BY seq LIMIT %s"""  # noqa: S608


def extract(
    session_id: str, progress: Progress, events: Sequence[Event]
) -> tuple[Columns, Progress]:
    """Return the rows of `events` (in log order, after `progress`) as columns, and the progress."""
    _indexed, text, seq, turn, step, ts = progress
    extractor = Extractor(session_id, SyncProgress(0, 0, -1, None, -1, text, seq, turn, step, ts))
    for event in events:
        extractor.feed(event)
    stream_text, stream_seq, stream_turn = extractor.open_stream()
    open_step, open_ts = extractor.stream_step, extractor.stream_ts
    extractor.add_stream(events[-1].ts)  # still streaming: a provisional row
    columns: Columns = ([], [], [], [], [], [], [], [], [], [])
    for rowid, turn, step, ts, type_, text, _norm, tool, paths in extractor.rows:
        row = (rowid_seq(rowid), rowid & _PART_MASK, type_, turn, ts, text, fold(text))
        for column, value in zip(columns, (*row, step, tool, paths), strict=True):
            column.append(value)
    if stream_text is None:
        open_step = open_ts = None
    return columns, (events[-1].seq, stream_text, stream_seq, stream_turn, open_step, open_ts)


def _passes(
    filters: SearchFilter, ts: Any, type_: str, tool: str | None, paths: str | None
) -> bool:
    if filters.since is not None and ts < filters.since:
        return False
    if filters.until is not None and ts >= filters.until:
        return False
    if filters.types and type_ not in filters.types:
        return False
    if filters.tool is not None and tool != filters.tool:
        return False
    if filters.path is not None:
        held = paths or ""
        exact, under = text_value(f"\n{filters.path}\n"), text_value(f"\n{filters.path}/")
        return exact in held or under in held
    return True


class Unindexed:
    """The rows of the events the index has not caught up yet, in scope, that match."""

    def __init__(self) -> None:
        self.events = 0  # events not indexed yet (read here)
        self.rows: list[tuple[Any, ...]] = []  # as `search._COLUMNS`
        self.replaced: set[tuple[str, int]] = set()  # (session, seq) of stale stream rows

    def read(
        self, conn: Conn, schema: str, ids: list[str], query: str, filters: SearchFilter
    ) -> None:
        """Read the scope's events after each session's `indexed_seq`; keep the matches."""
        for found in conn.execute(q(schema, _BEHIND), (ids,)).fetchall():
            session_id, next_seq, indexed = found[0], int(found[1]), int(found[2])
            progress: Progress = (indexed, found[3], found[4], found[5], found[6], found[7])
            self.events += next_seq - indexed - 1
            if progress[2] is not None:  # its provisional stream row is made again here
                self.replaced.add((session_id, int(progress[2])))
            start = indexed + 1
            while True:
                raws = conn.execute(q(schema, _READ), (session_id, start, BATCH)).fetchall()
                if not raws:
                    break
                events = [EVENT_ADAPTER.validate_python(raw[0]) for raw in raws]
                columns, progress = extract(session_id, progress, events)
                self._keep(session_id, columns, query, filters)
                if len(events) < BATCH:
                    break
                start = events[-1].seq + 1

    def _keep(self, session_id: str, columns: Columns, query: str, filters: SearchFilter) -> None:
        seqs, parts, types, turns, times, texts, norms, steps, tools, paths = columns
        for at, norm in enumerate(norms):
            if query not in norm:
                continue
            if not _passes(filters, times[at], types[at], tools[at], paths[at]):
                continue
            row = (session_id, seqs[at], parts[at], turns[at], types[at], texts[at], norm)
            self.rows.append((*row, steps[at], times[at]))

    def merged(self, rows: list[tuple[Any, ...]], one_session: bool, want: int) -> list[Any]:
        """Return the index's `rows` with these, newest first as `search._candidates` orders."""
        kept = [r for r in rows if not (r[2] == 1 and (r[0], r[1]) in self.replaced)]
        if not self.rows and len(kept) == len(rows):
            return rows

        def newest(row: tuple[Any, ...]) -> tuple[Any, ...]:
            key = (row[0], row[1], row[2])
            return key if one_session else (row[8], *key)

        return sorted(kept + self.rows, key=newest, reverse=True)[:want]
