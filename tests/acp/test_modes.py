"""The seed's phases as session modes: offered, set by the client, set by the model."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError, text_block

from lsp_server.fake_model import FakeOpenAI
from tests.acp.harness import Running


async def test_modes_are_offered_set_by_the_client_and_kept(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    made = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    assert made.modes is not None
    assert made.modes.current_mode_id == "none"
    assert [m.id for m in made.modes.available_modes] == ["none", "design", "code", "deploy"]
    sid = made.session_id
    await agent.conn.set_session_mode(session_id=sid, mode_id="code")
    with pytest.raises(RequestError) as refused:
        await agent.conn.set_session_mode(session_id=sid, mode_id="party")
    assert refused.value.code == -32602
    await agent.conn.close_session(session_id=sid)
    loaded = await agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
    assert loaded.modes is not None and loaded.modes.current_mode_id == "code"


async def test_the_models_phase_is_told_as_the_current_mode(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    call = {"name": "set_phase", "arguments": {"phase": "design"}, "id": "p1"}
    fake.add({"tool_calls": [call]}, "we are designing")
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    await agent.conn.prompt(session_id=sid, prompt=[text_block("let us plan")])
    changed = [u for u in agent.client.of(sid) if u.session_update == "current_mode_update"]
    assert [u.current_mode_id for u in changed] == ["design"]
