"""The language server process: cold start, the LSP edge's cost per turn and delta, RSS.

Everything talks to one `FakeOpenAI` running in a thread of this process. "Ours" is the real
server subprocess (`python -m lsp_server.cli serve`, LSP over stdio; `server_process.py`),
timed at the client. The per-turn baseline is the product's own turn run in this process
(`product_loop.py`: `begin_turn`, `ChatRunner.run_attempt`, `end("completed")` on a real
session, same options, same history length), so "server over LSP / in-process product loop"
is the cost of the LSP edge: transport, handler and one notification per delta. The cold
start and RSS rows compare with a bare interpreter. `server_rows.py` turns the figures into
rows.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import time
from pathlib import Path
from typing import Any

from lsp_server.fake_model import FakeOpenAI, Reply, parse_reply

from .common import Mode, Result, scratch_dir
from .product_loop import LoopTurn, ProductLoop
from .server_process import (
    PYCACHE,
    BenchClient,
    bare_rss,
    bench_bytecode,
    cold_start,
    make_workspace,
    pydantic_ai_at_startup,
    rss_bytes,
    server_env,
    spawn_python,
)
from .server_rows import REPLY_CHARS, REPLY_CHUNKS, Measured, add_rows

SPAWNS: dict[Mode, int] = {"smoke": 2, "default": 7, "long": 15}
NOCACHE_SPAWNS: dict[Mode, int] = {"smoke": 1, "default": 3, "long": 5}
TURNS: dict[Mode, int] = {"smoke": 3, "default": 30, "long": 100}  # timed, per path
# For the RSS row. 1,000 turns cost ~5 min on a 2-CPU machine (the round trip grows with the
# session, see the details), so only the long mode runs them.
TOTAL_TURNS: dict[Mode, int] = {"smoke": 5, "default": 100, "long": 1000}
LONG_REPEATS: dict[Mode, int] = {"smoke": 1, "default": 3, "long": 5}
LONG_REPLY: dict[Mode, tuple[int, int]] = {  # (chars, chunks)
    "smoke": (2_000, 200),
    "default": (20_000, 2_000),
    "long": (20_000, 2_000),
}
MODEL_NAME = "bench-model"
AGENT_BUILDER = "engine.model.build"  # the module of the runner that imports pydantic-ai


def reply_text(chars: int) -> str:
    """Return `chars` characters of plain words."""
    words = "the quick brown fox jumps over a lazy dog while agents stream replies ".split()
    out: list[str] = []
    size = 0
    i = 0
    while size < chars:
        word = words[i % len(words)]
        out.append(word)
        size += len(word) + 1
        i += 1
    return " ".join(out)[:chars]


class LeanFake(FakeOpenAI):
    """FakeOpenAI giving every request the same reply, keeping only each request's size.

    A fixed reply rather than a queue: the server may make requests of its own (e.g. a
    summary when it compacts a long history), which must not shift the script.
    """

    def __init__(self) -> None:
        super().__init__()
        self.message_counts: list[int] = []
        self.reply = parse_reply("unset")

    def use(self, text: str, chunk: int) -> None:
        """Answer every following request with `text` streamed in `chunk`-char deltas."""
        self.reply = parse_reply({"text": text, "chunk": chunk})

    @property
    def request_count(self) -> int:
        """Return how many chat completion requests were received."""
        with self._lock:
            return len(self.message_counts)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        return self.reply

    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> int:
        with self._lock:
            self.message_counts.append(len(body.get("messages") or []))
            return len(self.message_counts)

    def __enter__(self) -> LeanFake:
        self.start()
        return self


async def warm_up(env: dict[str, str]) -> bool:
    """Fill the bytecode cache and import pydantic-ai here (for the in-process loop).

    The child checks what the server's start-up modules import (and caches their bytecode);
    this process imports the agent's builder, caching pydantic-ai's bytecode (see `run`).
    """
    imported, _ = await asyncio.gather(
        pydantic_ai_at_startup(env),
        asyncio.to_thread(importlib.import_module, AGENT_BUILDER),
    )
    return imported


async def measure(mode: Mode, tmp: Path) -> Measured:
    """Run every measurement (cold starts, then one long-lived server and the loop)."""
    phases: list[tuple[str, float]] = []
    mark = time.perf_counter()

    def phase(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        phases.append((name, now - mark))
        mark = now

    pycache = PYCACHE
    env = server_env(tmp / "home", pycache)
    imported = await warm_up(env)
    phase("bytecode warm-up")
    await cold_start(tmp, "warm-up", pycache)
    init: list[float] = []
    ready: list[float] = []
    bare_start: list[float] = []
    for i in range(SPAWNS[mode]):  # interleaved with the baseline
        bare_start.append(await spawn_python("pass", env))
        times = await cold_start(tmp, f"cold-{i}", pycache)
        init.append(times[0])
        ready.append(times[1])
    init_nocache = [
        (await cold_start(tmp, f"nocache-{i}", None))[0] for i in range(NOCACHE_SPAWNS[mode])
    ]
    phase("cold starts")
    base_rss = await bare_rss(env)
    reply = reply_text(REPLY_CHARS)
    chunk = REPLY_CHARS // REPLY_CHUNKS
    with LeanFake() as fake:
        model = {"name": MODEL_NAME, "baseUrl": fake.base_url, "apiKey": "x"}
        client = BenchClient(env, make_workspace(tmp / "ws"), model)
        await client.start()
        await client.initialize()
        await client.ready()
        await asyncio.sleep(0.2)  # let start-up work (watcher registration, GC) settle
        rss_idle = rss_bytes(client.process.pid)
        phase("server start")

        async def server_turn(number: int, text: str, size: int) -> tuple[float, float]:
            gc.collect()
            before = fake.request_count
            seconds, first, result = await client.chat(f"question {number}")
            assert result["endReason"] == "completed" and result["text"] == text, result
            assert client.delta_chars == len(text) and client.deltas == len(text) // size
            assert fake.request_count == before + 1, "a timed turn made more than one request"
            return seconds, first

        async def loop_turn(number: int, text: str, size: int) -> LoopTurn:
            gc.collect()
            before = fake.request_count
            done = await loop.turn(f"question {number}")
            assert done.text == text and done.chars == len(text), done
            assert done.deltas == len(text) // size, done
            assert fake.request_count == before + 1, "a timed turn made more than one request"
            return done

        # Warm-up (the first chat imports pydantic-ai in the server; here, building the agent).
        fake.use(reply, chunk)
        first_chat, _ = await server_turn(0, reply, chunk)
        rss_first_chat = rss_bytes(client.process.pid)
        start = time.perf_counter()
        # Its own project and store: the server holds its session's lock.
        loop = ProductLoop(
            make_workspace(tmp / "ws-loop"),
            tmp / "home-loop",
            client.initialization_options(),
            env,
        )
        loop_first = time.perf_counter() - start + (await loop_turn(0, reply, chunk)).seconds
        phase("first chats")

        server_turns: list[float] = []
        loop_turns: list[float] = []
        server_first: list[float] = []
        loop_first_deltas: list[float] = []
        for number in range(1, TURNS[mode] + 1):
            for which in ("server", "loop") if number % 2 else ("loop", "server"):
                if which == "server":
                    seconds, first = await server_turn(number, reply, chunk)
                    server_turns.append(seconds)
                    server_first.append(first)
                else:
                    done = await loop_turn(number, reply, chunk)
                    loop_turns.append(done.seconds)
                    loop_first_deltas.append(done.first_delta)
        messages_last = (fake.message_counts[-2], fake.message_counts[-1])
        phase("timed turns")

        fill_start = time.perf_counter()
        turns_done = 1 + TURNS[mode]
        total = max(TOTAL_TURNS[mode], turns_done)
        requests_before = fake.request_count
        fill_turns: list[float] = []
        for number in range(turns_done, total):
            seconds, _, result = await client.chat(f"question {number}")
            assert result["endReason"] == "completed" and client.delta_chars == len(reply), result
            fill_turns.append(seconds)
        extra_requests = fake.request_count - requests_before - (total - turns_done)
        fill_seconds = time.perf_counter() - fill_start
        await asyncio.sleep(0.2)
        rss_after = rss_bytes(client.process.pid)
        phase("filler turns")

        # Delta rate on long replies, both paths from an empty history.
        await client.request("agentAssist/reset", {"deleteFiles": False})
        loop.reset()
        chars, chunks = LONG_REPLY[mode]
        long_text = reply_text(chars)
        size = chars // chunks
        fake.use(long_text, size)
        server_rates: list[float] = []
        loop_rates: list[float] = []
        for number in range(LONG_REPEATS[mode]):
            for which in ("server", "loop") if number % 2 == 0 else ("loop", "server"):
                if which == "server":
                    seconds, _ = await server_turn(number, long_text, size)
                    server_rates.append(chunks / seconds)
                else:
                    done = await loop_turn(number, long_text, size)
                    loop_rates.append(done.deltas / done.seconds)
        loop.close()
        await client.stop()
        phase("long replies + stop")
    return Measured(
        phases=phases,
        imported=imported,
        init=init,
        ready=ready,
        init_nocache=init_nocache,
        bare_start=bare_start,
        bare_rss=base_rss,
        rss_idle=rss_idle,
        rss_first_chat=rss_first_chat,
        rss_after=rss_after,
        total_turns=total,
        first_chat=first_chat,
        loop_first=loop_first,
        server_turns=server_turns,
        loop_turns=loop_turns,
        server_first=server_first,
        loop_first_deltas=loop_first_deltas,
        server_rates=server_rates,
        loop_rates=loop_rates,
        long_deltas=chunks,
        fill_seconds=fill_seconds,
        fill_turns=fill_turns,
        extra_requests=extra_requests,
        messages_last=messages_last,
    )


def run(mode: Mode) -> Result:
    """Run the server benchmark and return its rows."""
    result = Result("server")
    with bench_bytecode(), scratch_dir("server") as tmp:
        measured = asyncio.run(measure(mode, tmp))
    add_rows(result, measured)
    return result
