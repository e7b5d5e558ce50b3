"""Session lists on PostgreSQL at 100,000 sessions in a project, against one (issue #43).

"A page of 50 at 100,000 sessions in a project answers within 50 ms over LSP and the CLI."

One real session is recorded through `SessionLifecycle` in each of two projects of one
schema (three turns, the exit autosave writes its snapshot); the big project's session row
is then copied to 100,000 rows with `COPY` into the store's own `sessions` table (new ids,
`updated_at` a minute apart, one in ten without a turn: folded), and the table analyzed,
as autovacuum would. The copies have no events: a listing reads none. Timed, each against
the same at the one-session project in the same run:

- `agentAssist/sessions {offset: 0, limit: 50}` over LSP against the real server (request →
  answer, median of N, one server per project), and a deep page (`offset` 50,000);
- `PgSessionStore.list_rows_page(0, 50)` in-process (the query and the rows, no LSP);
- `agent-assist sessions list --json --limit 50` as a subprocess (process wall time), each
  run interleaved with the same at one session; the target is on the difference (its cost
  over starting the CLI at all);
- the `EXPLAIN (ANALYZE, BUFFERS)` of the listing's query for the first page and the deep
  one (the plans go in the details: an index scan of 50 rows, not a sort of 100,000).

The schema is kept between runs (`bench_listing_v<GENERATOR>_<count>`, reused when its
row count is right and the workspaces under the system temp dir are there; the store
migrates it when the code's schema is newer). It needs a server: `--dsn`, or
`AGENT_ASSIST_TEST_PG`; without one it says so and skips.

    python -m bench --only pg_listing [--smoke] [--dsn DSN]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .common import DSN_ENV, Mode, Result, Row, database_dsn, fmt_s, median, spread
from .server_process import PYCACHE, BenchClient, make_workspace, server_env

COUNTS: dict[Mode, int] = {"smoke": 2_000, "default": 100_000, "long": 100_000}
REPEATS: dict[Mode, int] = {"smoke": 3, "default": 21, "long": 41}
CLI_REPEATS: dict[Mode, int] = {"smoke": 2, "default": 15, "long": 25}
PAGE = 50
TARGET_S = 0.050  # "a page of 50 at 100,000 sessions answers within 50 ms"
GENERATOR = 2  # bump when the generated data changes: a new schema is made
INSTANCE = "bench"
FOLDED_EVERY = 10  # one session in ten has no turn (an exit without one): folded


def _base() -> Path:
    return Path(tempfile.gettempdir()) / f"agent-assist-bench-pg-listing-{os.getuid()}"


def _schema(count: int) -> str:
    return f"bench_listing_v{GENERATOR}_{count}"


def _record(dsn: str, schema: str, workspace: Path, home: Path) -> str:
    """Record a closed session of three turns in the workspace's project; return its id."""
    from session.lifecycle import SessionLifecycle
    from session.store.choose import open_store

    store = open_store(dsn, workspace, home=home, schema=schema)
    lifecycle = SessionLifecycle(store, INSTANCE)
    lifecycle.resume_or_start(None, True)
    for n in range(3):
        recorder = lifecycle.begin_turn(f"question {n} about the reply templates")
        recorder.start_step([{"kind": "request", "parts": []}])
        recorder.chunk(f"answer {n}: the reply template greets the customer by name")
        recorder.end_step({"input_tokens": 1, "output_tokens": 1})
        recorder.end("completed")
    session_id = lifecycle.session_id
    assert lifecycle.close(), "the exit autosave wrote no snapshot"
    store.close()
    return session_id


_COPIED = (
    "session_id, project, workspace_root, instance_id, persistence, title, turns, next_seq,"
    " created_at, updated_at, snapshot, snapshot_seq, phase, host"
)


