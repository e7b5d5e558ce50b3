"""The ACP edge where the user waits: its cold `initialize`, and `session/load` of a long session.

`agent-assist acp` is spawned as an editor would (a fresh process per measurement) and
driven over stdio by a raw newline-delimited JSON-RPC client, so nothing of the SDK's client
is timed. Rows:

- spawn → `initialize` answered, interleaved with the LSP server's own cold `initialize`
  (`server_process.cold_start`, the same environment and bytecode cache);
- `session/load` of a recorded session of N turns: from sending the request to the first
  `session/update` of its replay (the user sees the conversation start to appear), against
  the same for a one-turn session; and the whole load. Timed as the process's second load:
  the first pays the imports the `initialize` answer did not wait for (the SDK's schema,
  the engine), reported as its own row (spawn → first update, cold);
- the agent's peak memory (VmHWM) after loading N turns, against after loading one turn:
  the replay streams from the log, so memory must not grow with the session's length.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager

from .common import Mode, Result, Row, fmt_bytes, fmt_s, median, scratch_dir, spread
from .resume import INSTANCE, TurnPool, record_turn, write_bulk_log
from .server_process import PYCACHE, bench_bytecode, cold_start, make_workspace, server_env

AGENT = (sys.executable, "-m", "lsp_server.cli", "acp")
SPAWNS: dict[Mode, int] = {"smoke": 2, "default": 7, "long": 15}
LOADS: dict[Mode, int] = {"smoke": 1, "default": 5, "long": 7}
SIZES: dict[Mode, tuple[int, ...]] = {
    "smoke": (100,),
    "default": (1_000,),
    "long": (1_000, 10_000),
}
INIT_TARGET_S = 0.250
INIT_RATIO = 0.5  # of the LSP server's cold initialize
FIRST_UPDATE_TARGET_S = 0.100
TARGET_TURNS = 1_000  # the first update's target is the issue's: a 1,000-turn session
MEMORY_RATIO = 1.15  # peak memory after loading N turns ≤ 1.15 × after loading one


class RawAgent:
    """`agent-assist acp` as a subprocess, spoken to in raw JSON lines."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd
        self.proc: asyncio.subprocess.Process | None = None
        self.next_id = 0

    async def start(self) -> None:
        """Spawn the agent."""
        self.proc = await asyncio.create_subprocess_exec(
            *AGENT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=self.env,
            cwd=self.cwd,
            limit=1 << 24,
        )

    async def request(self, method: str, params: dict[str, Any]) -> tuple[Any, float | None]:
        """Send a request; return its result and when the first `session/update` came."""
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        self.next_id += 1
        ident = self.next_id
        body = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
        self.proc.stdin.write(orjson.dumps(body) + b"\n")
        await self.proc.stdin.drain()
        first: float | None = None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the agent ended before answering {method}")
            message = orjson.loads(line)
            if message.get("method") == "session/update":
                first = first if first is not None else time.perf_counter()
            elif message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result"), first

    async def initialize(self) -> Any:
        """Initialize as an editor would."""
        caps = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        params = {"protocolVersion": 1, "clientCapabilities": caps}
        params["clientInfo"] = {"name": "agent-assist-bench", "version": "0"}
        result, _ = await self.request("initialize", params)
        return result

    def peak_memory(self) -> int:
        """Return the agent's VmHWM (peak resident memory) in bytes."""
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmHWM")

    async def stop(self) -> None:
        """Close stdin (the editor went) and wait for the agent to end."""
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


async def cold_initialize(env: dict[str, str], cwd: Path) -> float:
    """Spawn the agent; return spawn → `initialize` answered."""
    agent = RawAgent(env, cwd)
    start = time.perf_counter()
    await agent.start()
    await agent.initialize()
    took = time.perf_counter() - start
    await agent.stop()
    return took


def record_session(workspace: Path, home: Path, turns: int) -> str:
    """Record a session of `turns` turns in the project (written in bulk, then opened once)."""
    manager = SessionManager(workspace, home=home)
    manager.layout.ensure_dirs()
    session_id = secrets.token_hex(6)
    if turns > 1:
        write_bulk_log(
            manager.layout.log_path(session_id), session_id, workspace, 0, turns=turns - 1
        )
        lifecycle = SessionLifecycle(manager, INSTANCE)
        lifecycle.resume(session_id)
    else:
        lifecycle = SessionLifecycle(manager, INSTANCE)
        lifecycle.start_fresh()
        session_id = lifecycle.session_id
    record_turn(lifecycle, TurnPool(seed=3))
    assert lifecycle.close(), "the session was not saved"
    return session_id


