"""Bounded work, where the user feels it: the server stays responsive while a model floods it.

The real server subprocess (`server_process.BenchClient`) against the `FakeOpenAI` thread,
whose reply is an endless stream of 16-character deltas (the costliest to take in per byte).
Ours is measured while that stream runs, after `STREAMED` bytes of it; each baseline is the
same measure on the same server when nothing is streamed (idle, or a turn just begun):

- `agentAssist/status` round trip, while streaming ÷ idle (the issue: within 100 ms);
- `$/cancelRequest` → the chat's error answer, after `STREAMED` bytes ÷ after the first delta
  (the issue: within 2 s whatever was streamed);
- `shutdown` + `exit` → the process gone, after the cancelled flood ÷ after one short turn;
- the server's RSS after the flood ÷ its RSS idle; and the time an endless stream of 4 KB
  deltas takes to reach the default `model.maxReplyBytes` (4 MB), where it is stopped.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types

from engine.config import DEFAULT_MAX_REPLY_BYTES
from lsp_server.fake_model import FakeOpenAI

from .common import Mode, Result, Row, fmt_bytes, fmt_s, median, ratio_row, scratch_dir
from .server_process import (
    PYCACHE,
    BenchClient,
    bench_bytecode,
    make_workspace,
    rss_bytes,
    server_env,
)

STREAMED: dict[Mode, int] = {"smoke": 100_000, "default": 1_000_000, "long": 3_000_000}
REPEATS: dict[Mode, int] = {"smoke": 1, "default": 3, "long": 5}
STATUS_PROBES = 10
STATUS_TARGET = 0.1  # seconds (absolute, named by the issue)
CANCEL_TARGET = 2.0  # seconds (absolute, named by the issue)


async def _server(fake: FakeOpenAI, tmp: Path, name: str) -> BenchClient:
    env = server_env(tmp / f"{name}-home", PYCACHE)
    model = {"name": "bench-model", "baseUrl": fake.base_url, "apiKey": "none"}
    client = BenchClient(env, make_workspace(tmp / name), model)
    await client.start()
    await client.initialize()
    await client.ready()
    return client


async def _status(client: BenchClient) -> float:
    times = []
    for _ in range(STATUS_PROBES):
        start = time.perf_counter()
        await client.request("agentAssist/status", {})
        times.append(time.perf_counter() - start)
    return median(times)


def _chat(client: BenchClient, text: str) -> tuple[str, asyncio.Future[Any]]:
    msg_id = str(uuid.uuid4())
    future = asyncio.ensure_future(
        client.client.protocol.send_request_async("agentAssist/chat", {"text": text}, msg_id)
    )
    return msg_id, future


async def _until_streamed(client: BenchClient, size: int, future: asyncio.Future[Any]) -> None:
    while client.delta_chars < size:  # 20 ms steps: the client must not take the CPU
        if future.done():
            raise RuntimeError(f"the flood ended early: {future.result()!r}")
        await asyncio.sleep(0.02)


async def _cancel(client: BenchClient, msg_id: str, future: asyncio.Future[Any]) -> float:
    start = time.perf_counter()
    client.client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
    try:
        await asyncio.wait_for(future, 120)
    except asyncio.CancelledError:
        pass
    except Exception as exc:  # the cancelled request's error answer: what is timed
        if "cancel" not in str(exc).lower():
            raise
    else:
        raise RuntimeError("the cancelled chat answered normally")
    return time.perf_counter() - start


async def _stop(client: BenchClient) -> float:
    start = time.perf_counter()
    await client.stop()
    return time.perf_counter() - start


async def measure(mode: Mode, tmp: Path) -> dict[str, list[float]]:
    """Return each figure's samples (seconds or bytes)."""
    out: dict[str, list[float]] = {}

    def note(key: str, value: float) -> None:
        out.setdefault(key, []).append(value)

    with FakeOpenAI() as fake:
        for i in range(REPEATS[mode]):
            client = await _server(fake, tmp, f"flood{i}")
            note("status idle", await _status(client))
            note("rss idle", rss_bytes(client.process.pid))
            # The baseline cancel: a flood cancelled at its first delta.
            fake.add({"flood": "0123456789abcde ", "chunk": 16})
            msg_id, future = _chat(client, "flood")
            await _until_streamed(client, 1, future)
            note("cancel at once", await _cancel(client, msg_id, future))
            client.delta_chars = 0
            fake.add({"flood": "0123456789abcde ", "chunk": 16})
            msg_id, future = _chat(client, "flood")
            await _until_streamed(client, STREAMED[mode], future)
            note("status streaming", await _status(client))
            note("cancel streamed", await _cancel(client, msg_id, future))
            note("rss streamed", rss_bytes(client.process.pid))
            note("stop streamed", await _stop(client))

            quiet = await _server(fake, tmp, f"quiet{i}")
            fake.add("A short answer.")
            await quiet.chat("hello")
            note("stop quiet", await _stop(quiet))

        capped = await _server(fake, tmp, "capped")
        fake.add({"flood": "0123456789abcde ", "chunk": 4096})
        start = time.perf_counter()
        _, _, result = await capped.chat("flood")
        note("to the cap", time.perf_counter() - start)
        note("capped text", len(result["text"].encode()))
        note("rss capped", rss_bytes(capped.process.pid))
        await capped.stop()
        if fake.disconnects < REPEATS[mode] * 2 + 1:
            raise RuntimeError(f"the server did not leave every flood ({fake.disconnects})")
    return out


def run(mode: Mode) -> Result:
    """Run the benchmark and return its rows."""
    result = Result("bounded")
    with bench_bytecode(), scratch_dir("bounded") as tmp:
        m = asyncio.run(measure(mode, tmp))
    streamed = fmt_bytes(STREAMED[mode])

    def at(key: str) -> float:
        return median(m[key])

    status = ratio_row(
        f"agentAssist/status while {streamed} stream in 16-char deltas / idle",
        at("status streaming"),
        at("status idle"),
        None,
    )
    status.target, status.ok = "≤ 100 ms", at("status streaming") <= STATUS_TARGET
    cancel = ratio_row(
        f"$/cancelRequest answered after {streamed} streamed / after the first delta",
        at("cancel streamed"),
        at("cancel at once"),
        None,
    )
    cancel.target, cancel.ok = "≤ 2 s", at("cancel streamed") <= CANCEL_TARGET
    stop = ratio_row(
        "shutdown + exit after the cancelled flood / after one short turn",
        at("stop streamed"),
        at("stop quiet"),
        None,
    )
    stop.target, stop.ok = "≤ 2 s", at("stop streamed") <= CANCEL_TARGET
    rss_ratio = at("rss streamed") / at("rss idle")
    rss = Row(
        f"RSS after {streamed} streamed (then cancelled) / idle",
        fmt_bytes(at("rss streamed")),
        fmt_bytes(at("rss idle")),
        rss_ratio,
    )
    capped = Row(
        f"an endless stream of 4 KB deltas, stopped at maxReplyBytes "
        f"({fmt_bytes(DEFAULT_MAX_REPLY_BYTES)}): time; RSS after",
        f"{fmt_s(at('to the cap'))}; {fmt_bytes(at('rss capped'))}",
    )
    result.rows += [status, cancel, stop, rss, capped]
    result.details.append(
        f"n={REPEATS[mode]} servers; status is the median of {STATUS_PROBES} round trips; the "
        f"capped reply kept {int(at('capped text')):,} bytes of text"
    )
    return result
