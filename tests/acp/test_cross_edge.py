"""One session, any edge: written over ACP, continued over LSP (`agent-assist serve`), and back."""

from __future__ import annotations

from pathlib import Path

from acp import text_block

from lsp_server.fake_model import FakeOpenAI
from session.events import TurnStartEvent
from tests.acp.harness import texts
from tests.e2e.harness import Editor

KEY = "sk-test-KEY-0123456789abcdef"


async def test_a_session_goes_from_acp_to_lsp_and_back(
    start, stored, store_env: dict[str, str], workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    async with start() as zed:
        await zed.initialize("zed")
        fake.add("answered in Zed")
        sid = (await zed.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await zed.conn.prompt(session_id=sid, prompt=[text_block("asked in Zed")])
        await zed.conn.close_session(session_id=sid)

        options = {
            "instanceId": "vscode-window",
            "autoResume": "never",
            "model": {"name": "test-model", "baseUrl": fake.base_url, "apiKey": KEY},
        }
        editor = Editor(workspace, home, options=options, env=store_env)
        await editor.start()
        try:
            await editor.ready()
            await editor.request("agentAssist/open", {"sessionId": sid})
            fake.add("answered in VS Code")
            reply = await editor.request("agentAssist/chat", {"text": "asked in VS Code"})
            assert reply["sessionId"] == sid
        finally:
            await editor.stop()
        users = [m["content"] for m in fake.messages() if m["role"] == "user"]
        assert users == ["asked in Zed", "asked in VS Code"]  # the history went over

        zed.client.clear()
        await zed.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        told = zed.client.of(sid)
        assert texts(told, "user_message_chunk") == ["asked in Zed", "asked in VS Code"]
        assert texts(told, "agent_message_chunk") == ["answered in Zed", "answered in VS Code"]

    starts = [e for e in stored().read_events(sid).events if isinstance(e, TurnStartEvent)]
    assert [(e.data.edge, e.data.client) for e in starts] == [
        ("acp", "zed"),
        ("lsp", "Test Editor"),
    ]
