"""The running session summary: kept current in the background, shown on every resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI
from session.compaction import FALLBACK_LABEL

from .harness import Editor, stored

pytestmark = pytest.mark.parametrize("client_name", ["vscode"])
FAST = {"AGENT_ASSIST_SUMMARY_DELAY": "0.05"}


def summaries(workspace: Path, home: Path, session_id: str) -> list[Any]:
    events = stored(workspace, home).read_events(session_id).events
    return [e for e in events if e.type == "session/summary"]


async def wait_for(condition: Any, timeout: float = 20) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout)


async def wait_summaries(
    workspace: Path, home: Path, session_id: str, count: int, timeout: float = 20
) -> list[Any]:
    async def poll() -> list[Any]:
        while len(found := summaries(workspace, home, session_id)) < count:
            await asyncio.sleep(0.05)
        return found

    return await asyncio.wait_for(poll(), timeout)


def structured(summary: str, decisions: list[str]) -> dict[str, Any]:
    arguments = {"summary": summary, "decisions": decisions}
    return {"tool_calls": [{"name": "final_result", "arguments": arguments}]}


async def resumed_context(make_editor: Any, **kwargs: Any) -> str:
    editor: Editor = make_editor(**kwargs)
    await editor.start()
    assert (await editor.ready())["reason"] == "resumed"
    context = (await editor.request("agentAssist/resume"))["context"]
    await editor.stop()
    return str(context)


@pytest.mark.local_store
@pytest.mark.parametrize("turns", [1, 3, 30])
@pytest.mark.parametrize("summariser", ["model", "no-model"])
async def test_every_resume_block_has_the_summary_and_the_decisions(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path, turns: int, summariser: str
) -> None:
    decide = {"name": "record_decision", "arguments": {"decision": "Use PostgreSQL."}}
    fake.add({"tool_calls": [decide]}, "noted")
    for n in range(2, turns + 1):
        fake.add(f"answer {n}")
    for n in range(1, turns + 1):
        if summariser == "model":
            fake.add_summary(structured(f"Summary after turn {n}.", ["use postgresql"]))
        else:  # the model cannot summarise: the summary is extractive, and says so
            fake.add_summary({"error": 500, "message": "no structured output here"})
    editor: Editor = make_editor(env=FAST)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    for n in range(1, turns + 1):
        await editor.request("agentAssist/chat", {"text": f"question {n}"})
        await wait_summaries(workspace, home, session_id, count=n)
    await editor.stop()
    context = await resumed_context(make_editor)
    assert "## Previous Session Summary" in context and "## Key Decisions Made" in context
    if summariser == "model":
        assert f"Summary after turn {turns}." in context
        assert len(summaries(workspace, home, session_id)) == turns
    else:
        summary = context.split("## Previous Session Summary\n", 1)[1]
        assert summary.startswith(FALLBACK_LABEL)
        assert f"question {turns}" in summary  # every completed turn is covered
        assert len(fake.summary_requests) == 1  # a model that failed is not asked every turn
    decisions = context.split("## Key Decisions Made\n", 1)[1].split("\n\n")[0]
    assert decisions.splitlines() == ["- Use PostgreSQL."]  # tool + summary: merged, once
    snapshot = json.loads(stored(workspace, home).layout.snapshot_path(session_id).read_text())
    assert snapshot["summary"] and snapshot["decisions"] == ["Use PostgreSQL."]


@pytest.mark.parametrize("output", ["tool", "prompted"])
async def test_a_summary_whose_json_holds_raw_newlines_is_the_models(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path, output: str
) -> None:
    """Small local models write a summary's line breaks into the JSON as they are."""
    raw = '{"summary": "The user asked one question.\nIt was answered.", "decisions": []}'
    if output == "tool":
        fake.add_summary({"tool_calls": [{"name": "final_result", "arguments": raw}]})
    else:  # the JSON as the answer's text (prompted output, or a model that ignores the tool)
        fake.add_summary(raw)
    fake.add("answer one")
    editor: Editor = make_editor(env=FAST)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "question one"})
    (found,) = await wait_summaries(workspace, home, session_id, count=1)
    await editor.stop()
    assert not found.data.fallback  # the model's own summary, its line break kept
    assert found.data.summary == "The user asked one question.\nIt was answered."


