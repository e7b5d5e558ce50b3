"""Resume of sessions with 1 MB to 100 MB (long: 1 GB) logs vs replaying the whole log.

"Ours" is what the server does between start-up and a resumed session: a new
`SessionManager` and `SessionLifecycle`, `find_previous()` (pointer + snapshot header),
`resume_or_start(accept=True)` (open the session from its snapshot and the log tail, drift
check, resume context built, pointer written) until `resume_context` is ready. The same is
timed end to end in the real server process (spawn → `sessionChanged: resumed`).
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import secrets
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from session.derive.history import derive_message_dicts
from session.events import EVENT_ADAPTER
from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from session.log.reader import scan_log

from .common import (
    Mode,
    Plot,
    Result,
    Row,
    fmt_bytes,
    fmt_s,
    median,
    ratio_row,
    scratch_dir,
    spread,
    timed_runs,
)
from .server_process import PYCACHE, BenchClient, server_env

# (label, target log size in bytes) per mode; the first is the reference for the growth target.
SIZES: dict[Mode, list[tuple[str, int]]] = {
    "smoke": [("100 KB", 100_000), ("1 MB", 1_000_000)],
    "default": [("1 MB", 1_000_000), ("10 MB", 10_000_000), ("100 MB", 100_000_000)],
    "long": [
        ("1 MB", 1_000_000),
        ("10 MB", 10_000_000),
        ("100 MB", 100_000_000),
        ("1 GB", 1_000_000_000),
    ],
}
READY_REPEATS: dict[Mode, int] = {"smoke": 3, "default": 15, "long": 15}  # a resume is ms
REPLAY_REPEATS: dict[Mode, int] = {"smoke": 2, "default": 5, "long": 5}
SERVER_SPAWNS: dict[Mode, int] = {"smoke": 1, "default": 3, "long": 5}  # per size
READY_TARGET_S = 0.150  # resume context ready, absolute (the issue names it)
GROWTH_TARGET = 1.2  # ready(big) ≤ 1.2 × ready(smallest)
SLOW_BUDGET_S = 40.0  # fewer repeats of multi-second runs on huge logs (never fewer than 1)
INSTANCE = "bench"

_WORDS = (
    "the a session log turn step model request response template file change tool call "
    "result drift snapshot resume offset event append fsync editor window project agent spec "
    "prompt user assistant message chunk history summary decision phase checkpoint save "
    "workspace manifest hash stat cache index git status open close lock replay derive"
).split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _ts(moment: datetime) -> str:
    """Format like pydantic's JSON mode does (`Z`, microseconds only when non-zero)."""
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text + "Z"


class TurnPool:
    """Pre-made prompts and responses (with their stream chunks) to cycle through."""

    def __init__(self, seed: int = 7, size: int = 64) -> None:
        rng = random.Random(seed)
        self.prompts = [_text(rng, rng.randint(15, 70)) for _ in range(size)]
        self.responses: list[tuple[str, list[str]]] = []
        for _ in range(size):
            text = _text(rng, rng.randint(120, 450))
            chunks = []
            pos = 0
            while pos < len(text):
                step = rng.randint(20, 80)
                chunks.append(text[pos : pos + step])
                pos += step
            self.responses.append((text, chunks))


