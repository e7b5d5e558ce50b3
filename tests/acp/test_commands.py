"""Our commands in the editor's command menu, run from a prompt without asking the model."""

from __future__ import annotations

from pathlib import Path

from acp import text_block

from lsp_server.fake_model import FakeOpenAI
from tests.acp.harness import Running, texts


async def say(agent: Running, sid: str, text: str) -> str:
    before = len(texts(agent.client.of(sid), "agent_message_chunk"))
    answer = await agent.conn.prompt(session_id=sid, prompt=[text_block(text)])
    assert answer.stop_reason == "end_turn"
    return "".join(texts(agent.client.of(sid), "agent_message_chunk")[before:])


async def test_commands_are_offered_and_run_without_the_model(
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
    assert names[:4] == ["save", "compact", "search", "status"]  # the rest: test_commands_more

    fake.add("the loader reads YAML")
    await agent.conn.prompt(session_id=sid, prompt=[text_block("how does the loader work?")])
    requests = len(fake.requests)
    assert "checkpoint 1" in await say(agent, sid, "/save")
    assert f"Session {sid} · 1 turns" in await say(agent, sid, "/status")
    assert "Nothing to compact" in await say(agent, sid, "/compact")
    found = await say(agent, sid, "/search loader")
    assert sid in found and "[loader]" in found.lower()
    assert len(fake.requests) == requests  # none of them asked the model
