"""A file's changes on PostgreSQL: the projection run over the events the database holds.

No table of its own: one query reads, for the project's sessions of this role, the events
that can record a change of a file (`project.TYPES`), in each session's order, keeping only
those that name the path (a `tool/result`, drift or rewind whose `files`/`changes` hold it;
an old log's `write_file` call naming it and the results without `files`) and those the
projection needs around them (`session/start`, `turn/start`). Row-level security confines
it to the role's own rows. It reads the project's events (no table of its own): about
70-100 ms at 100k events on this machine, growing with the project.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from ..events import EVENT_ADAPTER
from .index import TimelineError
from .project import TYPES, ChangeRow, ChangeRows, Cursor, project

if TYPE_CHECKING:
    from ..pg.store import PgStore

_EVENTS = """
SELECT e.session_id, e.event FROM {s}.events e
JOIN {s}.sessions s ON s.owner = e.owner AND s.session_id = e.session_id
WHERE e.owner = {me} AND s.project = %(project)s AND e.type = ANY(%(types)s)
  AND (e.type IN ('session/start', 'turn/start')
       OR e.event -> 'data' -> 'files' @> %(named)s
       OR e.event -> 'data' -> 'changes' @> %(named)s
       OR (e.type IN ('tool/call', 'tool/result')
           AND e.event -> 'data' ->> 'name' = 'write_file'
           AND NOT (e.event -> 'data' ? 'files')
           AND (e.type = 'tool/result'
                OR strpos(e.event -> 'data' -> 'args' ->> 'path', %(base)s) > 0)))
ORDER BY e.session_id, e.seq
"""


def database_changes(
    pg: PgStore, project_key: str, path: str, since: datetime | None, until: datetime | None
) -> ChangeRows:
    """Return the changes of `path` (newest first) and a lookup of the sessions' titles."""
    import psycopg
    from psycopg.types.json import Jsonb

    from ..pg.query import q

    params = {
        "project": project_key,
        "types": sorted(TYPES),
        "named": Jsonb([{"path": path}]),
        "base": path.rsplit("/", 1)[-1],  # a call's `path` as the model wrote it ends so
    }
    try:
        with pg.connection() as conn:
            rows = conn.execute(q(pg.schema, _EVENTS), params).fetchall()
    except psycopg.Error as exc:  # (an unreachable database is the store's own error)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise TimelineError(f"the database could not be read: {first}") from None

    found: list[ChangeRow] = []
    titles: dict[str, str | None] = {}
    batch: list[object] = []
    current: str | None = None
    cursor = Cursor()

    def flush() -> None:
        if current is not None:
            events = [EVENT_ADAPTER.validate_python(e) for e in batch]
            found.extend(r for r in project(current, events, cursor) if r.path == path)
            titles[current] = cursor.title

    for session_id, event in rows:
        if session_id != current:
            flush()
            current, batch, cursor = session_id, [], Cursor()
        batch.append(event)
    flush()
    found = [
        r for r in found if (since is None or r.ts >= since) and (until is None or r.ts < until)
    ]
    found.sort(key=lambda r: (r.ts, r.session_id, r.seq), reverse=True)
    return found, lambda ids: {i: titles.get(i) for i in ids}


def database_blobs(pg: PgStore, digests: set[str]) -> dict[str, bytes | None]:
    """Return the role's blobs of `digests` in one query (verified; None: absent or damaged)."""
    import hashlib

    from ..pg.query import q

    wanted = sorted(d for d in digests if len(d) == 64)
    found: dict[str, bytes | None] = dict.fromkeys(wanted)
    statement = "SELECT digest, data FROM {s}.blobs WHERE owner = {me} AND digest = ANY(%s)"
    with pg.connection() as conn:
        for digest, data in conn.execute(q(pg.schema, statement), (wanted,)).fetchall():
            content = bytes(data)
            if hashlib.sha256(content).hexdigest() == digest:
                found[digest] = content
    return found
