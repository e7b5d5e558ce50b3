"""Derivations: message history, transcript, trimmed tail."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelMessagesTypeAdapter

from session.compaction import history_tokens
from session.derive.history import HistoryBuilder, build_history, derive_message_dicts
from session.derive.messages import (
    COMPACTION_PREFIX,
    reconstruct_history,
    sanitize_messages,
    summary_message,
)
from session.derive.model_messages import ModelMessageCache, derive_messages, to_model_messages
from session.derive.transcript import transcript
from session.events import EVENT_ADAPTER, Event

from .conftest import request, response

TS = datetime(2026, 3, 31, 14, 22, tzinfo=UTC)


class Log:
    """Builds an in-memory event list with dense seqs."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, type_: str, data: dict[str, Any], turn: int | None = None) -> Event:
        raw = {"seq": len(self.events), "ts": TS, "type": type_, "turn": turn, "data": data}
        event = EVENT_ADAPTER.validate_python(raw)
        self.events.append(event)
        return event


def tool_call_response(call_id: str, text: str = "") -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"part_kind": "text", "content": text})
    parts.append(
        {
            "part_kind": "tool-call",
            "tool_name": "read_file",
            "args": {"path": "a"},
            "tool_call_id": call_id,
        }
    )
    return {"kind": "response", "parts": parts}


def tool_return(call_id: str) -> dict[str, Any]:
    return {
        "kind": "request",
        "parts": [
            {
                "part_kind": "tool-return",
                "tool_name": "read_file",
                "content": "data",
                "tool_call_id": call_id,
            }
        ],
    }


def simple_turn(log: Log, n: int, text: str, reply: str, reason: str = "completed") -> None:
    log.add("turn/start", {"input": text}, n)
    log.add("step/start", {"messages": [request(text)]}, n)
    log.add("assistant/chunk", {"delta": reply}, n)
    log.add("assistant/message", {"message": response(reply)}, n)
    log.add("turn/end", {"reason": reason}, n)


def test_round_trip_of_completed_turns_with_tools() -> None:
    log = Log()
    log.add("session/start", {"session_id": "abcdef012345"})
    log.add("turn/start", {"input": "read a"}, 1)
    log.add("step/start", {"messages": [request("read a")]}, 1)
    log.add("assistant/message", {"message": tool_call_response("c1", "Let me look.")}, 1)
    log.add("tool/call", {"tool_call_id": "c1", "name": "read_file", "args": {"path": "a"}}, 1)
    log.add("tool/result", {"tool_call_id": "c1", "name": "read_file", "content": "data"}, 1)
    log.add("step/start", {"messages": [tool_return("c1")]}, 1)
    log.add("assistant/message", {"message": response("It says data.")}, 1)
    log.add("turn/end", {"reason": "completed"}, 1)
    simple_turn(log, 2, "thanks", "welcome")
    messages = derive_message_dicts(log.events)
    assert messages == [
        request("read a"),
        tool_call_response("c1", "Let me look."),
        tool_return("c1"),
        response("It says data."),
        request("thanks"),
        response("welcome"),
    ]
    typed = derive_messages(log.events)
    assert (
        ModelMessagesTypeAdapter.dump_python(typed, mode="json")[4]["parts"][0]["content"]
        == "thanks"
    )


def test_empty_and_max_token_responses_are_recorded_but_add_nothing() -> None:
    log = Log()
    log.add("turn/start", {"input": "hi"}, 1)
    log.add("step/start", {"messages": [request("hi")]}, 1)
    empty = {
        "kind": "response",
        "parts": [{"part_kind": "text", "content": ""}],
        "finish_reason": "length",
    }
    log.add("assistant/message", {"message": empty}, 1)
    log.add("turn/end", {"reason": "completed"}, 1)
    assert derive_message_dicts(log.events) == [request("hi")]


def test_interrupted_turn_keeps_the_partial_reply_and_drops_dangling_calls() -> None:
    log = Log()
    simple_turn(log, 1, "one", "first")
    log.add("turn/start", {"input": "two"}, 2)
    log.add("step/start", {"messages": [request("two")]}, 2)
    log.add("assistant/message", {"message": tool_call_response("c9", "Reading")}, 2)
    log.add("tool/call", {"tool_call_id": "c9", "name": "read_file", "args": {}}, 2)
    # process died here: no tool result, no turn/end
    messages = derive_message_dicts(log.events)
    assert messages[-1] == response("Reading")  # the call without a result is gone
    ModelMessagesTypeAdapter.validate_python(messages)


