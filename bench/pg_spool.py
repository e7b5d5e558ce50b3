"""Spool replay after an outage: how fast spooled events reach PostgreSQL once it is back.

N events shaped like real turns (a `turn/start`, streamed chunks, a `turn/end`) are written
to a session's spool (`session/pg/spool.py`), as a server does while the database is away,
then sent with `replay_spool` (batches of `REPLAY_BATCH` through `SessionWriter.copy`).
Baseline, in the same run and database: the same events appended online through the
session's `PgEventLog` (chunks batched, one durable commit per turn), which is what the
outage delayed. The ratio is replay time ÷ online time: below 1, catching up is faster than
the original writing was.
"""

from __future__ import annotations

import os
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

from .common import Mode, Result, Row, fmt_s, scratch_dir

SIZES: dict[Mode, tuple[int, ...]] = {
    "smoke": (1_000,),
    "default": (1_000, 10_000),
    "long": (1_000, 10_000, 100_000),
}
CHUNKS_PER_TURN = 48
RUNS: dict[Mode, int] = {"smoke": 1, "default": 3, "long": 3}


def turn_events(count: int) -> list[tuple[str, dict[str, Any], int | None, int | None]]:
    """Return `count` events as (type, data, turn, step), turn after turn."""
    out: list[tuple[str, dict[str, Any], int | None, int | None]] = []
    turn = 0
    while len(out) < count:
        turn += 1
        out.append(("turn/start", {"input": f"question {turn}"}, turn, None))
        for n in range(CHUNKS_PER_TURN):
            out.append(("assistant/chunk", {"delta": f"piece {n} of answer {turn} "}, turn, 1))
        out.append(("turn/end", {"reason": "completed"}, turn, None))
    return out[:count]


def _online(store: Any, events: list[Any]) -> tuple[float, str]:
    session = store.create_session()
    start = time.perf_counter()
    for type_, data, turn, step in events:
        session.append(type_, data, turn=turn, step=step)
    session.sync()
    elapsed = time.perf_counter() - start
    session.close()
    return elapsed, session.session_id


def _replay(store: Any, events: list[Any]) -> float:
    from session.pg.log import replay_spool
    from session.pg.spool import Spool

    session = store.create_session()  # seq 0 stored; the rest spooled, as after a cut
    session_id = session.session_id
    raws = [
        {"seq": seq, "ts": "2026-12-01T12:00:00Z", "type": t, "turn": turn, "step": step, "data": d}
        for seq, (t, d, turn, step) in enumerate(events, start=session.next_seq)
    ]
    session.close()
    spool = Spool(store.spool_dir, session_id, store.pg.redactor)
    spool.write(raws, durable=True)
    spool.close()
    writer = store.pg.acquire_writer(session_id)
    try:
        start = time.perf_counter()
        sent = replay_spool(spool, writer)
        elapsed = time.perf_counter() - start
    finally:
        writer.release()
    assert sent == len(events), (sent, len(events))
    stored = store.read_events(session_id).events
    assert [e.seq for e in stored] == list(range(len(events) + 1))
    return elapsed


def run(mode: Mode, dsn: str | None = None) -> Result:
    """Time spool replay against online appending, per size."""
    result = Result("pg_spool")
    dsn = dsn or os.environ.get("AGENT_ASSIST_TEST_PG")
    if not dsn:
        result.details.append("skipped: no database (--dsn or AGENT_ASSIST_TEST_PG)")
        return result
    from session.pg.backend import PgSessionStore

    schema = f"bench_{secrets.token_hex(4)}"
    with scratch_dir("pg-spool") as tmp:
        (tmp / "ws").mkdir()
        store = PgSessionStore.open(dsn, Path(tmp / "ws"), home=tmp / "home", schema=schema)
        try:
            for size in SIZES[mode]:
                events = turn_events(size)
                online = statistics.median(_online(store, events)[0] for _ in range(RUNS[mode]))
                replay = statistics.median(_replay(store, events) for _ in range(RUNS[mode]))
                result.rows.append(
                    Row(
                        f"spool replay of {size:,} events vs appending them online",
                        f"{fmt_s(replay)} ({size / replay:,.0f} events/s)",
                        f"{fmt_s(online)} ({size / online:,.0f} events/s)",
                        replay / online,
                    )
                )
        finally:
            with store.pg.connection() as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            store.close()
    result.details.append(
        f"turns of {CHUNKS_PER_TURN + 2} events; replay in batches of 500 (one transaction "
        "each, one durable commit at the end); online: chunks batched by 64 or 0.2 s, one "
        "durable commit per turn; median of "
        f"{RUNS[mode]} runs"
    )
    return result
