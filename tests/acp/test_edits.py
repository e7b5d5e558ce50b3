"""The model's edits over ACP: written as an `edit` tool call; a protected path asked first."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import text_block

from lsp_server.fake_model import FakeOpenAI
from tests.acp.harness import Running


def write(path: str, content: str) -> dict[str, object]:
    call = {"name": "write_file", "arguments": {"path": path, "content": content}, "id": "w1"}
    return {"tool_calls": [call]}


async def test_an_edit_is_an_edit_tool_call_and_written(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    fake.add(write("notes.md", "hello\n"), "written")
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    await agent.conn.prompt(session_id=sid, prompt=[text_block("write notes")])
    call = next(u for u in agent.client.of(sid) if u.session_update == "tool_call")
    assert (call.kind, call.locations[0].path) == ("edit", str(workspace / "notes.md"))
    assert (workspace / "notes.md").read_text() == "hello\n"
    assert agent.client.asked == []  # an ordinary file is not asked about


@pytest.mark.parametrize("allow", [True, False])
async def test_a_protected_path_is_asked_and_a_refusal_writes_nothing(
    agent: Running, workspace: Path, fake: FakeOpenAI, allow: bool
) -> None:
    agent.client.allow = allow
    fake.add(write(".envrc", "export X=1\n"), "done")
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("set up direnv")])
    assert answer.stop_reason == "end_turn"
    assert len(agent.client.asked) == 1
    assert ".envrc" in agent.client.asked[0].title
    assert (workspace / ".envrc").exists() is allow