def test_aborted_stream_keeps_text_the_user_saw() -> None:
    log = Log()
    log.add("turn/start", {"input": "story"}, 1)
    log.add("step/start", {"messages": [request("story")]}, 1)
    log.add("assistant/chunk", {"delta": "Once upon"}, 1)
    log.add("assistant/chunk", {"delta": " a time"}, 1)
    log.add("turn/end", {"reason": "aborted"}, 1)
    assert derive_message_dicts(log.events) == [request("story"), response("Once upon a time")]


def test_compaction_replaces_older_turns_with_summary() -> None:
    log = Log()
    simple_turn(log, 1, "one", "first")
    covers = log.events[-1].seq
    simple_turn(log, 2, "two", "second")
    log.add("session/compact", {"summary": "User said one.", "covers_seq": covers})
    simple_turn(log, 3, "three", "third")
    messages = derive_message_dicts(log.events)
    assert messages[0]["parts"][0]["content"] == COMPACTION_PREFIX + "User said one."
    assert messages[1:] == [request("two"), response("second"), request("three"), response("third")]


def test_rewind_hides_later_turns_from_history_and_transcript() -> None:
    log = Log()
    simple_turn(log, 1, "one", "first")
    boundary = log.events[-1].seq
    simple_turn(log, 2, "two", "second")
    log.add("session/rewind", {"to_seq": boundary, "checkpoint": 1})
    simple_turn(log, 3, "three", "third")
    assert derive_message_dicts(log.events) == [
        request("one"),
        response("first"),
        request("three"),
        response("third"),
    ]
    texts = [(i.role, i.text) for i in transcript(log.events)]
    assert ("user", "two") not in texts
    assert texts == [
        ("user", "one"),
        ("assistant", "first"),
        ("user", "three"),
        ("assistant", "third"),
    ]


def test_transcript_marks_end_reasons_and_tools() -> None:
    log = Log()
    log.add("turn/start", {"input": "go"}, 1)
    log.add("step/start", {"messages": [request("go")]}, 1)
    log.add("assistant/message", {"message": tool_call_response("c1")}, 1)
    log.add("tool/call", {"tool_call_id": "c1", "name": "read_file", "args": {"path": "a"}}, 1)
    log.add(
        "tool/result",
        {"tool_call_id": "c1", "name": "read_file", "content": "x", "is_error": True},
        1,
    )
    log.add("turn/end", {"reason": "error", "error": "boom"}, 1)
    items = transcript(log.events)
    assert [(i.role, i.status, i.end_reason) for i in items] == [
        ("user", None, None),
        ("tool", "failed", None),
        ("assistant", None, "error"),
    ]


def test_incremental_builder_matches_full_derivation() -> None:
    log = Log()
    simple_turn(log, 1, "one", "first")
    simple_turn(log, 2, "two", "second")
    snapshot = derive_message_dicts(log.events)
    last = log.events[-1].seq
    simple_turn(log, 3, "three", "third")
    builder = HistoryBuilder.from_snapshot(snapshot, last)
    for event in log.events[last + 1 :]:
        builder.apply(event)
    assert builder.messages() == derive_message_dicts(log.events)


def test_reconstruct_history_keeps_pairs_system_prompt_and_last_turn() -> None:
    sys_req = {
        "kind": "request",
        "parts": [
            {"part_kind": "system-prompt", "content": "SYS"},
            {"part_kind": "user-prompt", "content": "q0"},
        ],
    }
    messages = [sys_req, response("a0" * 200)]
    for i in range(1, 6):
        messages += [
            request(f"q{i}"),
            tool_call_response(f"c{i}"),
            tool_return(f"c{i}"),
            response("x" * 1000),
        ]
    trimmed = reconstruct_history(messages, max_tokens=300)
    assert trimmed[0]["parts"][0] == {"part_kind": "system-prompt", "content": "SYS"}
    assert trimmed[0]["parts"][1]["content"] == "q5"
    assert len(trimmed) == 4  # only the last turn fits, whole
    assert reconstruct_history(messages, max_tokens=10**6) == sanitize_messages(messages)
    assert reconstruct_history([], 100) == []


