"""The client goes away (stdin closed, SIGTERM, SIGHUP): sessions saved, the process ends."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
from acp import text_block

from lsp_server.fake_model import FakeOpenAI
from session.store.backend import SessionStore
from tests.acp.harness import Running, texts


async def two_sessions(agent: Running, workspace: Path, fake: FakeOpenAI) -> list[str]:
    ids = []
    for said in ("one", "two"):
        fake.add(f"answer {said}")
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await agent.conn.prompt(session_id=sid, prompt=[text_block(said)])
        ids.append(sid)
    return ids


def saved(store: SessionStore, sid: str) -> int:
    state, _ = store.read_snapshot(sid)
    assert state is not None
    return state.turns


async def test_stdin_closed_saves_every_session_and_ends(
    start, stored, workspace: Path, fake: FakeOpenAI
) -> None:
    async with start() as agent:
        await agent.initialize()
        ids = await two_sessions(agent, workspace, fake)
        fake.add({"hang": "half an answer"})
        hanging = asyncio.ensure_future(
            agent.conn.prompt(session_id=ids[0], prompt=[text_block("three")])
        )
        await agent.client.until(lambda c: "half an answer" in str(c.updates[-1][1]))
        assert agent.process.stdin is not None
        agent.process.stdin.close()
        code = await asyncio.wait_for(agent.process.wait(), 10)
        fake.release()
        hanging.cancel()
    assert code == 0
    store = stored()
    assert [saved(store, sid) for sid in ids] == [2, 1]
    assert store.held_locks(ids) == set()
    assert store.last_turn_end(ids[0]) == "aborted"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
async def test_a_signal_saves_every_session_and_ends(
    start, stored, workspace: Path, fake: FakeOpenAI, signum: signal.Signals
) -> None:
    async with start() as agent:
        await agent.initialize()
        ids = await two_sessions(agent, workspace, fake)
        agent.process.send_signal(signum)
        code = await asyncio.wait_for(agent.process.wait(), 10)
    assert code == 0
    store = stored()
    assert [saved(store, sid) for sid in ids] == [1, 1]
    assert store.held_locks(ids) == set()


async def test_an_agent_killed_mid_turn_leaves_it_interrupted_and_the_next_load_says_so(
    start, store_env: dict[str, str], workspace: Path, fake: FakeOpenAI
) -> None:
    async with start() as first:
        await first.initialize()
        fake.add("the first answer")
        sid = (await first.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await first.conn.prompt(session_id=sid, prompt=[text_block("one")])
        fake.add({"hang": "half of the second"})
        hanging = asyncio.ensure_future(
            first.conn.prompt(session_id=sid, prompt=[text_block("two")])
        )
        await first.client.until(lambda c: "half of the second" in str(c.updates[-1][1]))
        first.process.kill()
        await first.process.wait()
        fake.release()
        hanging.cancel()
    async with start() as second:
        await second.initialize()
        await second.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        told = second.client.of(sid)
        assert texts(told, "user_message_chunk") == ["one", "two"]
        replayed = "".join(texts(told, "agent_message_chunk"))
        if (
            not store_env
        ):  # the local log has the chunks it was handed (PostgreSQL's writer batches)
            assert "half of the" in replayed
        assert "turn 2 was interrupted" in replayed
        fake.add("the third answer")
        answer = await second.conn.prompt(session_id=sid, prompt=[text_block("three")])
        assert answer.stop_reason == "end_turn"
        users = [m["content"] for m in fake.messages() if m["role"] == "user"]
        assert users[-1] == "three" and "one" in users
