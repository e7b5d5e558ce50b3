"""The PostgreSQL store vs local files, in one run: append per turn, resume, many servers.

- append: completed turns recorded in-process through `SessionLifecycle` (`begin_turn`,
  `start_step`, N `chunk`s, `assistant_message`, `end_step`, `end("completed")`, as
  bench/append.py records one) on either store, the stores alternating turn by turn;
- resume: a session of 50 turns (default), made through the lifecycle on each store, then
  resumed in-process (a new store and lifecycle → resume context ready) and by the real
  server (spawn → `sessionChanged: resumed`, `autoResume: always`), the stores alternating;
- servers at once: 20 server processes (each its own workspace) on one database, each doing
  K turns against the fake model (a process of its own), all started before any turn: turns
  completed per second and p95 turn round trip, vs one server alone; the same on local files.

Ratios are PostgreSQL ÷ local, or many servers ÷ one. It needs a server: `--dsn`, or
`AGENT_ASSIST_TEST_PG` (what `eval "$(tests/pg/start-postgres.sh)"` exports); without one
it says so and skips. Everything goes in a schema of its own, dropped at the end.

    python -m bench --only pg_store [--smoke] [--dsn DSN]
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from session.store.backend import SessionStore
from session.store.choose import SCHEMA_ENV, STORE_ENV, open_store

from .common import (
    Mode,
    Result,
    Row,
    database_dsn,
    fmt_s,
    median,
    ratio_row,
    scratch_dir,
    spread,
)
from .resume import TurnPool, spawn_to_session, text_response, user_request
from .search import percentile
from .server import reply_text
from .server_process import PYCACHE, BenchClient, make_workspace, server_env
from .server_rows import REPLY_CHARS, REPLY_CHUNKS

KINDS = ("postgresql", "local")
INSTANCE = "bench"  # the instance id BenchClient sends
APPEND_TURNS: dict[Mode, int] = {"smoke": 5, "default": 100, "long": 300}  # per store and size
CHUNKS = (20, 200)  # streamed chunks per turn
RESUME_TURNS: dict[Mode, int] = {"smoke": 5, "default": 50, "long": 200}
RESUME_REPEATS: dict[Mode, int] = {"smoke": 1, "default": 7, "long": 11}
SPAWNS: dict[Mode, int] = {"smoke": 1, "default": 5, "long": 7}
SERVERS: dict[Mode, int] = {"smoke": 3, "default": 20, "long": 20}
TURNS_EACH: dict[Mode, int] = {"smoke": 2, "default": 15, "long": 30}  # K, per server
ROUNDS: dict[Mode, int] = {"smoke": 1, "default": 2, "long": 4}
_PID = re.compile(r"\bpid (\d+) on ")  # in our application_name (session/pg/connection.py)


@dataclass
class Stores:
    """Where the sessions go: a schema of the database, or the local files under `home`."""

    dsn: str
    schema: str
    home: Path

    def open(self, kind: str, workspace: Path) -> SessionStore:
        """Open the project's store, as the server does."""
        if kind == "local":
            return SessionManager(workspace, home=self.home)
        return open_store(self.dsn, workspace, schema=self.schema)

    def env(self, kind: str) -> dict[str, str]:
        """Return a server's environment for that store."""
        env = server_env(self.home, PYCACHE)
        if kind == "postgresql":
            env.update({STORE_ENV: self.dsn, SCHEMA_ENV: self.schema})
        return env


@contextmanager
def database_schema(dsn: str) -> Iterator[str]:
    """Create a schema of our own (migrated once, before any server races for it); drop it."""
    import psycopg

    from session.pg import PgStore

    schema = f"bench_{secrets.token_hex(4)}"
    PgStore.open(dsn, schema=schema, pool_size=1).close()
    try:
        yield schema
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def record_turn(lifecycle: SessionLifecycle, prompt: str, text: str, deltas: list[str]) -> None:
    """Record one completed turn as the server does (bench/append.py's turn)."""
    recorder = lifecycle.begin_turn(prompt)
    recorder.start_step([user_request(prompt)])
    for delta in deltas:
        recorder.chunk(delta)
    recorder.assistant_message(text_response(text))
    recorder.end_step({"input_tokens": 100, "output_tokens": 50})
    recorder.end("completed")