def test_a_tail_starting_with_a_response_carries_the_summary_in_a_request() -> None:
    builder = HistoryBuilder.from_snapshot(
        [summary_message("S"), request("q1"), response("x" * 400), request("q2"), response("a2")],
        0,
    )
    trimmed = builder.messages(max_tokens=30)
    assert trimmed == [
        {"kind": "request", "parts": [summary_message("S")["parts"][0]]},
        response("x" * 400),
        request("q2"),
        response("a2"),
    ]
    ModelMessagesTypeAdapter.validate_python(trimmed)


# -- property: any sequence of events derives a valid, paired history -------------

step_kinds = st.sampled_from(["text", "tool", "empty", "chunks_only"])


@st.composite
def event_logs(draw: st.DrawFn) -> list[Event]:
    log = Log()
    log.add("session/start", {"session_id": "abcdef012345"})
    boundaries = [0]
    call_counter = 0
    for n in range(1, draw(st.integers(1, 6)) + 1):
        log.add("turn/start", {"input": f"q{n}"}, n)
        pending: list[dict[str, Any]] = [request(f"q{n}")]
        for _ in range(draw(st.integers(0, 3))):
            log.add("step/start", {"messages": pending}, n)
            pending = []
            kind = draw(step_kinds)
            if kind == "chunks_only":
                log.add("assistant/chunk", {"delta": "partial"}, n)
                break
            if kind == "empty":
                log.add("assistant/message", {"message": {"kind": "response", "parts": []}}, n)
                break
            if kind == "text":
                log.add("assistant/message", {"message": response(f"a{n}")}, n)
                break
            call_counter += 1
            cid = f"call{call_counter}"
            log.add("assistant/message", {"message": tool_call_response(cid)}, n)
            log.add("tool/call", {"tool_call_id": cid, "name": "read_file", "args": {}}, n)
            if draw(st.booleans()):
                log.add(
                    "tool/result", {"tool_call_id": cid, "name": "read_file", "content": "d"}, n
                )
                pending = [tool_return(cid)]
        if draw(st.integers(0, 9)) == 0:
            return log.events  # crash: the turn stays open
        log.add(
            "turn/end",
            {"reason": draw(st.sampled_from(["completed", "aborted", "error", "interrupted"]))},
            n,
        )
        boundaries.append(log.events[-1].seq)
        extra = draw(st.integers(0, 6))
        if extra == 0:
            log.add(
                "session/compact",
                {"summary": f"up to {n}", "covers_seq": draw(st.sampled_from(boundaries))},
            )
        elif extra == 1:
            log.add("session/rewind", {"to_seq": draw(st.sampled_from(boundaries))})
        elif extra == 2:
            log.add("workspace/drift", {"source": "watcher", "modified": ["a"]})
    return log.events


@settings(max_examples=300, deadline=None)
@given(event_logs())
def test_any_event_sequence_derives_a_valid_paired_history(events: list[Event]) -> None:
    messages = derive_message_dicts(events)
    ModelMessagesTypeAdapter.validate_python(messages)
    for index, message in enumerate(messages):
        assert message["parts"], "no empty messages"
        if message["kind"] == "response":
            calls = {p["tool_call_id"] for p in message["parts"] if p["part_kind"] == "tool-call"}
            if calls:
                nxt = messages[index + 1]
                answered = {
                    p["tool_call_id"] for p in nxt["parts"] if p["part_kind"] == "tool-return"
                }
                assert calls <= answered
        else:
            returns = {
                p["tool_call_id"] for p in message["parts"] if p["part_kind"] == "tool-return"
            }
            if returns:
                prev = messages[index - 1]
                assert prev["kind"] == "response"
                assert returns <= {
                    p["tool_call_id"] for p in prev["parts"] if p["part_kind"] == "tool-call"
                }
    transcript(events)  # never raises
    trimmed = reconstruct_history(messages, max_tokens=50)
    ModelMessagesTypeAdapter.validate_python(trimmed)


# -- identity: unchanged messages are handed out as the same objects ------------------