def user_request(text: str) -> dict[str, Any]:
    """Return a pydantic-ai style request message holding a user prompt."""
    return {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": text}]}


def text_response(text: str) -> dict[str, Any]:
    """Return a pydantic-ai style response message holding text."""
    return {"kind": "response", "parts": [{"part_kind": "text", "content": text}]}


def turn_events(
    pool: TurnPool, turn: int
) -> Iterator[tuple[str, int | None, tuple[object, ...], dict[str, Any]]]:
    """Yield (type, step, cache key, data) of one realistic completed turn."""
    p = turn % len(pool.prompts)
    r = (turn * 7) % len(pool.responses)
    prompt = pool.prompts[p]
    text, chunks = pool.responses[r]
    yield "turn/start", None, ("input", p), {"input": prompt}
    yield "step/start", 1, ("request", p), {"messages": [user_request(prompt)]}
    for index, delta in enumerate(chunks):
        yield "assistant/chunk", 1, ("chunk", r, index), {"delta": delta}
    yield "assistant/message", 1, ("response", r), {"message": text_response(text)}
    yield "step/end", 1, ("usage", p, r), {"usage": {"input_tokens": 200 + p, "output_tokens": r}}
    yield "turn/end", None, ("end",), {"reason": "completed"}


class Canonical:
    """Stored `data` of each distinct event payload, made once by the real serializer."""

    def __init__(self) -> None:
        self.cache: dict[tuple[object, ...], dict[str, Any]] = {}

    def data(self, type_: str, key: tuple[object, ...], data: dict[str, Any]) -> dict[str, Any]:
        """Return `data` as EventLog would store it (defaults filled in, JSON form)."""
        cached = self.cache.get((type_, *key))
        if cached is None:
            raw = {"seq": 0, "ts": datetime.now(UTC), "type": type_, "turn": 1, "data": data}
            cached = EVENT_ADAPTER.validate_python(raw).model_dump(mode="json")["data"]
            self.cache[(type_, *key)] = cached
        return cached


def write_bulk_log(
    path: Path, session_id: str, workspace: Path, size: int, *, turns: int | None = None
) -> tuple[int, int]:
    """Write a log of about `size` bytes directly (EventLog's line format); return events, turns.

    `turns`: write exactly that many turns instead (`size` is then ignored).
    """
    pool = TurnPool()
    canonical = Canonical()
    start = datetime.now(UTC) - timedelta(days=30)
    seq = 0
    turn = 0
    written = 0
    checked = 0

    def line(type_: str, turn_: int | None, step: int | None, data: dict[str, Any]) -> bytes:
        nonlocal seq, checked
        stored = {
            "seq": seq,
            "ts": _ts(start + timedelta(milliseconds=seq * 250, microseconds=seq % 997 + 1)),
            "turn": turn_,
            "step": step,
            "type": type_,
            "data": data,
        }
        out = orjson.dumps(stored) + b"\n"
        if seq % 5000 < 30:  # spot-check the whole line against the real serializer
            model = EVENT_ADAPTER.validate_python(orjson.loads(out)).model_dump(mode="json")
            assert orjson.dumps(model) + b"\n" == out, (out, model)
            checked += 1
        seq += 1
        return out

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb", buffering=1 << 20) as fh:
        start_data = {
            "session_id": session_id,
            "instance_id": INSTANCE,
            "workspace_root": str(workspace),
            "persistence": "full",
        }
        start_data = canonical.data("session/start", (), start_data)
        written += fh.write(line("session/start", None, None, start_data))
        while (written < size) if turns is None else (turn < turns):
            turn += 1
            for type_, step, key, data in turn_events(pool, turn):
                stored = canonical.data(type_, key, data)
                written += fh.write(line(type_, turn, step, stored))
    assert checked > 0
    return seq, turn


def record_turn(lifecycle: SessionLifecycle, pool: TurnPool) -> None:
    """Record one completed turn as the runner would (the pool's first prompt and answer)."""
    recorder = lifecycle.begin_turn(pool.prompts[0])
    recorder.start_step([user_request(pool.prompts[0])])
    text, chunks = pool.responses[0]
    for delta in chunks:
        recorder.chunk(delta)
    recorder.assistant_message(text_response(text))
    recorder.end_step({"input_tokens": 1, "output_tokens": 1})
    recorder.end("completed")


def make_session(manager: SessionManager, workspace: Path, size: int) -> dict[str, Any]:
    """Create a session of about `size` bytes, then resume it once, add a turn and save."""
    manager.layout.ensure_dirs()
    session_id = secrets.token_hex(6)
    path = manager.layout.log_path(session_id)
    start = time.perf_counter()
    events, turns = write_bulk_log(path, session_id, workspace, size)
    generated = time.perf_counter() - start
    # First open has no snapshot: a full replay, then a real turn and the exit autosave.
    start = time.perf_counter()
    lifecycle = SessionLifecycle(manager, INSTANCE)
    lifecycle.resume(session_id)
    record_turn(lifecycle, TurnPool(seed=11))
    assert lifecycle.close(), "the exit autosave did not write a snapshot"
    prepared = time.perf_counter() - start
    del lifecycle
    gc.collect()
    state, _ = manager.read_snapshot(session_id)
    log_size = path.stat().st_size
    if state is None:
        snapshot = "NOT readable by read_snapshot (see the open warning)"
    else:
        covers = "covers the whole log" if state.log_offset == log_size else "STALE"
        snapshot = f"{len(state.recent_messages):,} recent_messages, {covers}"
    return {
        "id": session_id,
        "path": path,
        "events": state.last_seq + 1 if state is not None else events,
        "turns": turns + 1,
        "log_size": log_size,
        "snapshot_size": manager.layout.snapshot_path(session_id).stat().st_size,
        "snapshot": snapshot,
        "generated_s": generated,
        "first_open_s": prepared,
    }


def budgeted_runs(fn: Callable[[], object], repeats: int) -> list[float]:
    """Time `fn` `repeats` times, or fewer (at least 1) if one run is very slow."""
    times = timed_runs(fn, 1)
    if times[0] * (repeats - 1) <= SLOW_BUDGET_S:
        times += timed_runs(fn, repeats - 1)
    elif times[0] <= SLOW_BUDGET_S:
        times += timed_runs(fn, 2)
    return times


def resume_ready(workspace: Path, home: Path, session_id: str, warnings: list[str]) -> float:
    """Time a server-like start up to the resume context of `session_id`; then close it."""
    gc.collect()
    start = time.perf_counter()
    lifecycle = SessionLifecycle(SessionManager(workspace, home=home), INSTANCE)
    previous = lifecycle.find_previous()
    reason = lifecycle.resume_or_start(previous, accept=True)
    context = lifecycle.resume_context
    elapsed = time.perf_counter() - start
    assert previous is not None and previous.session_id == session_id, previous
    assert reason == "resumed" and lifecycle.session_id == session_id, lifecycle.warnings
    assert context.startswith("# Resumed Session Context"), context
    assert lifecycle.last_drift is not None and not lifecycle.last_drift.has_drift
    warnings[:] = lifecycle.warnings
    lifecycle.close()  # as the server's exit does: autosave, lock released (untimed)
    return elapsed


class Spawned(NamedTuple):
    """One spawn of the server up to its first `sessionChanged`."""

    seconds: float  # spawn → sessionChanged: what the user waits for
    after_initialize: float  # initialize answered → sessionChanged: the session's part
    reason: str
    session_id: str


async def spawn_timed(env: dict[str, str], workspace: Path, *, ask_resume: bool = False) -> Spawned:
    """Spawn the server (autoResume: always) and time it to its first `sessionChanged`.

    `ask_resume`: and on to the answer of `agentAssist/resume`, which an editor asks for
    at once to show the resume banner and the changed files with their checkpoints.
    """
    client = BenchClient(env, workspace, options={"autoResume": "always"})
    start = time.perf_counter()
    await client.start()
    await client.initialize()
    initialized = time.perf_counter()
    await client.ready()
    if ask_resume:
        await client.request("agentAssist/resume", {})
    end = time.perf_counter()
    change = client.session_changes[0]
    await client.stop()
    return Spawned(end - start, end - initialized, change["reason"], change["sessionId"])


async def spawn_to_session(env: dict[str, str], workspace: Path) -> tuple[float, str, str]:
    """Spawn the server (autoResume: always); return (spawn → sessionChanged, reason, id)."""
    spawned = await spawn_timed(env, workspace)
    return spawned.seconds, spawned.reason, spawned.session_id


async def server_spawns(
    workspace: Path, home: Path, fresh: Path, session_id: str, count: int
) -> tuple[list[float], list[float]]:
    """Spawn → resumed `session_id`, interleaved with spawn → new session on an empty store."""
    resumed: list[float] = []
    new: list[float] = []
    for _ in range(count):
        seconds, reason, got = await spawn_to_session(server_env(home, PYCACHE), workspace)
        assert reason == "resumed" and got == session_id, (reason, got, session_id)
        resumed.append(seconds)
        empty = fresh / secrets.token_hex(6)
        seconds, reason, _ = await spawn_to_session(server_env(empty, PYCACHE), workspace)
        assert reason == "new", reason
        new.append(seconds)
    return resumed, new


def run(mode: Mode) -> Result:
    """Run the resume benchmark and return its rows."""
    result = Result("resume")
    plot = result.plot = Plot("resume of one session", "log size", xunit="bytes")
    plot.targets.append((READY_TARGET_S, f"target ≤ {READY_TARGET_S * 1e3:g} ms"))
    sizes = SIZES[mode]
    with scratch_dir("resume") as tmp:
        workspace = (tmp / "ws").resolve()
        workspace.mkdir()
        (workspace / "agent_spec.md").write_text("# Agent spec\n")
        home = tmp / "home"
        fresh = tmp / "fresh"  # empty stores for the server baseline
        fresh.mkdir()
        manager = SessionManager(workspace, home=home)
        infos: dict[str, dict[str, Any]] = {}
        for label, size in sizes:
            info = infos[label] = make_session(manager, workspace, size)
            result.details.append(
                f"{label}: log {fmt_bytes(info['log_size'])}, {info['events']:,} events, "
                f"{info['turns']:,} turns; snapshot {fmt_bytes(info['snapshot_size'])}: "
                f"{info['snapshot']}; generated in "
                f"{fmt_s(info['generated_s'])}, first open (no snapshot) + 1 turn + save in "
                f"{fmt_s(info['first_open_s'])}"
            )

        # In-process resume, the sizes interleaved (round robin) so that a noisy moment
        # weighs on all of them alike; the instance pointer is set (untimed) before each.
        warnings: dict[str, list[str]] = {label: [] for label, _ in sizes}
        times: dict[str, list[float]] = {label: [] for label, _ in sizes}
        for round_ in range(READY_REPEATS[mode] + 1):
            for label, _ in sizes:
                session_id = infos[label]["id"]
                manager.write_pointer(INSTANCE, session_id)
                seconds = resume_ready(workspace, home, session_id, warnings[label])
                if round_:  # the first round is a warm-up
                    times[label].append(seconds)
        ready = {label: median(times[label]) for label, _ in sizes}

        for label, size in sizes:
            info = infos[label]
            result.details.append(f"{label}: start → resume context ready: {spread(times[label])}")
            if warnings[label]:  # e.g. the snapshot was rejected and the whole log replayed
                result.details.append(f"{label}: resume warned: {'; '.join(warnings[label])}")

            def replay(path: Path = info["path"]) -> None:
                scan = scan_log(path)
                assert scan.read_only_reason is None
                derive_message_dicts(scan.events)

            replay_times = budgeted_runs(replay, REPLAY_REPEATS[mode])
            result.details.append(
                f"{label}: full replay (scan_log + derive): {spread(replay_times)}"
            )
            replay_s = median(replay_times)
            result.rows.append(
                Row(
                    f"resume {label}: start → resume context ready vs full replay of the log",
                    fmt_s(ready[label]),
                    fmt_s(replay_s),
                    ready[label] / replay_s,
                    f"≤ {fmt_s(READY_TARGET_S)}",
                    ready[label] <= READY_TARGET_S,
                )
            )
            plot.add("ours: start → resume context ready", size, ready[label])
            plot.add("baseline: replay the whole log", size, replay_s, color="C1")

        # The real server process, end to end; bytecode cache filled by an untimed spawn.
        # Smoke mode spawns for the largest size only, with no warm-up (its times mean nothing).
        if mode != "smoke":
            asyncio.run(spawn_to_session(server_env(fresh / "warm-up", PYCACHE), workspace))
        for label, size in sizes[-1:] if mode == "smoke" else sizes:
            session_id = infos[label]["id"]
            manager.write_pointer(INSTANCE, session_id)
            resumed, new = asyncio.run(
                server_spawns(workspace, home, fresh, session_id, SERVER_SPAWNS[mode])
            )
            result.details.append(
                f"{label}: server spawn → sessionChanged (resumed): {spread(resumed)}; "
                f"spawn → new session on an empty store: {spread(new)}"
            )
            result.rows.append(
                ratio_row(
                    f"resume {label}: server spawn → session resumed vs → new session "
                    f"(n={len(resumed)})",
                    median(resumed),
                    median(new),
                    None,
                )
            )
            plot.add("server process: spawn → session resumed", size, median(resumed), color="C2")
            plot.add(
                "server process: spawn → new session",
                size,
                median(new),
                color="C2",
                linestyle=":",
            )

        small = sizes[0][0]
        for big, _ in sizes[1:]:
            result.rows.append(
                ratio_row(
                    f"resume {big} vs resume {small} (start → context ready)",
                    ready[big],
                    ready[small],
                    GROWTH_TARGET,
                )
            )
    return result