async def load_once(
    env: dict[str, str], workspace: Path, session_id: str, warm: str
) -> tuple[float, float, float, int]:
    """Spawn, initialize, load `warm`, then `session_id`.

    Return (spawn → first update of the cold load of `warm`, → first update of the load of
    `session_id`, → its answer, peak memory). The timed load is the second of the process:
    what the first one pays (the SDK's and the engine's imports) is the cold row's.
    """
    agent = RawAgent(env, workspace)
    start = time.perf_counter()
    await agent.start()
    try:
        await agent.initialize()
        params = {"sessionId": warm, "cwd": str(workspace), "mcpServers": []}
        _, cold = await agent.request("session/load", params)
        assert cold is not None, "session/load replayed nothing"
        cold_first = cold - start
        params = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
        start = time.perf_counter()
        _, first = await agent.request("session/load", params)
        answered = time.perf_counter() - start
        assert first is not None, "session/load replayed nothing"
        return cold_first, first - start, answered, agent.peak_memory()
    finally:
        await agent.stop()


async def measure(mode: Mode, tmp: Path, result: Result) -> None:
    """Take every measurement and add the rows."""
    home = tmp / "home"
    env = server_env(home, PYCACHE)
    workspace = make_workspace(tmp / "ws")
    await cold_initialize(env, workspace)  # bytecode of both compiled once, untimed
    await cold_start(tmp, "lsp-warm-up", PYCACHE)
    ours: list[float] = []
    lsp: list[float] = []
    for i in range(SPAWNS[mode]):  # interleaved
        ours.append(await cold_initialize(env, workspace))
        lsp.append((await cold_start(tmp, f"lsp-{i}", PYCACHE))[0])
    mine, theirs = median(ours), median(lsp)
    ok = mine <= INIT_TARGET_S and mine <= INIT_RATIO * theirs
    result.rows.append(
        Row(
            "acp: spawn → initialize answered, cold",
            f"{fmt_s(mine)} ({spread(ours)})",
            f"LSP server's cold initialize {fmt_s(theirs)} ({spread(lsp)})",
            mine / theirs,
            f"≤ {fmt_s(INIT_TARGET_S)} and ≤ {INIT_RATIO}×",
            ok,
        )
    )
    one = record_session(workspace, home, 1)
    warm = record_session(workspace, home, 1)
    colds: list[float] = []
    for size in SIZES[mode]:
        start = time.perf_counter()
        long = record_session(workspace, home, size)
        result.details.append(
            f"a session of {size:,} turns recorded in {fmt_s(time.perf_counter() - start)}"
        )
        firsts: list[float] = []
        wholes: list[float] = []
        peaks: list[int] = []
        base_firsts: list[float] = []
        base_peaks: list[int] = []
        for _ in range(LOADS[mode]):  # interleaved with the one-turn session
            cold, first, whole, peak = await load_once(env, workspace, long, warm)
            colds.append(cold)
            firsts.append(first)
            wholes.append(whole)
            peaks.append(peak)
            cold, b_first, _, b_peak = await load_once(env, workspace, one, warm)
            colds.append(cold)
            base_firsts.append(b_first)
            base_peaks.append(b_peak)
        first, base = median(firsts), median(base_firsts)
        result.rows.append(
            Row(
                f"acp: session/load of {size:,} turns → first update",
                f"{fmt_s(first)} ({spread(firsts)})",
                f"one turn {fmt_s(base)}",
                first / base,
                f"≤ {fmt_s(FIRST_UPDATE_TARGET_S)}" if size <= TARGET_TURNS else "report only",
                first <= FIRST_UPDATE_TARGET_S if size <= TARGET_TURNS else None,
            )
        )
        result.rows.append(
            Row(f"acp: session/load of {size:,} turns, whole replay", fmt_s(median(wholes)))
        )
        top, base_top = median([float(p) for p in peaks]), median([float(p) for p in base_peaks])
        result.rows.append(
            Row(
                f"acp: peak memory after loading {size:,} turns",
                fmt_bytes(top),
                f"one turn {fmt_bytes(base_top)}",
                top / base_top,
                f"≤ {MEMORY_RATIO}× (flat in the length)",
                top <= MEMORY_RATIO * base_top,
            )
        )
    result.rows.append(
        Row(
            "acp: spawn → first update of a load (a one-turn session), cold",
            f"{fmt_s(median(colds))} ({spread(colds)})",
        )
    )


def run(mode: Mode) -> Result:
    """Run the ACP benchmark and return its rows."""
    result = Result("acp")
    with bench_bytecode(), scratch_dir("acp") as tmp:
        asyncio.run(measure(mode, tmp, result))
    return result