def _copy_rows(dsn: str, source: str, schema: str, first: str, count: int) -> None:
    """Copy the session row `first` of schema `source` to `count` rows of its project in
    `schema` (the first keeps its id and times; the others are older, a minute apart)."""
    import secrets

    import psycopg
    from psycopg.types.json import Jsonb

    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            f'SELECT {_COPIED} FROM "{source}".sessions WHERE session_id = %s',  # noqa: S608
            (first,),
        ).fetchone()
        assert found is not None
        row = list(found)
        snapshot = row[10]
        empty = {**snapshot, "turns": 0, "title": None, "summary": "", "recent_messages": []}
        newest: datetime = row[9]
        # COPY into a table under row-level security is refused: into a temporary one, then
        # one INSERT … SELECT (the policy checks each row's owner).
        conn.execute(
            "CREATE TEMPORARY TABLE bench_rows ON COMMIT DROP AS"
            f' SELECT {_COPIED} FROM "{source}".sessions LIMIT 0'  # noqa: S608
        )
        with conn.cursor() as cur, cur.copy(f"COPY bench_rows ({_COPIED}) FROM STDIN") as copy:
            copy.write_row((*row[:10], Jsonb(snapshot), *row[11:]))
            for n in range(1, count):
                other = secrets.token_hex(6)
                at = newest - timedelta(minutes=n)
                folded = n % FOLDED_EVERY == 0
                copy.write_row(
                    (
                        other,
                        *row[1:5],
                        None if folded else f"{row[5]} ({n})",
                        0 if folded else row[6],
                        row[7],
                        at,
                        at,
                        Jsonb({**(empty if folded else snapshot), "session_id": other}),
                        *row[11:],
                    )
                )
        conn.execute(
            f'INSERT INTO "{schema}".sessions ({_COPIED}) SELECT {_COPIED} FROM bench_rows'  # noqa: S608
        )
        conn.commit()


def _vacuum(dsn: str, schema: str) -> float:
    """VACUUM (ANALYZE) the sessions, as autovacuum does soon after a load or a migration
    of that size (its visibility map lets the listing's counts read the index only)."""
    import psycopg

    start = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'VACUUM (ANALYZE) "{schema}".sessions')
    return time.perf_counter() - start


def _rows(dsn: str, schema: str, made: str | None = None) -> int:
    """Return how many sessions the schema holds; with `made` (the newest of the data), first
    delete those made later (the fresh sessions the servers of earlier runs saved)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.sessions",))
        if not exists.fetchone()[0]:  # type: ignore[index]
            return 0
        if made is not None:
            conn.execute(
                f'DELETE FROM "{schema}".sessions WHERE created_at > %s::timestamptz',  # noqa: S608
                (made,),
            )
            conn.commit()
        found = conn.execute(f'SELECT count(*) FROM "{schema}".sessions').fetchone()  # noqa: S608
        return int(found[0]) if found else 0


def _newest(dsn: str, schema: str) -> str:
    import psycopg

    with psycopg.connect(dsn) as conn:
        found = conn.execute(f'SELECT max(created_at)::text FROM "{schema}".sessions').fetchone()  # noqa: S608
        assert found is not None
        return str(found[0])


def _drop(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@dataclass
class Data:
    """The benchmark's projects: the schema, the workspaces, the home, how they were made."""

    schema: str
    big: Path
    one: Path
    home: Path
    made: str  # how long loading and upgrading took, or that an earlier run made them