def _without_timestamps(value: Any) -> Any:
    """pydantic-ai fills a missing timestamp with "now": compare everything else."""
    if isinstance(value, dict):
        return {k: _without_timestamps(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [_without_timestamps(v) for v in value]
    return value


def _as_json(messages: Any) -> Any:
    return _without_timestamps(ModelMessagesTypeAdapter.dump_python(messages, mode="json"))


def test_sanitize_returns_untouched_messages_as_is_and_copies_what_it_changes() -> None:
    kept = request("q")
    dangling = tool_call_response("c1", "Reading")
    parts_before = list(dangling["parts"])
    out = sanitize_messages([kept, dangling])
    assert out[0] is kept
    assert out[1] is not dangling and out[1] == response("Reading")
    assert dangling["parts"] == parts_before  # the input is never mutated


def test_history_hands_out_the_same_message_objects_turn_after_turn() -> None:
    log = Log()
    simple_turn(log, 1, "one", "first")
    builder = build_history(log.events)
    before = builder.messages(10**6)
    seen = len(log.events)
    simple_turn(log, 2, "two", "second")
    for event in log.events[seen:]:
        builder.apply(event)
    after = builder.messages(10**6)
    assert len(after) == 4
    assert all(a is b for a, b in zip(before, after[:2], strict=True))
    assert builder.messages() == after


def test_model_message_cache_converts_only_new_messages() -> None:
    log = Log()
    simple_turn(log, 1, "one", "first")
    builder = build_history(log.events)
    cache = ModelMessageCache()
    first = cache.convert(builder.messages())
    simple_turn(log, 2, "two", "second")
    for event in log.events[-5:]:
        builder.apply(event)
    history = builder.messages()
    second = cache.convert(history)
    assert second[0] is first[0] and second[1] is first[1]
    assert _as_json(second) == _as_json(to_model_messages(history))


def _replayed(events: list[Event]) -> Iterator[tuple[Event, HistoryBuilder]]:
    """Fold `events` one by one as the server does (a rewind rebuilds); yield each state."""
    builder = HistoryBuilder()
    for index, event in enumerate(events):
        if event.type == "session/rewind":
            builder = build_history(events[: index + 1])
        else:
            builder.apply(event)
        yield event, builder


@settings(max_examples=200, deadline=None)
@given(event_logs(), st.sampled_from([None, 30, 10**6]))
def test_model_message_cache_matches_a_fresh_conversion_as_the_log_grows(
    events: list[Event], budget: int | None
) -> None:
    """Turn by turn, with compactions, rewinds and interrupted turns, like the server."""
    cache = ModelMessageCache()
    for event, builder in _replayed(events):
        if event.type in ("turn/start", "turn/end", "session/compact", "session/rewind"):
            history = builder.messages(budget)
            assert _as_json(cache.convert(history)) == _as_json(to_model_messages(history))


@settings(max_examples=200, deadline=None)
@given(event_logs(), st.sampled_from([None, 1, 30, 120, 10**6]))
def test_token_bound_is_never_below_the_estimate_of_what_is_sent(
    events: list[Event], budget: int | None
) -> None:
    for _event, builder in _replayed(events):
        assert builder.token_bound() >= history_tokens(builder.messages(budget))


def test_tool_results_over_the_limit_are_cut_at_a_line_and_said() -> None:
    from session.derive.messages import cut_tool_results

    text = "".join(f"line {n}\n" for n in range(100))  # 790 bytes: 7 or 8 a line
    listing = [f"file{n}.md" for n in range(100)]
    call = {"part_kind": "tool-call", "tool_name": "read_file", "args": {}, "tool_call_id": "a"}

    def result(content: object, call_id: str) -> dict:
        return {"part_kind": "tool-return", "tool_name": "t", "content": content} | {
            "tool_call_id": call_id
        }

    history = [
        {"kind": "response", "parts": [call]},
        {"kind": "request", "parts": [result(text, "a"), result("ok", "b"), result(listing, "c")]},
    ]
    cut, count = cut_tool_results(history, 100)
    assert count == 2 and history[1]["parts"][0]["content"] == text  # the input is untouched
    first, short, files = (p["content"] for p in cut[1]["parts"])
    assert first.startswith("line 0\n") and first.split("\n[")[0].endswith("line 12")  # 94 B
    assert first.endswith(
        "[cut to 100 bytes to fit the model's context window: 696 bytes left out]"
    )  # noqa: E501
    assert short == "ok" and cut[0] is history[0]
    assert files[:3] == ["file0.md", "file1.md", "file2.md"]
    assert len(files) == 9 and files[-1].startswith("[cut to 100")  # 8 names of 11 bytes
    assert cut_tool_results(history, 10_000) == (history, 0)  # nothing over: the same list
