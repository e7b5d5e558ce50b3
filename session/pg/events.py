"""Appending and reading a session's events: one row each, `(session_id, seq)` dense.

An append takes the session row's `next_seq` with one `UPDATE … RETURNING` in the same
transaction as the inserts: concurrent appenders to one session queue on that row lock,
and a transaction that fails gives its numbers back, so seqs are never skipped nor
repeated (the primary key is the backstop). The writer lock (`writer.py`) keeps a
second process from appending at all; this keeps the log dense even if one did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import SessionError, SessionNotFoundError
from ..events import EVENT_ADAPTER, Event, utcnow
from ..redaction import Redactor
from .query import Conn, jsonb, q

_TAKE_SEQS = """UPDATE {s}.sessions SET next_seq = next_seq + %s, updated_at = now()
    WHERE owner = {me} AND session_id = %s RETURNING next_seq - %s"""
_INSERT = """INSERT INTO {s}.events (session_id, seq, ts, type, turn, step, event)
    VALUES (%s, %s, %s, %s, %s, %s, %s)"""
_TOUCH = """UPDATE {s}.sessions SET updated_at = updated_at
    WHERE owner = {me} AND session_id = %s"""
_LAST_TURN_MARK = """SELECT type, turn FROM {s}.events
    WHERE owner = {me} AND session_id = %s AND type IN ('turn/start', 'turn/end')
    ORDER BY seq DESC LIMIT 1"""
_LAST_TURN_END = """SELECT type, event->'data'->>'reason' FROM {s}.events
    WHERE owner = {me} AND session_id = %s AND type IN ('turn/start', 'turn/end')
    ORDER BY seq DESC LIMIT 1"""
_READ = """SELECT event FROM {s}.events
    WHERE owner = {me} AND session_id = %s AND seq >= %s ORDER BY seq LIMIT %s"""
_READ_TYPES = """SELECT event FROM {s}.events
    WHERE owner = {me} AND session_id = %s AND seq >= %s AND type = ANY(%s)
    ORDER BY seq LIMIT %s"""


@dataclass(frozen=True)
class EventDraft:
    """An event to append: its seq and time are given when it is written."""

    type: str
    data: Mapping[str, Any] = field(default_factory=dict)
    turn: int | None = None
    step: int | None = None


def _take_seqs(conn: Conn, schema: str, session_id: str, count: int) -> int:
    row = conn.execute(q(schema, _TAKE_SEQS), (count, session_id, count)).fetchone()
    if row is None:
        raise SessionNotFoundError(f"no session {session_id} in the PostgreSQL store")
    start: int = row[0]
    return start


def append_events(
    conn: Conn,
    schema: str,
    session_id: str,
    drafts: Sequence[EventDraft],
    redactor: Redactor,
    *,
    durable: bool = True,
) -> list[Event]:
    """Validate, scrub and append `drafts` in one transaction; return them (unscrubbed).

    Validation happens before anything is written: an invalid draft appends nothing.
    `durable=False` commits without waiting for the WAL flush (see `insert_events`).
    """
    raws: list[dict[str, Any]] = []
    for draft in drafts:
        raw = {
            "seq": 0,
            "ts": utcnow(),
            "type": draft.type,
            "turn": draft.turn,
            "step": draft.step,
            "data": dict(draft.data),
        }
        EVENT_ADAPTER.validate_python(raw)  # never write what cannot be read back
        raws.append(raw)
    if not raws:
        return []
    _insert(conn, schema, session_id, raws, redactor, durable=durable, numbered=False)
    return [EVENT_ADAPTER.validate_python(raw) for raw in raws]


def insert_events(
    conn: Conn,
    schema: str,
    session_id: str,
    raws: Sequence[dict[str, Any]],
    redactor: Redactor,
    *,
    durable: bool,
) -> None:
    """Append events already numbered and validated by their writer (who holds the lock).

    Their seqs must continue the log exactly, or nothing is written. `durable=False`
    commits with `synchronous_commit = off`: visible at once and kept if our process dies,
    but a crash of the database server may lose the last fraction of a second; the next
    durable commit flushes everything before it too (the WAL is one sequence).
    """
    if raws:
        _insert(conn, schema, session_id, raws, redactor, durable=durable, numbered=True)


def _insert(
    conn: Conn,
    schema: str,
    session_id: str,
    raws: Sequence[dict[str, Any]],
    redactor: Redactor,
    *,
    durable: bool,
    numbered: bool,
) -> None:
    with conn.transaction():
        if not durable:
            conn.execute("SET LOCAL synchronous_commit = off")
        start = _take_seqs(conn, schema, session_id, len(raws))
        rows = []
        for offset, raw in enumerate(raws):
            if not numbered:
                raw["seq"] = start + offset
            elif raw["seq"] != start + offset:
                raise SessionError(
                    f"session {session_id}: event seq {raw['seq']} does not continue the log "
                    f"at seq {start + offset} (was it written by another process?)"
                )
            stored = {**raw, "data": redactor.scrub(raw["data"])}
            rows.append(
                (session_id, raw["seq"], raw["ts"], raw["type"], raw["turn"], raw["step"])
                + (jsonb(stored),)
            )
        with conn.cursor() as cur:
            cur.executemany(q(schema, _INSERT), rows)


def commit_durably(conn: Conn, schema: str, session_id: str) -> None:
    """Wait until everything committed on `conn` so far is flushed (a no-op row update).

    A transaction that writes nothing does not wait for the WAL flush, so this one touches
    the session's row under `synchronous_commit = on`.
    """
    with conn.transaction():
        conn.execute("SET LOCAL synchronous_commit = on")
        conn.execute(q(schema, _TOUCH), (session_id,))


def open_turn(conn: Conn, schema: str, session_id: str) -> int | None:
    """Return the turn a `turn/start` left open at the end of the log, or None."""
    row = conn.execute(q(schema, _LAST_TURN_MARK), (session_id,)).fetchone()
    if row is None or row[0] != "turn/start":
        return None
    turn: int | None = row[1]
    return turn


def last_turn_end(conn: Conn, schema: str, session_id: str) -> str | None:
    """Return how the last turn ended when not completed (`interrupted`: still open)."""
    row = conn.execute(q(schema, _LAST_TURN_END), (session_id,)).fetchone()
    if row is None:
        return None
    if row[0] == "turn/start":
        return "interrupted"
    reason: str | None = row[1]
    return None if reason == "completed" else reason


def copy_events(
    conn: Conn, schema: str, session_id: str, events: Sequence[Mapping[str, Any]]
) -> int:
    """Append already-written events verbatim (a fork's prefix, a migrated log).

    Their seqs must continue the session's exactly; return the next seq.
    """
    checked = [EVENT_ADAPTER.validate_python(event) for event in events]
    with conn.transaction():
        start = _take_seqs(conn, schema, session_id, len(checked))
        seqs = [event.seq for event in checked]
        if seqs != list(range(start, start + len(checked))):
            raise SessionError(
                f"session {session_id}: copied events must continue its log densely from seq "
                f"{start}, not be seqs {seqs[0]}..{seqs[-1]}"
            )
        rows = [
            (session_id, event.seq, event.ts, event.type, event.turn, event.step, jsonb(raw))
            for event, raw in zip(checked, map(dict, events), strict=True)
        ]
        with conn.cursor() as cur:
            cur.executemany(q(schema, _INSERT), rows)
    return start + len(checked)


def read_events(
    conn: Conn,
    schema: str,
    session_id: str,
    from_seq: int = 0,
    limit: int | None = None,
    types: frozenset[str] | None = None,
) -> list[dict[str, Any]]:
    """Return the session's events with `seq >= from_seq` (of `types`), in order, as JSON."""
    if types is None:
        rows = conn.execute(q(schema, _READ), (session_id, from_seq, limit)).fetchall()
    else:
        params = (session_id, from_seq, sorted(types), limit)
        rows = conn.execute(q(schema, _READ_TYPES), params).fetchall()
    return [row[0] for row in rows]
