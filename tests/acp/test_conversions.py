"""The ACP edge's pure conversions, in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import embedded_text_resource, resource_block, resource_link_block, text_block

from acp_edge.checks import prompt_text
from acp_edge.listing import BadCursorError, cursor_offset, listed, page
from acp_edge.replay import replay, rewinds
from acp_edge.transport import envelope_problem
from acp_edge.updates import stop_reason, tool_kind, tool_locations, tool_title
from session.events import EVENT_ADAPTER

ROOT = Path("/project")


def event(seq: int, type_: str, data: dict[str, Any], turn: int | None = None) -> Any:
    raw: dict[str, Any] = {"seq": seq, "ts": "2026-12-06T00:00:00Z", "type": type_, "data": data}
    if turn is not None:
        raw["turn"] = turn
    return EVENT_ADAPTER.validate_python(raw)


def text_of(update: Any) -> tuple[str, str]:
    return update.session_update, getattr(getattr(update, "content", None), "text", "")


def test_a_rewound_turn_is_not_replayed_and_an_unanswered_call_ends_failed() -> None:
    events = [
        event(1, "turn/start", {"input": "kept"}, 1),
        event(2, "assistant/chunk", {"delta": "an answer"}, 1),
        event(3, "turn/end", {"reason": "completed"}, 1),
        event(4, "turn/start", {"input": "undone"}, 2),
        event(5, "turn/end", {"reason": "completed"}, 2),
        event(6, "session/rewind", {"to_seq": 3}),
        event(7, "turn/start", {"input": "read it"}, 3),
        event(
            8, "tool/call", {"tool_call_id": "c1", "name": "read_file", "args": {"path": "a"}}, 3
        ),
        event(9, "turn/end", {"reason": "interrupted"}, 3),
    ]
    updates = list(replay(events, ROOT, rewinds(events)))
    assert [text_of(u) for u in updates[:3]] == [
        ("user_message_chunk", "kept"),
        ("agent_message_chunk", "an answer"),
        ("user_message_chunk", "read it"),
    ]
    call = updates[3]
    assert (call.session_update, call.status, call.kind) == ("tool_call", "failed", "read")
    assert "interrupted" in updates[4].content.text
    assert len(updates) == 5


def test_the_listing_folds_empty_sessions_but_not_those_open_here() -> None:
    rows = [
        ("a" * 12, "Fix it", "t1", "t2", 3, None, None, 0),
        ("b" * 12, None, "t1", "t1", 0, None, None, 0),
        ("c" * 12, None, "t1", "t1", 0, None, None, 0),
    ]
    kept = listed(rows, {"c" * 12: None, "d" * 12: None})
    assert [r[0] for r in kept] == ["d" * 12, "a" * 12, "c" * 12]


def test_pages_hand_out_cursors_until_the_last() -> None:
    rows = [(f"{i:012x}", None, "t", "t", 1, None, None, 0) for i in range(5)]
    first = page(rows, ROOT, 0, size=2)
    assert [s.session_id for s in first.sessions] == [f"{i:012x}" for i in (0, 1)]
    assert first.sessions[0].cwd == "/project"
    third = page(rows, ROOT, cursor_offset(page(rows, ROOT, 2, size=2).next_cursor), size=2)
    assert [s.session_id for s in third.sessions] == [f"{4:012x}"]
    assert third.next_cursor is None


@pytest.mark.parametrize("cursor", ["-1", "x", "1" * 12, ""])
def test_a_cursor_not_handed_out_is_refused(cursor: str) -> None:
    with pytest.raises(BadCursorError):
        cursor_offset(cursor)


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "x"}, None),
        ({"jsonrpc": "2.0", "method": "x"}, None),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, None),
        ([], "object"),
        ({"id": True, "method": "x"}, "id"),
        ({"id": {}, "method": "x"}, "id"),
        ({"method": 1}, "method"),
        ({"jsonrpc": "2.0"}, "needs a method"),
        ({"method": "x", "params": 3}, "params"),
    ],
)
def test_envelope_problems(message: object, problem: str | None) -> None:
    found = envelope_problem(message)
    assert (found is None) if problem is None else (problem in (found or ""))


def test_a_prompt_of_text_links_and_embedded_files_is_one_message() -> None:
    blocks = [
        text_block("compare "),
        resource_link_block("a.py", "file:///project/a.py"),
        resource_block(embedded_text_resource("file:///project/b.py", "print(1)")),
    ]
    text = prompt_text(blocks)
    assert text.startswith("compare [a.py](file:///project/a.py)")
    assert "<file uri='file:///project/b.py'>\nprint(1)\n</file>" in text


def test_tools_in_acps_terms() -> None:
    assert [tool_kind(n) for n in ("read_file", "write_file", "list_files", "mcp_x")] == [
        "read",
        "edit",
        "search",
        "other",
    ]
    assert tool_title("write_file", '{"path": "src/a.py", "content": "x"}') == "write_file src/a.py"
    assert [loc.path for loc in tool_locations(ROOT, {"path": "src/a.py"})] == ["/project/src/a.py"]
    assert tool_locations(ROOT, {}) == []
    assert (stop_reason("length"), stop_reason("stop"), stop_reason(None)) == (
        "max_tokens",
        "end_turn",
        "end_turn",
    )
    assert stop_reason("content_filter") == "refusal"
