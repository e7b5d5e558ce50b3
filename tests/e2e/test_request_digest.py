"""Every request proved: each step's recorded digest is the body the model server received,
and the request rebuilt from the log alone has that digest, across the fault paths.

One server process runs a sequence of turns (tools, a cut stream, a stall, 429, 503, an empty
stream asked again in one piece, compaction, a checkpoint rewind, a fork, a resume), then
every session it wrote is verified the way `doctor --verify` does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from engine.model.request_digest import canonical, digest
from engine.model.request_rebuild import proved_steps, rebuild
from lsp_server.fake_model import FakeOpenAI

from .harness import Editor, stored

pytestmark = pytest.mark.parametrize("client_name", ["vscode"])

SECRET = "sk-proj-" + "Q7x9" * 10  # a secret-looking key: redacted in the log and the digest


def received(fake: FakeOpenAI) -> set[str]:
    """The digests of the chat requests the model server received."""
    return {
        digest(canonical(json.dumps(r.body).encode()))
        for r in fake.requests
        if "messages" in r.body
    }


async def verified(workspace: Path, home: Path, session_id: str) -> list[str]:
    """The steps whose rebuilt request differs, named; [] when every one matches."""
    events = stored(workspace, home).read_events(session_id).events
    indexes = proved_steps(events)
    assert indexes, "no request digest was recorded"
    bad = []
    for i in indexes:
        result = await rebuild(events, i)
        if not result.matches:
            bad.append(f"turn {result.turn} step {result.step}: {result.problem or 'differs'}")

    return bad


async def test_every_request_rebuilt_from_the_log_matches_what_was_sent(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    (workspace / "notes.md").write_text("alpha\n")
    fake.add(
        "plain answer",
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]},
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "notes.md", "content": "beta\n"}}
            ]
        },
        "read and wrote",
        {"cut": "half of an "},
        "whole after a cut",
        {"error": 503, "message": "overloaded"},
        "after a 503",
        {"error": 429, "message": "slow down", "retry_after": 0},
        "after a 429",
        {"stall": "starting ", "seconds": 30},
        {"tool_calls": [{"name": "list_files", "arguments": {}}]},
        "listed after a stall",
    )
    options: dict[str, Any] = {
        "instanceId": "proof",
        "model": {"name": "test-model", "apiKey": "sk-x", "baseUrl": fake.base_url},
    }
    options["model"]["streamTimeout"] = 1
    editor: Editor = make_editor(options=options)
    await editor.start()
    await editor.ready()
    first = await editor.request("agentAssist/chat", {"text": f"hello, my key is {SECRET}"})
    session_id = first["sessionId"]
    saved = await editor.request("agentAssist/save")
    for text in ("read then write notes.md", "cut", "503", "429", "stall then list"):
        reply = await editor.request("agentAssist/chat", {"text": text})
        assert reply["endReason"] == "completed", reply
    assert await verified(workspace, home, session_id) == []
    events = stored(workspace, home).read_events(session_id).events
    kinds = [e.data.kind for e in events if e.type == "step/retry"]
    assert len(kinds) == 4, kinds  # cut, 503, 429, stall: each attempt's digest matched
    recorded = {e.data.request_sha256 for e in events if e.type == "step/start"}
    assert recorded <= received(fake)  # each digest is of a body the server received
    assert SECRET not in json.dumps([e.model_dump(mode="json") for e in events])

    # A turn that fails (its partial text kept), then one that does not.
    fake.add({"cut": "first try "}, {"cut": "second try "}, {"cut": "third try, also cut"})
    with pytest.raises(JsonRpcException):
        await editor.request("agentAssist/chat", {"text": "cut thrice"})
    # An empty stream, asked again in one piece; a compaction; a rewind to a checkpoint.
    fake.add({"empty": True}, "in one piece")
    await editor.request("agentAssist/chat", {"text": "empty first"})
    fake.add_summary("The user chatted.")
    await editor.request("agentAssist/compact")
    fake.add("after compaction")
    await editor.request("agentAssist/chat", {"text": "after compact"})
    await editor.request("agentAssist/checkpoint", {"number": saved["checkpoint"]})
    fake.add("after the rewind")
    await editor.request("agentAssist/chat", {"text": "after rewind"})
    assert await verified(workspace, home, session_id) == []

    # A fork at the end of turn 1, and a turn in the child.
    events = stored(workspace, home).read_events(session_id).events
    end_of_turn_1 = next(e.seq for e in events if e.type == "turn/end")
    forked = await editor.request("agentAssist/fork", {"boundary": end_of_turn_1})
    fake.add("child answer")
    await editor.request("agentAssist/chat", {"text": "in the child"})
    assert await verified(workspace, home, forked["sessionId"]) == []
    await editor.stop()

    # A resumed session: the resume block in the instructions.
    editor = make_editor(options=options)
    await editor.start()
    await editor.ready()
    fake.add("resumed answer")
    reply = await editor.request("agentAssist/chat", {"text": "after resume"})
    assert await verified(workspace, home, reply["sessionId"]) == []
    events = stored(workspace, home).read_events(reply["sessionId"]).events
    recorded = {e.data.request_sha256 for e in events if e.type == "step/start"}
    assert recorded - {None} <= received(fake)
    await editor.stop()


async def test_requests_changed_for_the_server_are_proved_too(
    make_editor, workspace: Path, home: Path
) -> None:
    """Window healing (a read cut to fit), llama-cpp's overflow (empty, then in one piece),
    `content: ""` for a tool call, a turn asked in one piece, and no tools."""
    notes = "".join(f"Note {n}: the reply templates live under templates/.\n" for n in range(400))
    (workspace / "notes.md").write_text(notes)
    (workspace / "small.md").write_text("small\n")
    big = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]}
    small = {"tool_calls": [{"name": "read_file", "arguments": {"path": "small.md"}}]}
    with FakeOpenAI(context_window=2048, overflow="llama-cpp") as model:
        model.add(big, "The notes say where the templates live.")
        options = {"model": {"name": "test-model", "apiKey": "sk-x", "baseUrl": model.base_url}}
        editor: Editor = make_editor(options={"instanceId": "proof2", **options})
        await editor.start()
        await editor.ready()
        reply = await editor.request("agentAssist/chat", {"text": "what do the notes say?"})
        assert reply["endReason"] == "completed"
        session_id = reply["sessionId"]
        model.null_content = "llama-server"
        model.add(small, "Small.", "after blank text")
        await editor.request("agentAssist/chat", {"text": "read small.md"})
        await editor.request("agentAssist/chat", {"text": "and then?"})
        model.null_content = None
        model.tool_streams = False
        model.add(small, "Read in one piece.")
        await editor.request("agentAssist/chat", {"text": "read small.md again"})
        model.tool_streams = True
        model.no_tools = "vllm"
        model.add("without tools")
        last = await editor.request("agentAssist/chat", {"text": "no tools now"})
        assert last["text"] == "without tools"
        events = stored(workspace, home).read_events(session_id).events
        kinds = [e.data.kind for e in events if e.type == "step/retry"]
        assert {"overflow", "null-content", "empty", "no-tools"} <= set(kinds), kinds
        assert await verified(workspace, home, session_id) == []
        facts = [e.data.request for e in events if e.type == "step/start" and e.data.request]
        assert any(f.get("blank_tool_text") for f in facts)
        assert any(f.get("tools") is False for f in facts)
        assert any(f.get("stream") is False for f in facts)
        recorded = {e.data.request_sha256 for e in events if e.type == "step/start"}
        assert recorded - {None} <= received(model)
        await editor.stop()


async def test_a_prompt_the_server_cut_silently_is_proved_when_asked_again(
    make_editor, workspace: Path, home: Path
) -> None:
    """Ollama past its window: the answer is dropped, the session compacted, the turn resent."""
    summary = {
        "tool_calls": [
            {
                "name": "final_result",
                "arguments": {"summary": "The user asked two long questions.", "decisions": []},
            }
        ]
    }
    with FakeOpenAI(context_window=2048, overflow="ollama") as model:
        model.add("answer 1", "answer 2", "answer 3 (from a cut prompt)", summary, "answer 3")
        options = {"model": {"name": "test-model", "apiKey": "sk-x", "baseUrl": model.base_url}}
        editor: Editor = make_editor(options={"instanceId": "proof3", **options})
        await editor.start()
        await editor.ready()
        for n in (1, 2, 3):
            reply = await editor.request("agentAssist/chat", {"text": f"q{n} " + "x" * 3000})
        assert reply["text"] == "answer 3"
        events = stored(workspace, home).read_events(reply["sessionId"]).events
        assert [e.data.kind for e in events if e.type == "step/retry"] == ["truncated"]
        assert await verified(workspace, home, reply["sessionId"]) == []
        await editor.stop()
