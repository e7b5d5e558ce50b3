"""The reverse way: a session started over LSP, a checkpoint restored there, loaded over ACP."""

from __future__ import annotations

import json
from pathlib import Path

from acp import text_block

from lsp_server.fake_model import FakeOpenAI
from session.events import TurnStartEvent
from tests.acp.harness import texts
from tests.e2e.harness import Editor

KEY = "sk-test-KEY-0123456789abcdef"
WRITE = {"name": "write_file", "arguments": {"path": "agent_spec.md", "content": "# v2\n"}}
REWRITE = {"tool_calls": [WRITE]}


async def test_a_session_rewound_over_lsp_loads_over_acp_without_its_undone_turns(
    start, stored, store_env: dict[str, str], workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    original = (workspace / "agent_spec.md").read_text()
    options = {
        "instanceId": "vscode-window",
        "autoResume": "never",
        "model": {"name": "test-model", "baseUrl": fake.base_url, "apiKey": KEY},
    }
    editor = Editor(workspace, home, options=options, env=store_env)
    await editor.start()
    try:
        await editor.ready()
        fake.add("first answer")
        sid = (await editor.request("agentAssist/chat", {"text": "first question"}))["sessionId"]
        saved = await editor.request("agentAssist/save")
        fake.add(REWRITE, "rewrote the spec")
        await editor.request("agentAssist/chat", {"text": "second question: rewrite the spec"})
        assert (workspace / "agent_spec.md").read_text() == "# v2\n"
        await editor.request("agentAssist/checkpoint", {"number": saved["checkpoint"]})
        assert (workspace / "agent_spec.md").read_text() == original
        fake.add("third answer")
        third = await editor.request("agentAssist/chat", {"text": "third question"})
        assert third["turn"] == 3
    finally:
        await editor.stop()

    async with start() as zed:
        await zed.initialize("zed")
        await zed.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        told = zed.client.of(sid)
        assert texts(told, "user_message_chunk") == ["first question", "third question"]
        assert texts(told, "agent_message_chunk") == ["first answer", "third answer"]
        assert not [u for u in told if u.session_update == "tool_call"]  # turn 2's write: undone
        fake.add("fourth answer")
        await zed.conn.prompt(session_id=sid, prompt=[text_block("fourth question")])
        sent = json.dumps(fake.messages(-1))
        assert "first question" in sent and "third question" in sent
        assert "second question" not in sent  # the undone turn is not the model's history

    starts = [e for e in stored().read_events(sid).events if isinstance(e, TurnStartEvent)]
    assert [(e.turn, e.data.edge) for e in starts] == [
        (1, "lsp"),
        (2, "lsp"),
        (3, "lsp"),
        (4, "acp"),
    ]
    assert starts[-1].data.client == "zed"
