"""`/new`, `/sessions`, `/checkpoint [N]`, `/fork`, `/reset`: run without the model, asked first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import RequestError, text_block

from lsp_server.fake_model import FakeOpenAI
from tests.acp.harness import Running, texts
from tests.acp.test_commands import say

WRITE = {"name": "write_file", "arguments": {"path": "agent_spec.md", "content": "# v2\n"}}


async def started(agent: Running, workspace: Path, fake: FakeOpenAI, question: str) -> str:
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    fake.add(f"answer to {question}")
    await agent.conn.prompt(session_id=sid, prompt=[text_block(question)])
    return sid


async def test_all_commands_are_offered_and_new_says_how(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    await agent.client.until(
        lambda c: any(u.session_update == "available_commands_update" for u in c.of(sid))
    )
    offered = next(
        u for u in agent.client.of(sid) if u.session_update == "available_commands_update"
    )
    names = [c.name for c in offered.available_commands]
    assert names[4:] == ["new", "sessions", "checkpoint", "fork", "reset"]
    told = await say(agent, sid, "/new")
    assert "new thread" in told and str(workspace.resolve()) in told
    listed = await agent.conn.list_sessions(cwd=str(workspace))
    assert [s.session_id for s in listed.sessions] == [sid]  # nothing was created
    assert fake.requests == [] and agent.client.asked == []


async def test_sessions_lists_the_projects_sessions(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    older = await started(agent, workspace, fake, "the older question")
    newer = await started(agent, workspace, fake, "the newer question")
    requests = len(fake.requests)
    told = await say(agent, newer, "/sessions")
    lines = told.splitlines()
    assert "(2)" in lines[0]
    assert lines[1].startswith("- the newer question · 1 turns · last active ")
    assert lines[1].endswith(f"· {newer} (this one)")
    assert lines[2].endswith(f"· {older}")
    assert len(fake.requests) == requests


async def test_checkpoint_lists_and_restores_only_when_allowed(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    original = (workspace / "agent_spec.md").read_text()
    sid = await started(agent, workspace, fake, "first question")
    assert "no checkpoint yet" in await say(agent, sid, "/checkpoint")
    assert "checkpoint 1" in await say(agent, sid, "/save")
    fake.add({"tool_calls": [WRITE]}, "rewrote the spec")
    await agent.conn.prompt(session_id=sid, prompt=[text_block("second: rewrite the spec")])
    assert (workspace / "agent_spec.md").read_text() == "# v2\n"
    listing = await say(agent, sid, "/checkpoint")
    assert "- 1: " in listing and "- 2: After turn 2" in listing
    assert "no checkpoint 9" in await say(agent, sid, "/checkpoint 9")

    agent.client.answer = "reject"
    asked = len(agent.client.asked)
    assert "not restored" in await say(agent, sid, "/checkpoint 1")
    question = agent.client.asked[asked]
    assert question.title.startswith("Restore checkpoint 1") and question.kind == "edit"
    assert [c.path for c in question.content] == [str(workspace.resolve() / "agent_spec.md")]
    assert question.content[0].new_text == original
    assert (workspace / "agent_spec.md").read_text() == "# v2\n"  # a refusal changes nothing
    agent.client.answer = None  # a dismissed question is a refusal too
    assert "not restored" in await say(agent, sid, "/checkpoint 1")

    agent.client.answer = "allow"
    told = await say(agent, sid, "/checkpoint 1")
    assert "Restored checkpoint 1: agent_spec.md" in told and "turn 1" in told
    assert (workspace / "agent_spec.md").read_text() == original
    fake.add("third answer")
    await agent.conn.prompt(session_id=sid, prompt=[text_block("third question")])
    sent = json.dumps(fake.messages(-1))
    assert "first question" in sent and "second: rewrite" not in sent  # turn 2 undone

    agent.client.clear()
    await agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
    replayed = texts(agent.client.of(sid), "user_message_chunk")
    assert replayed == ["first question", "third question"]  # the undone turn left out


async def test_fork_tells_the_new_session_which_loads_with_the_parents_turns(
    start, workspace: Path, fake: FakeOpenAI
) -> None:
    async with start() as agent:
        await agent.initialize()
        parent = await started(agent, workspace, fake, "the parent's question")
        told = await say(agent, parent, "/fork")
        assert told.startswith(f"Forked session {parent} into ") and "(1 turns)" in told
        child = told.split(" into ", 1)[1].split(" ", 1)[0]
        assert child != parent
    async with start() as again:  # the fork is in the store, not held by the first process
        await again.initialize()
        await again.conn.load_session(cwd=str(workspace), session_id=child, mcp_servers=[])
        assert texts(again.client.of(child), "user_message_chunk") == ["the parent's question"]


async def test_reset_needs_a_yes_and_then_starts_a_fresh_session(
    agent: Running, workspace: Path, fake: FakeOpenAI, stored
) -> None:
    sid = await started(agent, workspace, fake, "to be reset")
    agent.client.answer = "reject"
    assert "Reset cancelled" in await say(agent, sid, "/reset")
    question = agent.client.asked[-1]
    assert question.kind == "delete" and sid in question.title
    assert stored().exists(sid) and (workspace / "agent_spec.md").exists()
    assert "1 turns" in await say(agent, sid, "/status")  # still the same session

    agent.client.answer = "delete-files"
    told = await say(agent, sid, "/reset")
    assert told.startswith(f"Session {sid} was deleted; a fresh session ")
    assert "Deleted agent_spec.md" in told and not (workspace / "agent_spec.md").exists()
    fresh = told.split("a fresh session ", 1)[1].split(" ", 1)[0]
    assert not stored().exists(sid)
    with pytest.raises(RequestError) as gone:
        await agent.conn.prompt(session_id=sid, prompt=[text_block("more")])
    assert "not open" in str(gone.value)
    await agent.conn.load_session(cwd=str(workspace), session_id=fresh, mcp_servers=[])
    assert f"Session {fresh} · 0 turns" in await say(agent, fresh, "/status")