def split(text: str, parts: int) -> list[str]:
    """Cut `text` into `parts` deltas."""
    step = max(1, len(text) // parts)
    return [text[i * step : (i + 1) * step] for i in range(parts - 1)] + [
        text[(parts - 1) * step :]
    ]


def measure_append(stores: Stores, tmp: Path, mode: Mode, result: Result) -> None:
    """Time completed turns on both stores, alternating; check each is committed."""
    pool = TurnPool(seed=3)
    for chunks in CHUNKS:
        lifecycles = {}
        for kind in KINDS:
            workspace = make_workspace(tmp / f"append-{kind}-{chunks}")
            lifecycles[kind] = SessionLifecycle(stores.open(kind, workspace), INSTANCE)
        times: dict[str, list[float]] = {kind: [] for kind in KINDS}
        turns = APPEND_TURNS[mode]
        for number in range(turns + 1):  # turn 0 (the session's start) is a warm-up
            prompt = pool.prompts[number % len(pool.prompts)]
            text, _ = pool.responses[number % len(pool.responses)]
            deltas = split(text, chunks)
            for kind in KINDS if number % 2 else KINDS[::-1]:
                lifecycle = lifecycles[kind]
                start = time.perf_counter()
                record_turn(lifecycle, prompt, text, deltas)
                elapsed = time.perf_counter() - start
                assert lifecycle.current.log.pending == 0, "a completed turn not committed"
                if number:
                    times[kind].append(elapsed)
        events = {}
        for kind, lifecycle in lifecycles.items():
            session_id = lifecycle.session_id
            events[kind] = lifecycle.current.log.next_seq
            store = lifecycle.store
            lifecycle.close()
            stored = store.read_events(session_id).events
            assert len(stored) >= events[kind] and stored[events[kind] - 1].type == "turn/end"
            store.close()
        per_turn = (events["local"] - 1) // (turns + 1)
        pg, local = median(times["postgresql"]), median(times["local"])
        result.rows.append(
            ratio_row(
                f"append, completed turn of {per_turn} events ({chunks} chunks): "
                f"PostgreSQL vs local (n={turns})",
                pg,
                local,
                None,
            )
        )
        result.details.append(
            f"append, {chunks} chunks per turn: PostgreSQL {spread(times['postgresql'])}; "
            f"local {spread(times['local'])}; {per_turn} events a turn (turn/start, "
            f"step/start, {chunks} chunks, assistant/message, step/end, turn/end)"
        )


def make_session(stores: Stores, kind: str, workspace: Path, turns: int) -> str:
    """Record a closed session of `turns` turns (snapshot written) and point `bench` at it."""
    store = stores.open(kind, workspace)
    lifecycle = SessionLifecycle(store, INSTANCE)
    pool = TurnPool(seed=11)
    for number in range(turns):
        text, chunks = pool.responses[number % len(pool.responses)]
        record_turn(lifecycle, pool.prompts[number % len(pool.prompts)], text, chunks)
    session_id = lifecycle.session_id
    assert lifecycle.close(), "the exit autosave wrote no snapshot"
    store.write_pointer(INSTANCE, session_id)
    store.close()
    return session_id


def resume_in_process(
    stores: Stores, kind: str, workspace: Path, session_id: str
) -> tuple[float, float]:
    """Time a server-like start up to the resume context, and the store's opening in it."""
    start = time.perf_counter()
    store = stores.open(kind, workspace)
    opened = time.perf_counter() - start
    lifecycle = SessionLifecycle(store, INSTANCE)
    reason = lifecycle.resume_or_start(lifecycle.find_previous(), accept=True)
    context = lifecycle.resume_context
    elapsed = time.perf_counter() - start
    assert reason == "resumed" and lifecycle.session_id == session_id, lifecycle.warnings
    assert context.startswith("# Resumed Session Context"), context
    lifecycle.close()
    store.close()
    return elapsed, opened


def measure_resume(stores: Stores, tmp: Path, mode: Mode, result: Result) -> None:
    """Resume a session of RESUME_TURNS turns from each store, in-process and over LSP."""
    turns = RESUME_TURNS[mode]
    workspaces = {kind: make_workspace(tmp / f"resume-{kind}") for kind in KINDS}
    ids = {kind: make_session(stores, kind, workspaces[kind], turns) for kind in KINDS}
    ready: dict[str, list[float]] = {kind: [] for kind in KINDS}
    opening: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for number in range(RESUME_REPEATS[mode] + 1):
        for kind in KINDS if number % 2 else KINDS[::-1]:
            seconds, opened = resume_in_process(stores, kind, workspaces[kind], ids[kind])
            if number:
                ready[kind].append(seconds)
                opening[kind].append(opened)
    resumed: dict[str, list[float]] = {kind: [] for kind in KINDS}
    new: dict[str, list[float]] = {kind: [] for kind in KINDS}
    asyncio.run(spawn_to_session(stores.env("local"), make_workspace(tmp / "warm-up")))
    for number in range(SPAWNS[mode]):
        for kind in KINDS if number % 2 else KINDS[::-1]:
            env = stores.env(kind)
            seconds, reason, got = asyncio.run(spawn_to_session(env, workspaces[kind]))
            assert reason == "resumed" and got == ids[kind], (kind, reason, got)
            resumed[kind].append(seconds)
            fresh = make_workspace(tmp / f"new-{kind}-{number}")
            seconds, reason, _ = asyncio.run(spawn_to_session(env, fresh))
            assert reason == "new", reason
            new[kind].append(seconds)
    label = f"resume, {turns}-turn session"
    for what, samples in (
        ("start (store opened) → resume context ready, in-process", ready),
        ("of that, opening the store (PostgreSQL: connect, schema check, pool)", opening),
        ("server spawn → session resumed over LSP", resumed),
        ("server spawn → new session over LSP", new),
    ):
        pg, local = samples["postgresql"], samples["local"]
        result.details.append(f"{label}: {what}: PostgreSQL {spread(pg)}; local {spread(local)}")
        if samples is not opening:  # (opening local files is next to nothing: no ratio)
            measure = f"{label}: {what}, PostgreSQL vs local (n={len(local)})"
            result.rows.append(ratio_row(measure, median(pg), median(local), None))


@contextmanager
def fake_model(tmp: Path, replies: int) -> Iterator[dict[str, str]]:
    """Run the fake model in a process of its own; yield the model options a client sends."""
    script = tmp / f"script-{secrets.token_hex(3)}.json"
    reply = {"text": reply_text(REPLY_CHARS), "chunk": REPLY_CHARS // REPLY_CHUNKS}
    script.write_text(json.dumps([reply] * replies))
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "lsp_server.fake_model", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
        env=server_env(tmp, PYCACHE),
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:"), base_url
        yield {"name": "bench-model", "baseUrl": base_url, "apiKey": "x"}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def cpu_seconds(pids: Iterable[int]) -> float:
    """Return the CPU time (user + system) the live processes `pids` have used so far."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue  # gone: what it used is not counted
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def backends(dsn: str, servers: set[int]) -> set[int]:
    """Return the PostgreSQL backends serving the processes `servers` (by application_name)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, application_name FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name LIKE 'agent-assist %%'"
        ).fetchall()
    return {pid for pid, name in rows if (m := _PID.search(name)) and int(m[1]) in servers}


@dataclass
class Group:
    """What one group of servers did: turns, times, CPU and the connections they held."""

    servers: int
    turns: int
    started: float = 0.0  # spawn → every session started
    wall: float = 0.0  # the timed turns, first sent → last answered
    times: list[float] = field(default_factory=list)  # every turn's round trip
    server_cpu: float = 0.0  # CPU seconds of the servers during the timed turns
    database_cpu: float | None = None  # of their PostgreSQL backends
    connections: int | None = None


async def chat_together(
    group: Group, envs: list[tuple[dict[str, str], Path]], model: dict[str, str], dsn: str | None
) -> None:
    """Start every server, one warm-up turn each, then K turns each, all at once."""
    clients = [BenchClient(env, workspace, model) for env, workspace in envs]
    text = reply_text(REPLY_CHARS)

    async def chat(client: BenchClient) -> list[float]:
        times = []
        for number in range(group.turns):
            seconds, _, done = await client.chat(f"question {number}")
            assert done["endReason"] == "completed" and done["text"] == text, done
            times.append(seconds)
        return times

    try:
        start = time.perf_counter()
        await asyncio.gather(*(c.start() for c in clients))
        await asyncio.gather(*(c.initialize() for c in clients))
        await asyncio.gather(*(c.ready() for c in clients))
        group.started = time.perf_counter() - start
        await asyncio.gather(*(c.chat("warm-up") for c in clients))  # imports pydantic-ai
        pids = {c.process.pid for c in clients}
        serving = await asyncio.to_thread(backends, dsn, pids) if dsn else set()
        cpu = cpu_seconds(pids), cpu_seconds(serving)
        start = time.perf_counter()
        each = await asyncio.gather(*(chat(c) for c in clients))
        group.wall = time.perf_counter() - start
        group.server_cpu = cpu_seconds(pids) - cpu[0]
        if dsn:
            group.database_cpu = cpu_seconds(serving) - cpu[1]
            group.connections = len(await asyncio.to_thread(backends, dsn, pids))
        group.times = [seconds for times in each for seconds in times]
    finally:
        await asyncio.gather(*(c.stop() for c in clients), return_exceptions=True)


def run_group(stores: Stores, kind: str, tmp: Path, servers: int, turns: int) -> Group:
    """Run `servers` servers of `kind` at once, K turns each; check every turn was stored."""
    env = stores.env(kind)
    tag = f"{kind}-{servers}-{secrets.token_hex(3)}"
    workspaces = [make_workspace(tmp / f"{tag}-{i}") for i in range(servers)]
    group = Group(servers, turns)
    dsn = stores.dsn if kind == "postgresql" else None
    with fake_model(tmp, servers * (turns + 1) + 10) as model:
        asyncio.run(chat_together(group, [(env, ws) for ws in workspaces], model, dsn))
    for workspace in workspaces:
        store = stores.open(kind, workspace)
        [info] = store.list_sessions()
        assert info.turns == turns + 1, (kind, info)
        store.close()
    return group


def measure_servers(stores: Stores, tmp: Path, mode: Mode, result: Result) -> None:
    """Many servers at once vs one alone, on the database and on local files."""
    servers, turns = SERVERS[mode], TURNS_EACH[mode]
    runs: dict[tuple[str, int], list[Group]] = {}
    for number in range(ROUNDS[mode]):
        for kind in KINDS if number % 2 == 0 else KINDS[::-1]:
            for count in (servers, 1):
                runs.setdefault((kind, count), []).append(
                    run_group(stores, kind, tmp, count, turns)
                )
    rate = {k: median([g.servers * g.turns / g.wall for g in v]) for k, v in runs.items()}
    p95 = {k: percentile([t for g in v for t in g.times], 95) for k, v in runs.items()}
    done = {k: sum(g.servers * g.turns for g in v) for k, v in runs.items()}
    cpu = {k: sum(g.server_cpu for g in v) / done[k] for k, v in runs.items()}
    db_cpu = {k: sum(g.database_cpu or 0.0 for g in v) / done[k] for k, v in runs.items()}

    def rates(measure: str, ours: tuple[str, int], base: tuple[str, int]) -> Row:
        ratio = rate[ours] / rate[base]
        return Row(measure, f"{rate[ours]:.1f} turns/s", f"{rate[base]:.1f} turns/s", ratio)

    pg, local = ("postgresql", servers), ("local", servers)
    many, one = f"{servers} servers at once", "1 server alone"
    result.rows += [
        rates(f"{many}, {turns} turns each: turns/s, PostgreSQL vs local", pg, local),
        ratio_row(f"{many}: p95 turn, PostgreSQL vs local", p95[pg], p95[local], None),
        ratio_row(
            f"{many}: CPU per turn (servers + their PostgreSQL backends), PostgreSQL vs local",
            cpu[pg] + db_cpu[pg],
            cpu[local],
            None,
        ),
        rates(f"PostgreSQL: {many} vs {one}: turns/s", pg, ("postgresql", 1)),
        ratio_row(f"PostgreSQL: {many} vs {one}: p95 turn", p95[pg], p95["postgresql", 1], None),
        rates(f"local: {many} vs {one}: turns/s", local, ("local", 1)),
        ratio_row(f"local: {many} vs {one}: p95 turn", p95[local], p95["local", 1], None),
    ]
    for (kind, count), groups in sorted(runs.items()):
        sample = [t for g in groups for t in g.times]
        database = ""
        if kind == "postgresql":
            held = max(g.connections or 0 for g in groups)
            database = (
                f"; their backends {fmt_s(db_cpu[kind, count])} CPU a turn, {held} connections"
            )
        result.details.append(
            f"{kind}, {count} server(s) × {turns} turns, {len(groups)} round(s): "
            f"{', '.join(f'{g.servers * g.turns / g.wall:.1f}' for g in groups)} turns/s; "
            f"turn round trip p50 {fmt_s(median(sample))}, p95 {fmt_s(p95[kind, count])}, max "
            f"{fmt_s(max(sample))} (n={len(sample)}); spawn → all sessions started "
            f"{', '.join(fmt_s(g.started) for g in groups)}; servers' CPU "
            f"{fmt_s(cpu[kind, count])} a turn{database}"
        )
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    result.details.append(
        f"{servers} servers, the fake model, PostgreSQL and this client share {cpus} CPU(s): "
        "the many-server rows measure CPU contention as much as the store; CPU a turn (from "
        "/proc/<pid>/stat, 10 ms ticks, of the timed turns only) much less so"
    )


def run(mode: Mode, dsn: str | None = None) -> Result:
    """Run the benchmark (skipped, saying why, without a PostgreSQL server)."""
    result = Result("pg_store")
    dsn = database_dsn(result, dsn)
    if dsn is None:
        return result
    load = os.getloadavg()[0]  # the machine's other work (measured before ours starts)
    with scratch_dir("pg-store") as tmp, database_schema(dsn) as schema:
        stores = Stores(dsn, schema, tmp / "home")
        for name, step in (
            ("append", measure_append),
            ("resume", measure_resume),
            ("servers", measure_servers),
        ):
            start = time.perf_counter()
            step(stores, tmp, mode, result)
            result.details.append(f"{name} took {fmt_s(time.perf_counter() - start)}")
    result.details.append(f"load average (1 min) before the run: {load:.2f}")
    return result