def prepare(dsn: str, count: int) -> Data:
    """Make (or reuse) the schema of `count` + 1 sessions, as version 5 held them, upgraded.

    Both sessions are recorded in a scratch schema, their rows copied into a schema of
    version 5 (the one before the listing's index), which this code then upgrades, timed.
    """
    from session.pg import PgStore
    from session.pg.migrations import MIGRATIONS

    base, schema = _base() / str(count), _schema(count)
    data = Data(schema, base / "big", base / "one", base / "home", "made by an earlier run")
    marker = base / "complete.json"
    if data.big.is_dir() and data.one.is_dir() and marker.is_file():
        made = json.loads(marker.read_text())["made"]
        if _rows(dsn, schema, made) == count + 1:
            return data
    scratch = f"{schema}_recording"
    for name in (schema, scratch):
        _drop(dsn, name)
    shutil.rmtree(base, ignore_errors=True)
    try:
        first = _record(dsn, scratch, make_workspace(data.big), data.home)
        single = _record(dsn, scratch, make_workspace(data.one), data.home)
        PgStore.open(dsn, schema=schema, migrations=MIGRATIONS[:5]).close()
        start = time.perf_counter()
        _copy_rows(dsn, scratch, schema, first, count)
        _copy_rows(dsn, scratch, schema, single, 1)
        loaded = time.perf_counter() - start
    finally:
        _drop(dsn, scratch)
    assert _rows(dsn, schema) == count + 1
    marker.write_text(json.dumps({"made": _newest(dsn, schema)}))
    start = time.perf_counter()
    PgStore.open(dsn, schema=schema).close()  # the upgrade to this code's version
    upgraded = time.perf_counter() - start
    data.made = (
        f"loaded (COPY) in {fmt_s(loaded)} into a schema of version 5, upgraded to version"
        f" {len(MIGRATIONS)} (the listing's column, index and counts) in {fmt_s(upgraded)}"
    )
    return data


@contextmanager
def _store(dsn: str, schema: str, workspace: Path, home: Path) -> Iterator[Any]:
    from session.pg.backend import PgSessionStore
    from session.store.choose import open_store

    store = open_store(dsn, workspace, home=home, schema=schema)
    assert isinstance(store, PgSessionStore)
    try:
        yield store
    finally:
        store.close()


def explain(store: Any, offset: int) -> list[str]:
    """Return the EXPLAIN (ANALYZE, BUFFERS) lines of the listing's query for one page."""
    from session.pg import listing

    with store.pg.connection() as conn:
        return listing.explain_page(conn, store.pg.schema, store.project, offset, PAGE)


def in_process(store: Any, offset: int, repeats: int) -> list[float]:
    """Time `list_rows_page(offset, PAGE)` on an open store."""
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        rows, total, _folded = store.list_rows_page(offset, PAGE)
        times.append(time.perf_counter() - start)
        assert len(rows) == min(PAGE, max(0, total - offset)), (len(rows), total)
    return times[1:]


async def lsp_pages(
    env: dict[str, str], workspace: Path, offsets: list[int], repeats: int
) -> dict[int, list[float]]:
    """Time `agentAssist/sessions {offset, limit: 50}` in one server, per offset."""
    client = BenchClient(env, workspace, options={"autoResume": "never"})
    await client.start()
    try:
        await client.initialize()
        await client.ready()
        times: dict[int, list[float]] = {offset: [] for offset in offsets}
        for offset in offsets:  # warm: the first request pays the store's imports
            await client.request("agentAssist/sessions", {"offset": offset, "limit": PAGE})
        for _ in range(repeats):
            for offset in offsets:
                start = time.perf_counter()
                answer = await client.request(
                    "agentAssist/sessions", {"offset": offset, "limit": PAGE}
                )
                times[offset].append(time.perf_counter() - start)
                expected = min(PAGE, max(0, answer["total"] - offset))
                assert len(answer["sessions"]) == expected, (offset, answer["total"])
    finally:
        await client.stop()
    return times


