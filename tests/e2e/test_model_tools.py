"""A model server that takes no tools for the model: the chat carries on without them.

Ollama answers a request with tools for a model whose template has none with HTTP 400
("... does not support tools"); llama-server started without `--jinja` with HTTP 500;
vLLM without `--enable-auto-tool-choice` with HTTP 400. Each is scripted into the loopback
model and driven through the real server and the real OpenAI client.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor, stored
from .test_lifecycle import shown
from .test_summary import wait_summaries

pytestmark = pytest.mark.parametrize("client_name", ["vscode"])


def refusal_warnings(editor: Editor) -> list[str]:
    return [m for m in shown(editor) if "takes no tools for this model" in m]


def system_text(messages: list[dict[str, Any]]) -> str:
    return " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")


@pytest.mark.parametrize("style", ["ollama", "llama-server", "vllm"])
async def test_a_model_without_tools_is_chatted_with_without_them(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path, style: str
) -> None:
    fake.no_tools = style
    fake.add("answer 1", "answer 2")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "question 1"})
    assert reply["text"] == "answer 1" and reply["endReason"] == "completed"
    (warning,) = refusal_warnings(editor)
    assert "cannot read or write workspace files" in warning
    first, second = fake.requests[0].body, fake.requests[1].body
    assert first.get("tools") and not second.get("tools")  # refused, then asked without
    assert "you have no tools" in system_text(second["messages"])
    assert "Use the tools" not in system_text(second["messages"])
    events = stored(workspace, home).read_events(reply["sessionId"]).events
    assert [e.data.kind for e in events if e.type == "step/retry"] == ["no-tools"]
    again = await editor.request("agentAssist/chat", {"text": "question 2"})
    assert again["text"] == "answer 2" and len(fake.requests) == 3  # no refusal this time
    assert not fake.requests[2].body.get("tools") and len(refusal_warnings(editor)) == 1
    await editor.stop()


async def test_the_summary_of_a_model_without_tools_is_asked_for_as_json_text(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.no_tools = "ollama"
    editor: Editor = make_editor(env={"AGENT_ASSIST_SUMMARY_DELAY": "0.05"})
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "plan the storage layer"})
    (summary,) = await wait_summaries(workspace, home, session_id, count=1)
    # The model's own summary (the fake's default: the user's requests), not the fallback.
    assert summary.data.summary.startswith("Running summary: the user asked")
    # The chat found the tools refused first: the summary is asked without them at once.
    assert [bool(r.body.get("tools")) for r in fake.summary_requests] == [False]
    await editor.stop()
