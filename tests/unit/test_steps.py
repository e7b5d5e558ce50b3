"""The steps projection over logs written by real turns: tools, retries, an aborted turn."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.config import parse_initialization_options
from engine.core import Engine
from engine.model.tools import EditOutcome
from lsp_server.fake_model import FakeOpenAI
from session.derive.steps import fold_text, select, turn_steps
from session.local.manager import SessionManager

from .conftest import make_lifecycle, run_turn


class Sink:
    """The turn's live activity (the engine's `TurnSink`): says when text arrived."""

    streamed = False

    def __init__(self, text: asyncio.Event) -> None:
        self.text = text

    def delta(self, text: str) -> None:
        self.streamed = True
        self.text.set()

    def tool(self, name: str, args: Any, status: str, call_id: str) -> None:
        pass

    def retry(self, attempt: int, reason: str) -> None:
        self.streamed = False

    def thinking(self) -> None:
        pass

    def end_thinking(self) -> None:
        pass


class Editor:
    """The tools' editor: no open documents, no edit applied, nothing confirmed."""

    async def apply_file_edit(
        self, relative: str, content: str, call_id: str | None = None
    ) -> EditOutcome:
        return EditOutcome(applied=False)

    async def confirm(self, relative: str, reason: str, call_id: str | None = None) -> bool:
        return False

    async def confirm_tool(self, server: str, tool: str, args: dict[str, Any]) -> bool:
        return False

    def protected_globs(self) -> tuple[str, ...]:
        return ()

    async def read_document(self, relative: str) -> str | None:
        return None


