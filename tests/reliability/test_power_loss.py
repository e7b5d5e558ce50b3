"""Power-loss model: whatever was not fsynced may vanish; what was fsynced must survive.

A log is built in-process with completed turns (each fsynced at `turn/end`) followed by an
open turn (written, flushed, never fsynced). For every byte offset after a fsync point, the
file is cut there — what a power loss can leave — and the session is opened: it must never
crash, never go read-only, keep every turn fsynced before the cut and accept a new turn.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from session.events import TurnEndEvent, TurnStartEvent
from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager

from .conftest import FIGURES, register_store


def build_log(workspace: Path, home: Path, turns: int) -> tuple[str, list[int], list[str]]:
    """Return (session id, offsets right after each completed turn's fsync, inputs)."""
    lifecycle = SessionLifecycle(SessionManager(workspace, home=home), "power")
    lifecycle.start_fresh()
    inputs = []
    sync_points = []
    for number in range(1, turns + 1):
        text = f"question {number} pwrtok{number}x"
        inputs.append(text)
        recorder = lifecycle.begin_turn(text)
        recorder.start_step(
            [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": text}]}]
        )
        for piece in ("answer ", f"number {number} ", "is ready"):
            recorder.chunk(piece)
        recorder.assistant_message(
            {
                "kind": "response",
                "parts": [{"part_kind": "text", "content": f"answer number {number} is ready"}],
            }
        )
        recorder.end_step({"input_tokens": 3})
        before = lifecycle.current.log.fsync_count
        recorder.end("completed")
        assert lifecycle.current.log.fsync_count == before + 1
        sync_points.append(lifecycle.current.log.offset)
        if number == 2:
            lifecycle.store.save(lifecycle.current)  # a snapshot in the middle
    # An open turn, flushed but never fsynced: all of it may be lost.
    recorder = lifecycle.begin_turn("unsynced question")
    recorder.start_step([])
    recorder.chunk("partial answ")
    session_id = lifecycle.session_id
    session = lifecycle.current
    session.log._fd and os.close(session.log._fd)  # simulate the crash: no close, no fsync
    session.log._fd = None
    if session.lock is not None:
        session.lock.release()
    return session_id, sync_points, inputs


def test_power_loss_truncation_at_every_offset(
    workspace: Path, tmp_path: Path, long_mode: bool
) -> None:
    home = register_store(tmp_path / "store")
    turns = 6 if long_mode else 4
    session_id, sync_points, inputs = build_log(workspace, home, turns)
    manager = SessionManager(workspace, home=home)
    log_path = manager.layout.log_path(session_id)
    full = log_path.read_bytes()
    snapshot = manager.layout.snapshot_path(session_id)
    snapshot_bytes = snapshot.read_bytes()
    start = sync_points[0] if long_mode else sync_points[-2]
    offsets = range(start, len(full) + 1)
    crashes, lost, read_only, cases = 0, 0, 0, 0
    problems: list[str] = []
    for cut in offsets:
        for with_snapshot in (True, False):
            cases += 1
            log_path.write_bytes(full[:cut])
            if with_snapshot:
                snapshot.write_bytes(snapshot_bytes)
            elif snapshot.exists():
                snapshot.unlink()
            survived = sum(1 for point in sync_points if point <= cut)
            try:
                session = manager.open_session(session_id)
                try:
                    if session.read_only:
                        read_only += 1
                        problems.append(f"cut {cut}: read-only {session.read_only_reason}")
                        continue
                    number = session.state.turns + 1
                    session.append("turn/start", {"input": "after power loss"}, turn=number)
                    session.append("turn/end", {"reason": "completed"}, turn=number)
                finally:
                    session.close()
                scan = manager.read_events(session_id)
                if scan.read_only_reason:
                    read_only += 1
                    problems.append(f"cut {cut}: reopened read-only {scan.read_only_reason}")
                completed = {
                    e.turn
                    for e in scan.events
                    if isinstance(e, TurnEndEvent) and e.data.reason == "completed"
                }
                texts = {e.turn: e.data.input for e in scan.events if isinstance(e, TurnStartEvent)}
                for turn in range(1, survived + 1):
                    if turn not in completed or texts.get(turn) != inputs[turn - 1]:
                        lost += 1
                        problems.append(f"cut {cut} snapshot={with_snapshot}: lost turn {turn}")
            except Exception as exc:
                crashes += 1
                problems.append(f"cut {cut} snapshot={with_snapshot}: {exc!r}")
    shutil.rmtree(manager.layout.project_dir / "sessions", ignore_errors=True)
    FIGURES["power_loss.cuts"] += cases
    FIGURES["power_loss.crashes"] += crashes
    FIGURES["power_loss.lost_fsynced_turns"] += lost
    FIGURES["power_loss.read_only"] += read_only
    assert not problems, "\n".join(problems[:30])
