"""The client goes away (stdin closed, SIGTERM, SIGHUP): sessions saved, the process ends."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
from acp import text_block

from lsp_server.fake_model import FakeOpenAI
from session.store.manager import SessionManager
from tests.acp.harness import Running


async def two_sessions(agent: Running, workspace: Path, fake: FakeOpenAI) -> list[str]:
    ids = []
    for said in ("one", "two"):
        fake.add(f"answer {said}")
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await agent.conn.prompt(session_id=sid, prompt=[text_block(said)])
        ids.append(sid)
    return ids


def saved(workspace: Path, home: Path, sid: str) -> int:
    state, _ = SessionManager(workspace, home=home).read_snapshot(sid)
    assert state is not None
    return state.turns


async def test_stdin_closed_saves_every_session_and_ends(
    start, workspace: Path, home: Path, fake: FakeOpenAI
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
    assert [saved(workspace, home, sid) for sid in ids] == [2, 1]
    assert SessionManager(workspace, home=home).held_locks(ids) == set()
    assert SessionManager(workspace, home=home).last_turn_end(ids[0]) == "aborted"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
async def test_a_signal_saves_every_session_and_ends(
    start, workspace: Path, home: Path, fake: FakeOpenAI, signum: signal.Signals
) -> None:
    async with start() as agent:
        await agent.initialize()
        ids = await two_sessions(agent, workspace, fake)
        agent.process.send_signal(signum)
        code = await asyncio.wait_for(agent.process.wait(), 10)
    assert code == 0
    assert [saved(workspace, home, sid) for sid in ids] == [1, 1]
    assert SessionManager(workspace, home=home).held_locks(ids) == set()