class Host:
    """The engine's host: nothing shown, background work kept."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Future[Any]] = []

    @property
    def edits(self) -> Editor:
        return Editor()

    def show(self, message: str) -> None:
        pass

    def spawn(self, coro: Any, name: str) -> asyncio.Future[Any]:
        self.tasks.append(asyncio.ensure_future(coro))
        return self.tasks[-1]


async def recorded_session(workspace: Path, fake: FakeOpenAI, **options: Any) -> Engine:
    """Three real turns: tools and a retry, an aborted one, a failed one."""
    model = {"name": "test-model", "baseUrl": fake.base_url, "apiKey": "k"}
    config, _ = parse_initialization_options(
        {"instanceId": "w", "model": model, **options}, "test", {}
    )
    host = Host()
    text = asyncio.Event()

    def open_sink(session_id: str, turn: int) -> Sink:
        text.clear()
        return Sink(text)

    engine = Engine(host, config, workspace)  # type: ignore[arg-type]
    engine.configure(config, workspace)
    (workspace / "notes.txt").write_text("é" * 1500)  # 3000 bytes
    fake.add(
        {
            "text": "Reading.",
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "notes.txt"}, "id": "c1"},
                {"name": "read_file", "arguments": {"path": "../outside"}, "id": "c2"},
            ],
        },
        {"cut": "abandoned words "},  # the answer after the tools: cut, retried
        "The file is all é.",
    )
    await engine.turns.run("read my notes", open_sink)
    fake.add({"hang": "half an answer"})
    task = asyncio.ensure_future(engine.turns.run("take your time", open_sink))
    await asyncio.wait_for(text.wait(), 10)  # its first delta reached the turn
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    fake.release()
    fake.add({"error": 400, "message": "bad request, no retry"})
    with pytest.raises(Exception, match="bad request"):
        await engine.turns.run("fail please", open_sink)
    for spawned in host.tasks:
        spawned.cancel()
    return engine


async def test_a_turn_with_tools_a_retry_an_aborted_and_a_failed_turn(
    workspace: Path, home: Path
) -> None:
    with FakeOpenAI(label="steps") as fake:
        engine = await recorded_session(workspace, fake)
        session_id = engine.lifecycle.session_id
        events = SessionManager(workspace, home=home).read_events(session_id).events
        engine.close("the test ends")
    turns = turn_steps(events, fold=100)
    assert [(t.turn, t.input, t.end_reason) for t in turns] == [
        (1, "read my notes", "completed"),
        (2, "take your time", "aborted"),
        (3, "fail please", "error"),
    ]
    first, answer = turns[0].steps
    assert (first.step, first.model, first.end_reason, first.text) == (
        1,
        "test-model",
        "tool-calls",
        "Reading.",
    )
    assert first.usage is not None and first.usage.input_tokens > 0 and first.usage.requests == 1
    assert first.started_at is not None and first.ended_at is not None
    assert first.started_at <= first.ended_at
    notes, outside = first.tools
    assert (notes.tool_call_id, notes.name, notes.args) == (
        "c1",
        "read_file",
        {"path": "notes.txt"},
    )
    assert notes.folded and notes.result_bytes == 3000 and not notes.is_error
    assert notes.result is not None and len(notes.result.encode()) <= 100
    assert notes.result == "é" * 50  # cut at a character, never inside one
    assert outside.result and not outside.folded
    # the retried answer: one step, the number of the attempt that went through
    assert answer.step == 3 and answer.attempt_steps == [2, 3]
    assert [(r.attempt, r.kind) for r in answer.retries] == [(1, "cut")]
    assert answer.text == "The file is all é." and "abandoned" not in answer.text
    assert answer.end_reason == "answered" and answer.model == "test-model"
    digests = [first.request_sha256, answer.request_sha256]  # of the requests that went out
    assert all(d is not None and len(d) == 64 for d in digests) and len(set(digests)) == 2
    (stopped,) = turns[1].steps
    assert (stopped.text, stopped.end_reason, stopped.usage) == ("half an answer", "aborted", None)
    assert stopped.ended_at == turns[1].ended_at
    (refused,) = turns[2].steps  # the request was sent, and refused
    assert (refused.text, refused.end_reason, refused.retries) == ("", "error", [])
    # the selection: a turn, a step by any of its attempts' numbers
    assert [s.step for t in select(turns, 1, 2) for s in t.steps] == [3]
    assert select(turns, 9) == [] and select(turns, 1, 9)[0].steps == []
    assert [s.step for t in select(turns, 1) for s in t.steps] == [1, 3]


def test_fold_cuts_at_a_character_boundary() -> None:
    assert fold_text("aé", 2) == ("a", True)
    assert fold_text("aé", 3) == ("aé", False)
    assert fold_text("x" * 10, 0) == ("x" * 10, False)
    assert fold_text("x" * 10, None) == ("x" * 10, False)


def test_retries_before_any_request_get_a_step_of_their_own(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "hello", "hi there")
    turn = lc.begin_turn("again")
    turn.retry_step("connection", "the model server refused the connection", 0, False)
    turn.retry_step("connection", "the model server refused the connection", 0, False)
    turn.end("error", error="gave up")
    events = manager.read_events(lc.session_id).events
    first, second = turn_steps(events)
    (answered,) = first.steps
    assert (answered.text, answered.end_reason, answered.usage.input_tokens) == (  # type: ignore[union-attr]
        "hi there",
        "answered",
        10,
    )
    (never,) = second.steps
    assert (never.step, never.model, never.end_reason) == (1, None, "error")
    assert [r.attempt for r in never.retries] == [1, 2]


def test_a_metadata_session_shows_no_content(workspace: Path, home: Path) -> None:
    manager = SessionManager(workspace, home=home)
    lc = make_lifecycle(manager, persistence="metadata")
    turn = lc.begin_turn("my secret plan")
    turn.start_step([{"kind": "request", "parts": []}])
    turn.request_header("m", {}, "system")
    turn.assistant_message(
        {
            "kind": "response",
            "parts": [
                {"part_kind": "text", "content": "the plan is"},
                {"part_kind": "tool-call", "tool_name": "read_file", "args": {"path": "plan.md"}},
            ],
        }
    )
    turn.tool_call("c1", "read_file", {"path": "plan.md"})
    turn.tool_result("c1", "read_file", "the whole plan")
    turn.end_step({"input_tokens": 3, "output_tokens": 4})
    turn.end("completed")
    (only,) = turn_steps(manager.read_events(lc.session_id).events)
    (step,) = only.steps
    shown = [only.input, step.text, str(step.tools[0].args), step.tools[0].result or ""]
    assert all("not persisted" in s for s in shown), shown
    assert not any(w in s for s in shown for w in ("secret", "plan is", "plan.md", "whole"))
    assert step.end_reason == "tool-calls" and step.usage is not None


def test_rewound_and_compacted_turns_are_shown_as_the_log_has_them(
    manager: SessionManager,
) -> None:
    from session.derive.transcript import transcript

    lc = make_lifecycle(manager)
    run_turn(lc, "first", "one")
    boundary = manager.read_events(lc.session_id).events[-1].seq
    run_turn(lc, "second", "two")
    lc.current.append("session/rewind", {"to_seq": boundary})
    lc.current.append("session/compact", {"summary": "s", "decisions": [], "covers_seq": boundary})
    run_turn(lc, "third", "three")
    events = manager.read_events(lc.session_id).events
    assert [t.input for t in turn_steps(events)] == ["first", "second", "third"]
    assert [i.text for i in transcript(events) if i.role == "user"] == ["first", "third"]
