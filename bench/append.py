"""Append throughput of chunk events through TurnRecorder vs raw os.write; fsyncs per turn."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from session.log.writer import EventLog

from .common import Mode, Result, Row, fmt_s, median, scratch_dir
from .resume import TurnPool, text_response, user_request

TURNS: dict[Mode, int] = {"smoke": 20, "default": 200, "long": 1000}
CHUNKS_PER_TURN = 20
RAW_REPEATS = 5
FSYNC_TARGET = 1.0


@contextmanager
def counting_fsync() -> Iterator[list[int]]:
    """Count every os.fsync call (log, snapshot, pointer, directory) while active."""
    calls = [0]
    real = os.fsync

    def counted(fd: Any) -> None:
        calls[0] += 1
        real(fd)

    os.fsync = counted
    try:
        yield calls
    finally:
        os.fsync = real


def chunk_lines(path: Path) -> list[bytes]:
    """Return the stored lines of the `assistant/chunk` events of a log, with newlines."""
    lines = path.read_bytes().splitlines(keepends=True)
    return [line for line in lines if orjson.loads(line)["type"] == "assistant/chunk"]


def raw_write_block_times(path: Path, lines: list[bytes], block: int) -> list[float]:
    """Baseline: os.write each line to an O_APPEND file; time each block of `block` lines."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o600)
    times = []
    try:
        for start in range(0, len(lines), block):
            chunk = lines[start : start + block]
            t0 = time.perf_counter()
            for line in chunk:
                os.write(fd, line)
            times.append((time.perf_counter() - t0) / len(chunk))
    finally:
        os.close(fd)
    return times


def run(mode: Mode) -> Result:
    """Run the append benchmark and return its rows."""
    turns = TURNS[mode]
    result = Result("append")
    pool = TurnPool(seed=3)
    with scratch_dir("append") as tmp:
        workspace = tmp / "ws"
        workspace.mkdir()
        (workspace / "agent_spec.md").write_text("# Agent spec\n")
        manager = SessionManager(workspace, home=tmp / "home")
        lifecycle = SessionLifecycle(manager, "bench")
        per_chunk: list[float] = []  # seconds per chunk event, one value per turn
        per_turn: list[float] = []
        events_before = 0
        with counting_fsync() as fsyncs:
            total_start = time.perf_counter()
            for number in range(turns):
                prompt = pool.prompts[number % len(pool.prompts)]
                text, _ = pool.responses[number % len(pool.responses)]
                step = max(1, len(text) // CHUNKS_PER_TURN)
                deltas = [text[i * step : (i + 1) * step] for i in range(CHUNKS_PER_TURN - 1)]
                deltas.append(text[(CHUNKS_PER_TURN - 1) * step :])
                turn_start = time.perf_counter()
                recorder = lifecycle.begin_turn(prompt)
                recorder.start_step([user_request(prompt)])
                t0 = time.perf_counter()
                for delta in deltas:
                    recorder.chunk(delta)
                recorder.flush()  # the tail a stream holds back (a word) until its step ends
                per_chunk.append((time.perf_counter() - t0) / len(deltas))
                recorder.assistant_message(text_response(text))
                recorder.end_step({"input_tokens": 100, "output_tokens": 50})
                recorder.end("completed")
                per_turn.append(time.perf_counter() - turn_start)
                if number == 0:
                    events_before = lifecycle.current.log.next_seq
            total = time.perf_counter() - total_start
            log = lifecycle.current.log
            assert isinstance(log, EventLog)  # the local store's log
            log_fsyncs = log.fsync_count
            all_fsyncs = fsyncs[0]
            events = log.next_seq
        log_path = log.path
        lifecycle.close()

        lines = chunk_lines(log_path)
        # A delta ending inside a word is written with the next one, the tail with the flush.
        assert turns <= len(lines) <= turns * (CHUNKS_PER_TURN + 1), len(lines)
        raw_runs = [
            median(raw_write_block_times(tmp / f"raw{i}.jsonl", lines, CHUNKS_PER_TURN))
            for i in range(RAW_REPEATS)
        ]
        ours_rate = 1 / median(per_chunk)
        raw_rate = 1 / median(raw_runs)
        result.rows.append(
            Row(
                f"append rate, chunk events ({turns * CHUNKS_PER_TURN:,}) vs raw os.write",
                f"{ours_rate:,.0f} ev/s",
                f"{raw_rate:,.0f} ev/s",
                ours_rate / raw_rate,
            )
        )
        per_turn_fsyncs = log_fsyncs / turns
        result.rows.append(
            Row(
                f"log fsyncs per completed turn ({turns} turns)",
                f"{per_turn_fsyncs:.2f}",
                target=f"= {FSYNC_TARGET:g}",
                ok=abs(per_turn_fsyncs - FSYNC_TARGET) < 1e-9,
            )
        )
        result.rows.append(
            Row(
                "all os.fsync calls per completed turn (log + pointer + dirs)",
                f"{all_fsyncs / turns:.2f}",
            )
        )
        line_bytes = sum(len(line) for line in lines) / len(lines)
        result.details.append(
            f"{turns} turns × (turn/start, step/start, {CHUNKS_PER_TURN} chunks, "
            f"assistant/message, step/end, turn/end) = {events:,} events incl. session/start "
            f"({events_before} in turn 1); chunk lines average {line_bytes:.0f} B"
        )
        result.details.append(
            f"chunk append: median {fmt_s(median(per_chunk))}/event "
            f"(min {fmt_s(min(per_chunk))}, max {fmt_s(max(per_chunk))} over {turns} turns); "
            f"raw os.write: median {fmt_s(median(raw_runs))}/event over {RAW_REPEATS} runs"
        )
        head = median(per_turn[: max(1, turns // 10)])
        tail = median(per_turn[-max(1, turns // 10) :])
        result.details.append(
            f"whole turn incl. fsync: median {fmt_s(median(per_turn))}; first 10% of turns "
            f"{fmt_s(head)}, last 10% {fmt_s(tail)} (×{tail / head:.2f}); "
            f"{events / total:,.0f} events/s overall"
        )
        result.details.append(
            f"fsyncs: {log_fsyncs} on the log (EventLog.fsync_count), {all_fsyncs} os.fsync "
            "calls in all during the turns"
        )
    return result
