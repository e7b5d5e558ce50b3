"""Telemetry folded from logs written by the real writer (session/derive/stats.py).

Every event is stamped by an injected clock, one second after the one before, so the time
on the model is a count of events and the turns fall on two UTC days.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from session.derive.stats import STATS_TYPES, UNKNOWN_MODEL, StatsFold, fold_store, fold_turns
from session.fork import fork_session
from session.local.manager import SessionManager
from session.store.session import Session
from tests.search_timeline import DAY_ONE, DAY_TWO, Clock, injected_clock


def answer(text: str) -> dict[str, Any]:
    return {"message": {"kind": "response", "parts": [{"part_kind": "text", "content": text}]}}


def step(
    writer: Session,
    turn: int,
    number: int,
    model: str,
    usage: dict[str, Any] | None,
    tools: list[tuple[str, bool]] = (),  # type: ignore[assignment]
) -> None:
    """One model call: start, header, answer, its tools (name, failed), and its end if usage."""
    writer.append("step/start", {"messages": []}, turn=turn, step=number)
    writer.append(
        "request/header",
        {"model": model, "system_prompt_sha256": "0" * 64},
        turn=turn,
        step=number,
    )
    writer.append("assistant/message", answer("ok"), turn=turn, step=number)
    for i, (name, failed) in enumerate(tools):
        call = {"tool_call_id": f"c{turn}{number}{i}", "name": name, "args": {"path": "a"}}
        writer.append("tool/call", call, turn=turn, step=number)
        result = {**call, "content": "boom" if failed else "fine", "is_error": failed}
        writer.append("tool/result", result, turn=turn, step=number)
    if usage is not None:
        writer.append("step/end", {"usage": usage}, turn=turn, step=number)


def retry(writer: Session, turn: int, number: int | None, kind: str, attempt: int) -> None:
    data = {"attempt": attempt, "kind": kind, "reason": f"scripted {kind}"}
    writer.append("step/retry", data, turn=turn, step=number)


def write_two_days(writer: Session, clock: Clock) -> None:
    """Day one: turns 1-2 on model-a; day two: turns 3-5 on model-b (one rewound, one open)."""
    clock.now = DAY_ONE
    writer.append("turn/start", {"input": "read the files"}, turn=1)  # t+1
    # step 1: t+2 .. its answer at t+4 (header, message; the tools after it): 2 s
    step(writer, 1, 1, "model-a", {"input_tokens": 100, "output_tokens": 20},
         [("read_file", False), ("read_file", True)])  # fmt: skip
    # step 2: t+10 .. its answer at t+12: 2 s
    step(writer, 1, 2, "model-a", {"input_tokens": 150, "output_tokens": 30})
    writer.append("turn/end", {"reason": "completed"}, turn=1)

    writer.append("turn/start", {"input": "again"}, turn=2)
    retry(writer, 2, None, "connection", 1)  # before any request: model-a's (the first step)
    # step 1 abandoned: start, header, message, retry: 3 s, a retry, not a step
    writer.append("step/start", {"messages": []}, turn=2, step=1)
    writer.append(
        "request/header", {"model": "model-a", "system_prompt_sha256": "0" * 64}, turn=2, step=1
    )
    writer.append("assistant/chunk", {"delta": "part"}, turn=2, step=1)
    retry(writer, 2, 1, "cut", 2)
    # step 2, the resent request, estimated usage: 2 s
    step(writer, 2, 2, "model-a", {"input_tokens": 40, "output_tokens": 10, "estimated": True})
    writer.append("turn/end", {"reason": "completed"}, turn=2)
    checkpoint_seq = writer.log.next_seq - 1

    clock.now = DAY_TWO
    writer.append("turn/start", {"input": "write it"}, turn=3)
    step(writer, 3, 1, "model-b", {"input_tokens": 10, "output_tokens": 5},
         [("write_file", False)])  # fmt: skip  # 2 s
    writer.append("turn/end", {"reason": "completed"}, turn=3)
    writer.append("session/rewind", {"to_seq": checkpoint_seq})  # turn 3 still happened

    writer.append("turn/start", {"input": "stopped"}, turn=4)
    step(writer, 4, 1, "model-b", None)  # no end, but answered: 2 s
    writer.append("turn/end", {"reason": "aborted"}, turn=4)

    writer.append("turn/start", {"input": "still open"}, turn=5)
    step(writer, 5, 1, "model-b", None)  # no end, no turn end, answered: 2 s


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SessionManager, str]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    manager = SessionManager(workspace, home=tmp_path / "home")
    clock = injected_clock(monkeypatch)
    writer = manager.create_session()
    write_two_days(writer, clock)
    writer.close()
    return manager, writer.session_id


def folded(manager: SessionManager, **window: datetime) -> Any:
    fold = StatsFold(**window)
    ids = list(manager.layout.session_ids())
    fold_store(fold, manager, ids, set(ids))
    return fold.result()


def test_the_fold_counts_turns_steps_tools_tokens_time_and_retries(
    project: tuple[SessionManager, str],
) -> None:
    manager, session_id = project
    stats = folded(manager)
    totals = stats.totals
    assert totals.turns == 5  # the rewound one and the open one too
    assert totals.steps == 6  # 2 + 1 (the abandoned attempt is not one) + 1 + 1 + 1
    assert totals.tool_calls == {"read_file": 2, "write_file": 1}
    assert totals.tool_errors == 1
    assert (totals.input_tokens, totals.output_tokens) == (300, 65)
    assert totals.estimated is True
    assert totals.model_seconds == 2 + 2 + 3 + 2 + 2 + 2 + 2  # to each answer, or retry
    assert totals.retries == {"connection": 1, "cut": 1}

    (only,) = stats.by_session
    assert only.key == session_id and only.turns == 5 and only.steps == 6

    day_two, day_one = stats.by_day  # newest first
    assert (day_two.key, day_one.key) == ("2026-12-05", "2026-12-04")
    assert (day_one.turns, day_one.steps, day_one.model_seconds) == (2, 3, 9)
    assert day_one.retries == {"connection": 1, "cut": 1} and day_one.estimated
    assert (day_two.turns, day_two.steps, day_two.model_seconds) == (3, 3, 6)
    assert day_two.tool_calls == {"write_file": 1} and not day_two.estimated
    assert (day_two.input_tokens, day_two.output_tokens) == (10, 5)

    model_b, model_a = stats.by_model  # the most steps first, then the most turns
    assert model_a.key == "model-a" and (model_a.turns, model_a.steps) == (2, 3)
    assert model_a.retries == {"connection": 1, "cut": 1}
    assert (model_a.input_tokens, model_a.output_tokens) == (290, 60)
    assert model_b.key == "model-b" and (model_b.turns, model_b.steps) == (3, 3)
    assert model_b.tool_calls == {"write_file": 1} and model_b.tool_errors == 0


def test_since_and_until_keep_the_turns_started_between(
    project: tuple[SessionManager, str],
) -> None:
    manager, _ = project
    day_two = folded(manager, since=DAY_TWO)
    assert [g.key for g in day_two.by_day] == ["2026-12-05"]
    assert (day_two.totals.turns, day_two.totals.steps) == (3, 3)
    assert [g.key for g in day_two.by_model] == ["model-b"]
    day_one = folded(manager, until=DAY_TWO)
    assert day_one.totals.turns == 2 and day_one.totals.retries == {"connection": 1, "cut": 1}
    assert folded(manager, since=DAY_TWO + timedelta(days=1)).totals.turns == 0
    assert folded(manager, since=DAY_TWO + timedelta(days=1)).by_session == []


def test_a_fork_counts_its_own_turns_and_its_copy_only_once_its_parent_is_gone(
    project: tuple[SessionManager, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, parent = project
    events = manager.read_events(parent).events
    boundary = next(e.seq for e in events if e.type == "turn/end" and e.turn == 2)
    child = fork_session(manager, parent, boundary).session
    clock = injected_clock(monkeypatch)
    clock.now = DAY_TWO + timedelta(hours=1)
    child.append("turn/start", {"input": "the fork's own"}, turn=3)
    step(child, 3, 1, "model-c", {"input_tokens": 7, "output_tokens": 1})
    child.append("turn/end", {"reason": "completed"}, turn=3)
    child_id = child.session_id
    child.close()

    stats = folded(manager)
    assert stats.totals.turns == 6  # 5 of the parent, 1 of the fork: the copy is not counted
    assert [g.key for g in stats.by_session] == [child_id, parent]  # its turn is the newest
    assert stats.by_session[0].turns == 1 and stats.by_session[0].input_tokens == 7

    manager.delete_session(parent)
    alone = folded(manager)
    assert alone.totals.turns == 3  # the parent gone: the fork's copy of turns 1-2 counts
    assert alone.totals.retries == {"connection": 1, "cut": 1}


def test_the_fold_reads_only_the_types_it_needs_and_an_empty_log_adds_nothing(
    project: tuple[SessionManager, str],
) -> None:
    manager, session_id = project
    whole = list(fold_turns(manager.read_events(session_id).events))
    some = list(fold_turns(manager.iter_events(session_id, types=STATS_TYPES)))
    assert whole == some and [t.turn for t in some] == [1, 2, 3, 4, 5]
    assert whole[3].by_model["model-b"].model_seconds == 2  # aborted, answered: to the answer
    assert whole[4].total.model_seconds == 2  # open, answered: to the answer
    assert list(fold_turns([])) == []
    fold = StatsFold()
    fold_store(fold, manager, ["0123456789ab"], set())  # no such session: skipped
    assert fold.result().totals.turns == 0


def test_a_retry_with_no_request_in_its_turn_is_under_the_unknown_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    manager = SessionManager(workspace, home=tmp_path / "home")
    injected_clock(monkeypatch)
    writer = manager.create_session()
    writer.append("turn/start", {"input": "no server"}, turn=1)
    retry(writer, 1, None, "connection", 1)
    writer.append("turn/end", {"reason": "error", "error": "unreachable"}, turn=1)
    writer.close()
    stats = folded(manager)
    assert stats.totals.turns == 1 and stats.totals.steps == 0
    (unknown,) = stats.by_model
    assert unknown.key == UNKNOWN_MODEL and unknown.retries == {"connection": 1}
    assert [g.key for g in stats.by_day] == ["2026-12-04"]
