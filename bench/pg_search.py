"""Search on PostgreSQL vs the local store: query p50 and p95 per kind, index build and size.

The same events go into both stores: the logs of bench/search.py (its corpus and turns) are
written as the local store writes them and indexed by `SearchIndex.sync`; the same events
are copied into PostgreSQL (`copy_events`, as a migration copies a log) and indexed by
`catch_up`. Then the same queries (words, substrings, Japanese and Chinese) run on both,
through `SearchIndex.search` and `session.pg.search.search` (which checks first that
nothing is left to index, as every search does); ratios are PostgreSQL ÷ local, one run.

It needs a server: `--dsn postgresql://…`, or `AGENT_ASSIST_TEST_PG` (what
`eval "$(tests/pg/start-postgres.sh)"` exports); without one it says so and skips. Each
run works in a schema of its own, dropped at the end.

    python -m bench.pg_search [--smoke|--long] [--dsn DSN]
"""

from __future__ import annotations

import argparse
import logging
import secrets
import sys
import time
from pathlib import Path

import orjson

from session.local.manager import SessionManager
from session.pg import PgStore
from session.pg.events import copy_events
from session.pg.search import _TRIGRAM, catch_up, fold_query, search
from session.search import SearchIndex
from session.workspace.identity import project_identity

from .common import (
    DSN_ENV,
    Mode,
    Result,
    Row,
    database_dsn,
    fmt_bytes,
    fmt_s,
    median,
    ratio_row,
    scratch_dir,
)
from .search import EVENTS_PER_SESSION, QUERIES, Corpus, LogWriter, percentile

SIZES: dict[Mode, list[int]] = {
    "smoke": [2_000],
    "default": [10_000, 100_000],
    "long": [100_000, 1_000_000],
}
COPY_BATCH = 5_000  # events per transaction when loading PostgreSQL
ROUNDS = 3  # each query's time is its median over this many rounds (one above 100k events)