async def test_the_summary_is_incremental(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add("answer one", "answer two", "answer three")
    fake.add_summary(
        structured("S1: asked about ALPHA.", []),
        structured("S2: asked about ALPHA and BETA.", []),
        structured("S3: ALPHA, BETA, GAMMA.", []),
    )
    editor: Editor = make_editor(env=FAST)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    for n, word in enumerate(("ALPHA", "BETA", "GAMMA"), start=1):
        await editor.request("agentAssist/chat", {"text": f"tell me about {word}"})
        await wait_summaries(workspace, home, session_id, count=n)
    third = json.dumps(fake.summary_requests[2].body["messages"])
    assert "S2: asked about ALPHA and BETA." in third and "GAMMA" in third
    assert "tell me about ALPHA" not in third  # only the turns since the last summary
    assert fake.requests and all("running summary" not in json.dumps(r.body) for r in fake.requests)
    await editor.stop()


async def test_a_slow_summariser_never_delays_a_reply_or_an_exit(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add("first answer", "second answer")
    fake.add_summary({"hang": "still thinking"}, {"hang": "thinking again"})
    editor: Editor = make_editor(env=FAST)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "one"})
    assert fake.wait_hanging(20)  # the summary request is in flight and stays there
    reply = await editor.request("agentAssist/chat", {"text": "two"})
    assert reply["text"] == "second answer"
    await wait_for(lambda: fake.disconnects == 1)  # the chat took its place: closed
    await wait_for(lambda: len(fake.summary_requests) == 2 and fake.wait_hanging(0))
    assert "two" in json.dumps(fake.summary_requests[1].body)  # asked again, after the turn
    await editor.request("agentAssist/save")
    assert fake.wait_hanging(0) and summaries(workspace, home, session_id) == []
    await editor.stop()  # does not wait for the summary
    assert editor.process.returncode == 0
    context = await resumed_context(make_editor)
    assert "## Previous Session Summary" in context and "one" in context and "two" in context


async def test_a_chat_takes_the_place_of_a_summary_on_a_single_slot_server(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    """As with llama.cpp's `--parallel 1`: a summary being written would hold the chat."""
    fake.slots = 1
    fake.add("first answer", "second answer")
    fake.add_summary({"hang": "summarising"}, structured("We spoke of one and two.", []))
    editor: Editor = make_editor(env=FAST)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "one"})
    assert fake.wait_hanging(20)  # the summary holds the server's only slot
    chat = editor.request("agentAssist/chat", {"text": "two"})
    reply = await asyncio.wait_for(chat, 20)  # without giving way: until the summary ends
    assert reply["text"] == "second answer" and fake.disconnects == 1
    (summary,) = await wait_summaries(workspace, home, session_id, count=1)
    assert summary.data.summary == "We spoke of one and two."
    asked = json.dumps(fake.summary_requests[-1].body["messages"])
    assert "one" in asked and "two" in asked  # the turn the chat ran is covered too
    # Streamed: a server stops generating when a stream's client leaves, not always
    # when one waiting for an answer in one piece does (llama-cpp-python).
    assert all(r.body.get("stream") is True for r in fake.summary_requests)
    await editor.stop()


async def test_a_compaction_asked_for_takes_the_place_of_a_summary(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.slots = 1
    fake.add("first answer", "second answer")
    fake.add_summary(structured("We spoke of one.", []), {"hang": "summarising"})
    editor: Editor = make_editor(env=FAST)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "one"})
    await wait_summaries(workspace, home, session_id, count=1)
    await editor.request("agentAssist/chat", {"text": "two"})
    assert fake.wait_hanging(20)  # the second summary holds the only slot
    compacted = await asyncio.wait_for(editor.request("agentAssist/compact", {}), 20)
    assert compacted["compacted"] is True and fake.disconnects == 1
    await editor.stop()


async def test_metadata_persistence_keeps_no_summary(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add("an answer")
    options = {"instanceId": "meta", "persistence": "metadata"}
    editor: Editor = make_editor(env=FAST, options=dict(options))
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "a secret plan"})
    await asyncio.sleep(0.5)
    await editor.stop()
    assert summaries(workspace, home, session_id) == [] and fake.summary_requests == []
    context = await resumed_context(make_editor, options=dict(options))
    assert "summary not kept: metadata-only persistence" in context
    assert "a secret plan" not in context


