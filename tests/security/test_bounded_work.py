"""Bounded work: a misbehaving model server, or a model steered by what it read, cannot make
the server stream, hold or run without limit.

Through the real server and the loopback model: an endless stream, one SSE line that never
ends, a malformed chunk followed by a long tail, a response asking for hundreds of tool calls,
a turn that keeps calling tools, a write of arguments past the cap.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcRequestCancelled

from lsp_server.fake_model import FakeOpenAI

from ..e2e.harness import Editor, shown, stored

CAP = 65_536  # the smallest model.maxReplyBytes


def options(model: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"instanceId": "w", **extra, "model": model} if model else {"instanceId": "w", **extra}


def events_of(workspace: Path, home: Path, session_id: str) -> list[Any]:
    return list(stored(workspace, home).read_events(session_id).events)


@pytest.mark.parametrize(
    "flood",
    [{"flood": "endless ", "chunk": 4096}, {"flood_line": "x"}],
    ids=["endless-stream", "endless-line"],
)
async def test_an_endless_reply_is_stopped_at_its_cap_and_the_session_goes_on(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path, flood: dict[str, Any]
) -> None:
    fake.add(flood, "A normal answer.")
    model = {"name": "m", "baseUrl": fake.base_url, "apiKey": "none", "maxReplyBytes": CAP}
    editor: Editor = make_editor(options=options(model))
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "go"})
    assert reply["endReason"] == "completed"
    assert len(reply["text"].encode()) <= CAP
    assert fake.disconnects == 1  # the server left the stream: it did not read on
    said = [m for m in shown(editor) if "model.maxReplyBytes" in m]
    assert len(said) == 1 and "65,536 bytes" in said[0]
    # The session goes on: the stopped reply is in the history as far as it came.
    again = await editor.request("agentAssist/chat", {"text": "and now?"})
    assert again["text"] == "A normal answer."
    if reply["text"]:  # an endless line brought no text at all: nothing to keep
        assert fake.messages(1)[-2] == {"role": "assistant", "content": reply["text"]}
    events = events_of(workspace, home, reply["sessionId"])
    stopped = [e for e in events if e.type == "assistant/message" and e.turn == 1]
    assert stopped[-1].data.message["finish_reason"] == "length"
    await editor.stop()


async def test_cancel_and_shutdown_are_prompt_during_an_endless_stream(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add({"flood": "endless ", "chunk": 16})  # small deltas: the slowest to take in
    editor: Editor = make_editor(options=options())
    await editor.start()
    await editor.ready()
    msg_id, answer = editor.start_request("agentAssist/chat", {"text": "go"})
    await editor.wait_for("agentAssist/chatDelta", count=2_000, timeout=120)
    status = await editor.request("agentAssist/status", {})  # answered while it streams
    assert status["state"] == "running"
    editor.cancel(msg_id)
    with pytest.raises(JsonRpcRequestCancelled):
        await answer
    await editor.stop()
    assert editor.process.returncode == 0
    end = [e for e in events_of(workspace, home, status["sessionId"]) if e.type == "turn/end"]
    assert end[-1].data.reason == "aborted"


@pytest.mark.parametrize("bad", ["", '{"object": "chat.completion.chunk"}'], ids=["cut", "shape"])
async def test_a_corrupt_chunk_ends_the_attempt_at_once(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path, bad: str
) -> None:
    # 400 more chunks 0.05 s apart follow the corrupt one: read to the end, the attempt would
    # finish without the fake seeing the client leave.
    fake.add({"corrupt": "Half of ", "bad": bad, "rest": 400, "delay": 0.05}, "The whole answer.")
    editor: Editor = make_editor(options=options())
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "go"})
    assert reply["text"] == "The whole answer." and reply["attempts"] == 2
    assert fake.disconnects == 1
    retry = [e for e in events_of(workspace, home, reply["sessionId"]) if e.type == "step/retry"]
    assert retry[0].data.kind == "corrupt" and "malformed chunk" in retry[0].data.reason
    await editor.stop()


async def test_one_response_runs_at_most_max_calls_per_response(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    calls = [
        {"name": "read_file", "arguments": {"path": "agent_spec.md"}, "id": f"c{i}"}
        for i in range(300)
    ]
    fake.add({"tool_calls": calls, "chunk": 4096}, "Done reading.")
    editor: Editor = make_editor(options=options(tools={"maxCallsPerResponse": 10}))
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "read it all"})
    assert reply["text"] == "Done reading."
    events = events_of(workspace, home, reply["sessionId"])
    assert len([e for e in events if e.type == "tool/call"]) == 10
    assert len([e for e in events if e.type == "tool/result"]) == 10
    kept = [e for e in events if e.type == "assistant/message"][0].data.message
    assert len([p for p in kept["parts"] if p["part_kind"] == "tool-call"]) == 10
    # The model is told, in the next request, that the rest were not run.
    sent = json.dumps(fake.messages(1))
    assert "290 more tool calls of this response were not run" in sent
    assert "tools.maxCallsPerResponse" in sent
    assert len([m for m in fake.messages(1) if m["role"] == "tool"]) == 10
    await editor.stop()


async def test_a_turn_runs_at_most_max_calls_per_turn(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    def call(i: int) -> dict[str, Any]:
        return {"tool_calls": [{"name": "list_files", "arguments": {"directory": f"d{i}"}}]}

    fake.add(*[call(i) for i in range(6)], "Stopped.")
    editor: Editor = make_editor(options=options(tools={"maxCallsPerTurn": 3}))
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "look everywhere"})
    assert reply["text"] == "Stopped."
    results = [e for e in events_of(workspace, home, reply["sessionId"]) if e.type == "tool/result"]
    assert len(results) == 6
    refused = [r for r in results if "tools.maxCallsPerTurn" in json.dumps(r.data.content)]
    assert len(refused) == 3  # the first three ran (each a missing directory), then refusals
    assert all("does not exist" in json.dumps(r.data.content) for r in results[:3])
    await editor.stop()


async def test_arguments_past_the_cap_are_neither_run_nor_stored(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    big = "A" * 200_000
    write = {"name": "write_file", "arguments": {"path": "big.txt", "content": big}}
    fake.add({"tool_calls": [write], "chunk": 65_536}, "I could not write it.")
    editor: Editor = make_editor(options=options(tools={"maxArgumentBytes": 4096}))
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "write a big file"})
    assert reply["text"] == "I could not write it."
    assert not (workspace / "big.txt").exists()
    sent = json.dumps(fake.messages(1))
    assert "tools.maxArgumentBytes" in sent and big not in sent
    await editor.stop()
    for path in home.rglob("*"):
        if path.is_file():
            assert b"A" * 10_000 not in path.read_bytes(), path


async def test_status_answers_while_a_turn_runs_tool_calls(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    calls = [{"name": "read_file", "arguments": {"path": "agent_spec.md"}} for _ in range(64)]
    fake.add({"tool_calls": calls, "chunk": 4096}, {"hang": "Thinking about it"})
    editor: Editor = make_editor(options=options())
    await editor.start()
    await editor.ready()
    _, answer = editor.start_request("agentAssist/chat", {"text": "read"})
    assert await asyncio.to_thread(fake.wait_hanging, 60)
    status = await editor.request("agentAssist/status", {})
    assert status["state"] == "running"
    fake.release()
    reply = await answer
    assert reply["text"].startswith("Thinking about it")
    await editor.stop()