def _write_logs(tmp: Path, total: int) -> tuple[SessionManager, Corpus, list[str], int]:
    workspace = tmp / f"ws{total}"
    workspace.mkdir()
    manager = SessionManager(workspace, home=tmp / f"home{total}")
    manager.layout.ensure_dirs()
    corpus = Corpus()
    writer = LogWriter(corpus)
    sessions = max(2, total // EVENTS_PER_SESSION)
    ids = [secrets.token_hex(6) for _ in range(sessions)]
    written = 0
    for session_id in ids:
        events, _turns = writer.write(
            manager.layout.log_path(session_id), session_id, workspace, total // sessions
        )
        written += events
    return manager, corpus, ids, written


def _load(pg: PgStore, manager: SessionManager, ids: list[str], project: str) -> float:
    """Copy every log's events into PostgreSQL; return the seconds it took."""
    start = time.perf_counter()
    for session_id in ids:
        pg.create_session(session_id, project, workspace_root=str(manager.workspace_root))
        with manager.layout.log_path(session_id).open("rb") as log:
            events = [orjson.loads(line) for line in log]
        with pg.connection() as conn:
            for at in range(0, len(events), COPY_BATCH):
                copy_events(conn, pg.schema, session_id, events[at : at + COPY_BATCH])
    return time.perf_counter() - start


def _sizes(pg: PgStore) -> tuple[int, int, int]:
    """Return the bytes of the search tables with their indexes, the rows, the bytes of text."""
    with pg.connection() as conn:
        row = conn.execute(
            "SELECT pg_total_relation_size(%s::regclass) + pg_total_relation_size(%s::regclass)",
            (f'"{pg.schema}".search_texts', f'"{pg.schema}".search_progress'),
        ).fetchone()
        texts = conn.execute(
            f'SELECT count(*), coalesce(sum(octet_length(text)), 0) FROM "{pg.schema}".search_texts'  # noqa: S608
        ).fetchone()
    assert row is not None and texts is not None
    return int(row[0]), int(texts[0]), int(texts[1])


def measure_size(dsn: str, mode: Mode, total: int, tmp: Path, result: Result) -> None:
    """Build both stores of `total` events, index, query; add rows and details."""
    label = f"{total:,} events"
    manager, corpus, ids, written = _write_logs(tmp, total)
    project = project_identity(manager.workspace_root).key
    index = SearchIndex.for_project(manager.layout)
    start = time.perf_counter()
    stats = index.sync(manager.layout)
    local_build = time.perf_counter() - start
    assert stats.events == written and not stats.problems, stats
    index.close()
    local_bytes = sum(
        p.stat().st_size
        for p in manager.layout.project_dir.iterdir()
        if p.name.startswith("index.sqlite")
    )
    schema = f"bench_{secrets.token_hex(4)}"
    pg = PgStore.open(dsn, schema=schema)
    try:
        load = _load(pg, manager, ids, project)
        start = time.perf_counter()
        catch_up(pg, project=project)
        pg_build = time.perf_counter() - start
        pg_bytes, rows, text_bytes = _sizes(pg)
        assert rows == stats.rows, (rows, stats.rows)  # the same texts, one row each
        result.rows.append(
            ratio_row(
                f"{label}: index build, PostgreSQL catch_up vs local sync",
                pg_build,
                local_build,
                None,
            )
        )
        result.rows.append(
            Row(
                f"{label}: index size, PostgreSQL vs local",
                fmt_bytes(pg_bytes),
                fmt_bytes(local_bytes),
                pg_bytes / local_bytes,
            )
        )
        result.details.append(
            f"{label}: {len(ids)} sessions, {stats.rows:,} text rows ({fmt_bytes(text_bytes)});"
            f" local sync {fmt_s(local_build)}; PostgreSQL load of the events (copy_events)"
            f" {fmt_s(load)}, then catch_up {fmt_s(pg_build)} ({written / pg_build:,.0f} ev/s);"
            f" search_texts with its indexes {fmt_bytes(pg_bytes)}, index.sqlite"
            f" {fmt_bytes(local_bytes)}"
        )
        rounds = ROUNDS if total <= 100_000 or mode == "long" else 1
        parts = []
        for kind, queries in corpus.queries(QUERIES).items():
            local_times: list[float] = []
            pg_times: list[float] = []
            same = 0
            for query in queries:
                runs: dict[str, list[float]] = {"local": [], "pg": []}
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    local_hits = index.search(query)
                    runs["local"].append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    pg_hits = search(pg, project, query)
                    runs["pg"].append(time.perf_counter() - t0)
                assert local_hits and pg_hits, f"no hit for {query!r}"
                same += {(h.session_id, h.seq) for h in local_hits} == {
                    (h.session_id, h.seq) for h in pg_hits
                }
                local_times.append(median(runs["local"]))
                pg_times.append(median(runs["pg"]))
            for name, pick in (("p50", median), ("p95", lambda v: percentile(v, 95))):
                result.rows.append(
                    ratio_row(
                        f"{label}: {kind} queries, PostgreSQL {name} vs local {name}",
                        pick(pg_times),
                        pick(local_times),
                        None,
                    )
                )
            grams = sum(bool(_TRIGRAM.search(fold_query(q))) for q in queries)
            parts.append(
                f"{kind} (n={len(queries)}, {grams} with a trigram, e.g. "
                f"{', '.join(repr(q) for q in queries[:3])}): PostgreSQL p50 "
                f"{fmt_s(median(pg_times))}, max {fmt_s(max(pg_times))}; local p50 "
                f"{fmt_s(median(local_times))}; the same hits (limit 50) for {same}"
            )
        index.close()
        result.details.append(
            f"{label}: queries (median of {rounds} round(s) each): " + "; ".join(parts)
        )
    finally:
        with pg.connection() as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        pg.close()


def run(mode: Mode, dsn: str | None = None) -> Result:
    """Run the benchmark (skipped, saying why, without a PostgreSQL server)."""
    result = Result("pg_search")
    dsn = database_dsn(result, dsn)
    if dsn is None:
        return result
    with scratch_dir("pg-search") as tmp:
        for total in SIZES[mode]:
            measure_size(dsn, mode, total, tmp, result)
    return result


def main(argv: list[str] | None = None) -> int:
    """Run it and print the rows and details."""
    parser = argparse.ArgumentParser(prog="python -m bench.pg_search", description=__doc__)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--smoke", action="store_true", help="a tiny size, seconds")
    size.add_argument("--long", action="store_true", help="100k and 1M events (many minutes)")
    parser.add_argument("--dsn", help=f"the server (default: ${DSN_ENV})")
    args = parser.parse_args(argv)
    mode: Mode = "smoke" if args.smoke else "long" if args.long else "default"
    logging.getLogger("session").setLevel(logging.ERROR)
    start = time.perf_counter()
    result = run(mode, args.dsn)
    print(f"pg_search ({mode}, {fmt_s(time.perf_counter() - start)})")
    for row in result.rows:
        ratio = "—" if row.ratio is None else f"{row.ratio:.2f}×"
        print(f"  {row.measure}: {row.ours} vs {row.baseline} ({ratio})")
    for line in result.details:
        print(f"  - {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
