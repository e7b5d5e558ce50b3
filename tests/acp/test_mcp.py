"""The client's MCP servers (`mcpServers`): their tools offered to the model and recorded."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp.schema import EnvVariable, McpServerStdio

from lsp_server.fake_model import FakeOpenAI
from tests.acp.harness import Running, texts

SERVER = str(Path(__file__).resolve().parents[1] / "unit" / "mcp_fixture_server.py")


def fixture(name: str = "fx") -> McpServerStdio:
    return McpServerStdio(name=name, command=sys.executable, args=[SERVER], env=[])


async def test_a_client_mcp_servers_tool_is_offered_called_and_recorded(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    fake.add(
        {"tool_calls": [{"name": "fx_echo", "arguments": {"text": "hi"}, "id": "m1"}]},
        "it echoed",
    )
    made = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[fixture()])
    sid = made.session_id
    answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("use the echo")])
    assert answer.stop_reason == "end_turn"
    offered = [t["function"]["name"] for t in fake.requests[0].body.get("tools", [])]
    assert "fx_echo" in offered
    told = agent.client.of(sid)
    call = next(u for u in told if u.session_update == "tool_call")
    assert (call.title, call.kind) == ("fx_echo", "other")
    ended = next(u for u in told if u.session_update == "tool_call_update")
    assert ended.status == "completed"
    result = [m for m in fake.messages() if m["role"] == "tool"][-1]
    assert "echo: hi" in result["content"]
    assert "".join(texts(told, "agent_message_chunk")) == "it echoed"


async def test_a_server_that_crashes_mid_call_costs_a_tool_error_not_the_turn(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    fake.add(
        {"tool_calls": [{"name": "fx_crash", "arguments": {}, "id": "m1"}]},
        "the tool failed",
    )
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[fixture()])).session_id
    answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("crash it")])
    assert answer.stop_reason == "end_turn"
    ended = next(u for u in agent.client.of(sid) if u.session_update == "tool_call_update")
    assert ended.status == "failed"


async def test_a_bad_server_list_is_invalid_params(agent: Running, workspace: Path) -> None:
    twins = [fixture("same"), fixture("same")]
    with pytest.raises(RequestError) as refused:
        await agent.conn.new_session(cwd=str(workspace), mcp_servers=twins)
    assert refused.value.code == -32602
    assert "mcpServers" in str(refused.value)
    env = [EnvVariable(name="MCP_FIXTURE_NOTES", value=str(workspace / "notes.txt"))]
    ok = McpServerStdio(name="fx", command=sys.executable, args=[SERVER], env=env)
    assert (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[ok])).session_id