@pytest.mark.local_store
async def test_metadata_mode_belongs_to_the_session(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add("noted the plan")
    first: Editor = make_editor(options={"instanceId": "meta", "persistence": "metadata"})
    await first.start()
    session_id = (await first.ready())["sessionId"]
    await first.request("agentAssist/chat", {"text": "SECRET-PLAN-42 is the launch code"})
    await first.stop()
    # A later server configured for full persistence resumes it: the session keeps its mode.
    second: Editor = make_editor(options={"instanceId": "meta", "persistence": "full"})
    await second.start()
    assert (await second.ready())["sessionId"] == session_id
    context = (await second.request("agentAssist/resume"))["context"]
    assert "summary not kept: metadata-only persistence" in context
    assert "earlier messages were not kept" in context
    fake.add("ok")
    await second.request("agentAssist/chat", {"text": "ANOTHER-SECRET-7 continues"})
    sent = json.dumps(fake.messages(-1))
    assert "not persisted" not in sent and "SECRET-PLAN-42" not in sent  # no placeholders
    assert "ANOTHER-SECRET-7" in sent  # this process's own turn is there, in memory
    status = await second.request("agentAssist/status")
    assert status["persistence"] == "metadata"
    warned = [m.message for m in second.client.messages]
    assert any("keeps metadata persistence" in m for m in warned), warned
    await second.stop()
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"SECRET-PLAN-42" not in data and b"ANOTHER-SECRET-7" not in data, path


@pytest.mark.local_store
async def test_resume_says_what_the_model_was_given_and_what_changed(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    spec_before = (workspace / "agent_spec.md").read_text()
    fake.add("first answer")
    fake.add_summary(structured("We designed the reply templates.", ["Keep replies short."]))
    editor: Editor = make_editor(env=FAST)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    fresh = await editor.request("agentAssist/resume")
    assert fresh == {
        "sessionId": session_id,
        "context": "",
        "origin": None,
        "lastActive": None,
        "summary": None,
        "decisions": [],
        "changedFiles": [],
    }
    await editor.request("agentAssist/chat", {"text": "design the templates"})
    await wait_summaries(workspace, home, session_id, count=1)
    saved = await editor.request("agentAssist/save")  # keeps a copy of agent_spec.md
    await editor.stop()
    (workspace / "agent_spec.md").write_text("# Support agent, edited by hand\n")
    (workspace / "templates" / "new.txt").write_text("new template\n")

    editor = make_editor(env=FAST)
    await editor.start()
    assert (await editor.ready())["reason"] == "resumed"
    resumed = await editor.request("agentAssist/resume")
    assert resumed["origin"] == "resumed"
    assert resumed["summary"] == "We designed the reply templates."
    assert resumed["decisions"] == ["Keep replies short."]
    assert resumed["summary"] in resumed["context"]
    assert "- Keep replies short." in resumed["context"]
    assert resumed["lastActive"] is not None
    assert resumed["changedFiles"] == [
        {"path": "agent_spec.md", "change": "modified", "checkpoint": saved["checkpoint"]},
        {"path": "templates/new.txt", "change": "created", "checkpoint": None},
    ]
    copy = await editor.request("agentAssist/checkpointFile", {"path": "agent_spec.md"})
    assert copy == {"path": "agent_spec.md", "number": saved["checkpoint"], "text": spec_before}
    missing = await editor.request("agentAssist/checkpointFile", {"path": "templates/new.txt"})
    assert (
        missing["text"] is None
        and missing["number"] is None
        and "no checkpoint" in missing["reason"]
    )

    log = stored(workspace, home).layout.log_path(session_id)
    log_before = log.read_bytes()
    plan = await editor.request(
        "agentAssist/checkpoint", {"number": saved["checkpoint"], "dryRun": True}
    )
    assert plan["dryRun"] is True
    assert plan["restoredFiles"] == ["agent_spec.md"] and plan["createdFiles"] == [
        "templates/new.txt"
    ]
    assert (workspace / "agent_spec.md").read_text() == "# Support agent, edited by hand\n"
    assert log.read_bytes() == log_before  # a dry run records nothing
    assert editor.notifications["agentAssist/sessionChanged"][-1]["reason"] == "resumed"

    await editor.request("agentAssist/new")
    after_new = await editor.request("agentAssist/resume")
    assert after_new["origin"] is None and after_new["summary"] is None
    await editor.request("agentAssist/open", {"sessionId": session_id})
    opened = await editor.request("agentAssist/resume")
    assert opened["origin"] == "opened" and opened["summary"] == "We designed the reply templates."
    await editor.stop()


async def test_a_fork_shows_what_it_carries(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add("first answer")
    fake.add_summary(structured("We chose the schema.", ["Use PostgreSQL."]))
    editor: Editor = make_editor(env=FAST)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "pick a database"})
    await wait_summaries(workspace, home, session_id, count=1)
    forked = await editor.request("agentAssist/fork", {})
    resume = await editor.request("agentAssist/resume")
    assert forked["parentSessionId"] == session_id
    assert resume["origin"] == "forked" and resume["context"] == ""
    assert resume["summary"] == "We chose the schema." and resume["decisions"] == [
        "Use PostgreSQL."
    ]
    assert resume["lastActive"] is None and resume["changedFiles"] == []
    await editor.stop()