def cli_page(env: dict[str, str], workspace: Path) -> float:
    """Run `agent-assist sessions list --json --limit 50`; return its wall time."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", "sessions", "list", "--json", "--limit", "50"],
        cwd=workspace,
        env=env,
        capture_output=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stderr.decode()
    listed = json.loads(done.stdout)
    assert len(listed["sessions"]) == min(PAGE, listed["total"]), done.stdout[:200]
    return seconds


def run(mode: Mode, dsn: str | None = None) -> Result:
    """Run the listing benchmark (skipped, saying why, without a PostgreSQL server)."""
    from session.store.choose import SCHEMA_ENV, STORE_ENV

    result = Result("pg_listing")
    dsn = database_dsn(result, dsn)
    if dsn is None:
        return result
    count = COUNTS[mode]
    deep = count // 2
    data = prepare(dsn, count)
    schema, big, one, home = data.schema, data.big, data.one, data.home
    label = f"{count:,} sessions vs 1"
    result.details.append(
        f"data: {count:,} session rows copied from one recorded session, one in"
        f" {FOLDED_EVERY} without a turn (folded), and a project of one; schema {schema},"
        f" {data.made}; then VACUUM (ANALYZE) in {fmt_s(_vacuum(dsn, schema))}"
    )
    env = server_env(home, PYCACHE)
    env.update({STORE_ENV: dsn, SCHEMA_ENV: schema})

    with _store(dsn, schema, big, home) as store, _store(dsn, schema, one, home) as single:
        repeats = REPEATS[mode]
        for offset, what in ((0, "the first page"), (deep, f"offset {deep:,}")):
            ours, base = in_process(store, offset, repeats), in_process(single, 0, repeats)
            result.rows.append(
                Row(
                    f"list_rows_page, {what} of {PAGE}, in-process, {label}",
                    fmt_s(median(ours)),
                    fmt_s(median(base)),
                    median(ours) / median(base),
                )
            )
            result.details.append(f"list_rows_page, {what}: {spread(ours)}; at 1: {spread(base)}")
        for offset in (0, deep):
            plan = explain(store, offset)
            result.details.append(f"EXPLAIN (ANALYZE, BUFFERS), offset {offset:,}:")
            result.details += [f"    {line}" for line in plan]

    targeted = count >= 100_000  # the size; smaller ones report only
    pages = asyncio.run(lsp_pages(env, big, [0, deep], REPEATS[mode]))
    single_page = asyncio.run(lsp_pages(env, one, [0], REPEATS[mode]))[0]
    for offset, what in (
        (0, "`agentAssist/sessions {offset: 0, limit: 50}` over LSP"),
        (deep, f"`agentAssist/sessions {{offset: {deep:,}, limit: 50}}` over LSP"),
    ):
        took, alone = median(pages[offset]), median(single_page)
        row = Row(f"{what}, {label}", fmt_s(took), fmt_s(alone), took / alone)
        if targeted:
            row.target, row.ok = f"≤ {fmt_s(TARGET_S)}", took <= TARGET_S
        result.rows.append(row)
        result.details.append(f"{what}: {spread(pages[offset])}; at 1: {spread(single_page)}")

    cli_big: list[float] = []
    cli_one: list[float] = []
    cli_page(env, big)  # warm: bytecode, the page cache
    for _ in range(CLI_REPEATS[mode]):
        cli_big.append(cli_page(env, big))
        cli_one.append(cli_page(env, one))
    added = [b - o for b, o in zip(cli_big, cli_one, strict=True)]
    what = "`agent-assist sessions list --json --limit 50`"
    row = Row(
        f"{what}, {label} (ours: the added time, the median of paired differences)",
        fmt_s(median(added)),
        fmt_s(median(cli_one)),
        median(cli_big) / median(cli_one),
    )
    if targeted:
        row.target, row.ok = f"added ≤ {fmt_s(TARGET_S)}", median(added) <= TARGET_S
    result.rows.append(row)
    result.details.append(
        f"{what}: {spread(cli_big)}; at 1, interleaved: {spread(cli_one)}; added: {spread(added)}"
    )
    return result


def main(argv: list[str] | None = None) -> int:
    """Run it alone and print the rows and details."""
    import argparse
    import logging

    parser = argparse.ArgumentParser(prog="python -m bench.pg_listing", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="2,000 sessions, seconds")
    parser.add_argument("--dsn", help=f"the server (default: ${DSN_ENV})")
    args = parser.parse_args(argv)
    logging.getLogger("session").setLevel(logging.ERROR)
    result = run("smoke" if args.smoke else "default", args.dsn)
    for row in result.rows:
        ratio = "—" if row.ratio is None else f"{row.ratio:.2f}×"
        print(f"  {row.measure}: {row.ours} vs {row.baseline} ({ratio}) {row.verdict}")
    for line in result.details:
        print(f"  - {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
