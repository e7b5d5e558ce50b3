"""The session methods over ACP, and the same sessions seen by the other edges."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from acp import RequestError, text_block

from lsp_server.fake_model import FakeOpenAI
from session.events import TurnStartEvent
from session.lifecycle import SessionLifecycle
from tests.acp.harness import Running, agent_env, texts


async def one_turn(
    agent: Running, workspace: Path, fake: FakeOpenAI, said: str, answer: str
) -> str:
    fake.add(answer)
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    await agent.conn.prompt(session_id=sid, prompt=[text_block(said)])
    return sid


async def test_a_new_session_is_listed_with_its_project_then_its_title(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    listed = await agent.conn.list_sessions(cwd=str(workspace))
    assert [(s.session_id, s.cwd) for s in listed.sessions] == [(sid, str(workspace.resolve()))]
    fake.add("sure")
    await agent.conn.prompt(session_id=sid, prompt=[text_block("Fix the loader")])
    row = (await agent.conn.list_sessions(cwd=str(workspace))).sessions[0]
    assert row.title == "Fix the loader"
    assert row.updated_at is not None
    assert listed.next_cursor is None


async def test_load_replays_the_conversation_in_order_in_another_process(
    start, workspace: Path, fake: FakeOpenAI
) -> None:
    async with start() as first:
        await first.initialize()
        sid = await one_turn(first, workspace, fake, "first question", "first answer")
        fake.add("second answer")
        await first.conn.prompt(session_id=sid, prompt=[text_block("second question")])
    async with start() as second:
        await second.initialize()
        await second.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        # Everything arrived before the answer to session/load.
        said = ("user_message_chunk", "agent_message_chunk")
        kinds = [
            (u.session_update, u.content.text)
            for u in second.client.of(sid)
            if u.session_update in said
        ]
        assert kinds == [
            ("user_message_chunk", "first question"),
            ("agent_message_chunk", "first answer"),
            ("user_message_chunk", "second question"),
            ("agent_message_chunk", "second answer"),
        ]
        fake.add("third answer")
        answer = await second.conn.prompt(session_id=sid, prompt=[text_block("third")])
        assert answer.stop_reason == "end_turn"
        history = [m["content"] for m in fake.messages() if m["role"] == "user"]
        assert history == ["first question", "second question", "third"]


async def test_resume_replays_nothing_and_the_model_gets_the_resume_block(
    start, workspace: Path, fake: FakeOpenAI
) -> None:
    async with start() as first:
        await first.initialize()
        sid = await one_turn(first, workspace, fake, "remember the loader", "noted")
    (workspace / "agent_spec.md").write_text("# Support agent\nfour tools now\n")
    async with start() as second:
        await second.initialize()
        await second.conn.resume_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        told = second.client.of(sid)
        assert texts(told, "user_message_chunk") == []
        assert "modified: agent_spec.md" in "".join(texts(told, "agent_message_chunk"))
        fake.add("continuing")
        await second.conn.prompt(session_id=sid, prompt=[text_block("go on")])
        assert "Previous Session Summary" in fake.system_text()


async def test_load_tells_the_drift_since_the_last_save_after_the_replay(
    start, workspace: Path, fake: FakeOpenAI
) -> None:
    async with start() as first:
        await first.initialize()
        sid = await one_turn(first, workspace, fake, "q", "a")
    (workspace / "templates" / "reply.txt").unlink()
    async with start() as second:
        await second.initialize()
        await second.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        told = second.client.of(sid)
        assert told[-1].session_update == "available_commands_update"
        assert told[-2].session_update == "agent_message_chunk"
        assert "deleted: templates/reply.txt" in told[-2].content.text


async def test_close_saves_and_lets_go(
    agent: Running, stored, workspace: Path, fake: FakeOpenAI
) -> None:
    sid = await one_turn(agent, workspace, fake, "q", "a")
    store = stored()
    assert store.held_locks([sid]) == {sid}
    await agent.conn.close_session(session_id=sid)
    assert store.held_locks([sid]) == set()
    state, _ = store.read_snapshot(sid)
    assert state is not None and state.turns == 1
    with pytest.raises(RequestError) as refused:
        await agent.conn.prompt(session_id=sid, prompt=[text_block("more")])
    assert refused.value.code == -32602
    assert "not open" in str(refused.value)
    await agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])


async def test_delete_removes_a_session_and_is_refused_while_another_process_holds_it(
    start, workspace: Path, fake: FakeOpenAI
) -> None:
    async with start() as first, start() as second:
        await first.initialize()
        await second.initialize()
        kept = await one_turn(first, workspace, fake, "keep me", "ok")
        gone = await one_turn(first, workspace, fake, "delete me", "ok")
        await first.conn.close_session(session_id=gone)
        await second.conn.list_sessions(cwd=str(workspace))  # the project, named
        with pytest.raises(RequestError) as refused:
            await second.raw("session/delete", {"sessionId": kept})
        assert "in use" in str(refused.value)
        with pytest.raises(RequestError) as held:
            await second.conn.load_session(cwd=str(workspace), session_id=kept, mcp_servers=[])
        assert "in use" in str(held.value)
        assert await second.raw("session/delete", {"sessionId": gone}) == {}
        listed = await second.conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [kept]


async def test_fork_starts_a_new_session_with_the_parents_closed_turns(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    parent = await one_turn(agent, workspace, fake, "the parent's question", "its answer")
    child = (
        await agent.conn.fork_session(cwd=str(workspace), session_id=parent, mcp_servers=[])
    ).session_id
    assert child != parent
    fake.add("the child's answer")
    await agent.conn.prompt(session_id=child, prompt=[text_block("in the child")])
    users = [m["content"] for m in fake.messages() if m["role"] == "user"]
    assert users == ["the parent's question", "in the child"]
    ids = {s.session_id for s in (await agent.conn.list_sessions(cwd=str(workspace))).sessions}
    assert {parent, child} <= ids


async def test_a_session_written_by_another_edge_is_listed_and_loaded(
    agent: Running, stored, workspace: Path
) -> None:
    def write() -> str:
        lifecycle = SessionLifecycle(stored(), "vscode-window")
        recorder = lifecycle.begin_turn("asked in VS Code")
        recorder.chunk("answered in VS Code")
        recorder.end("completed")
        sid = lifecycle.session_id
        lifecycle.close()
        return sid

    sid = await asyncio.to_thread(write)
    listed = await agent.conn.list_sessions(cwd=str(workspace))
    assert sid in [s.session_id for s in listed.sessions]
    await agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
    told = agent.client.of(sid)
    assert texts(told, "user_message_chunk") == ["asked in VS Code"]
    assert texts(told, "agent_message_chunk")[0] == "answered in VS Code"


async def test_a_session_written_over_acp_is_listed_by_the_command_line(
    agent: Running, stored, store_env: dict[str, str], workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    sid = await one_turn(agent, workspace, fake, "from Zed", "hello Zed")
    await agent.conn.close_session(session_id=sid)
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "lsp_server.cli", "sessions", "list", "--json"],
        cwd=workspace,
        env=agent_env(home, store_env),
        capture_output=True,
        check=True,
    )
    rows = json.loads(done.stdout)["sessions"]
    row = next(r for r in rows if r["sessionId"] == sid)
    assert (row["title"], row["turns"], row["inUse"]) == ("from Zed", 1, False)
    events = stored().read_events(sid).events
    start = next(e for e in events if isinstance(e, TurnStartEvent))
    assert (start.data.edge, start.data.client) == ("acp", "acp-test")
