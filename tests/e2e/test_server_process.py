"""The server process: autosave on every way out, no stdout noise, lazy pydantic-ai."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI

from .harness import REPO, Editor, stored


def snapshot(workspace: Path, home: Path, session_id: str) -> dict:
    path = stored(workspace, home).layout.snapshot_path(session_id)
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.local_store
@pytest.mark.parametrize("client_name", ["vscode"])
@pytest.mark.parametrize("how", ["sigterm", "sigint", "eof"])
async def test_autosave_on_signals_and_end_of_input(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path, how: str
) -> None:
    fake.add("saved by the exit path")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "remember me"})
    assert snapshot(workspace, home, reply["sessionId"]) == {}  # nothing saved yet
    process = editor.process
    if how == "eof":
        assert process.stdin is not None
        process.stdin.close()
    else:
        process.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
    await asyncio.wait_for(process.wait(), 20)
    await editor.client.stop()
    saved = snapshot(workspace, home, reply["sessionId"])
    assert saved["turns"] == 1
    assert saved["recent_messages"][-1]["parts"][0]["content"] == "saved by the exit path"


@pytest.mark.parametrize("client_name", ["neovim"])
async def test_server_side_watcher_reports_drift_when_client_cannot_watch(
    make_editor, fake: FakeOpenAI, workspace: Path
) -> None:
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    assert editor.registrations == []  # Neovim's capabilities: no dynamic watchers
    # The watcher says nothing when it is armed: edit until it reports an edit (one made before
    # it was armed goes unseen), rather than hoping a fixed pause was long enough.
    drift: dict[str, Any] | None = None
    for attempt in range(30):
        (workspace / "agent_spec.md").write_text(f"# edited in another program ({attempt})\n")
        try:
            drift = await editor.wait_for("agentAssist/drift", timeout=1)
            break
        except TimeoutError:
            continue
    assert drift is not None, "the server-side watcher reported no edit in 30 s"
    assert drift["source"] == "watcher" and drift["modified"] == ["agent_spec.md"]
    fake.add("noted")
    await editor.request("agentAssist/chat", {"text": "continue"})
    assert "agent_spec.md: modified" in json.dumps(fake.messages(-1))


def test_nothing_on_stdout_and_no_pydantic_ai_at_start() -> None:
    code = (
        "import sys, lsp_server.cli, lsp_server.server, lsp_server.features;"
        "print('pydantic_ai' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"
    version = subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", "--version"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.startswith("agent-assist ")
