"""Several servers on one project at once, and a save during a streaming reply."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from lsp_server.fake_openai import FakeOpenAI
from session.manager import SessionManager

from ..e2e.harness import Editor
from .conftest import FIGURES, model_options, register_store

TURNS = 3


def check_logs(workspace: Path, home: Path) -> dict[str, list[str]]:
    """Every log: valid JSON lines with dense seq; return each session's turn inputs."""
    manager = SessionManager(workspace, home=home)
    inputs: dict[str, list[str]] = {}
    for session_id in manager.session_ids():
        lines = manager.log_path(session_id).read_bytes().splitlines()
        records = [json.loads(line) for line in lines]
        assert [r["seq"] for r in records] == list(range(len(records))), session_id
        inputs[session_id] = [r["data"]["input"] for r in records if r["type"] == "turn/start"]
    return inputs


@pytest.mark.parametrize("instances", [("w1", "w2"), ("w1", "w1"), ("w1", "w1", "w2", "w2")])
async def test_servers_chatting_at_once_never_mix_logs(
    tmp_path: Path, instances: tuple[str, ...]
) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "agent_spec.md").write_text("# spec\n")
    home = register_store(tmp_path / "store")
    with FakeOpenAI() as fake:  # default reply: "Echo: <last user message>"
        editors = [
            Editor(workspace, home, options={"instanceId": name, "model": model_options(fake)})
            for name in instances
        ]
        try:
            await asyncio.gather(*(e.start() for e in editors))
            sessions = [(await e.ready())["sessionId"] for e in editors]
            assert len(set(sessions)) == len(editors)  # never two writers on one log

            async def chat(index: int, editor: Editor) -> list[str]:
                texts = [f"editor {index} turn {n}" for n in range(1, TURNS + 1)]
                for text in texts:
                    reply = await editor.request("agentAssist/chat", {"text": text})
                    assert reply["text"] == f"Echo: {text}" and reply["endReason"] == "completed"
                    assert reply["sessionId"] == sessions[index]
                return texts

            expected = await asyncio.gather(*(chat(i, e) for i, e in enumerate(editors)))
        finally:
            for editor in editors:
                await editor.stop()
    inputs = check_logs(workspace, home)
    for session_id, texts in zip(sessions, expected, strict=True):
        assert inputs[session_id] == texts  # no lost turns, none in another log
    manager = SessionManager(workspace, home=home)
    for name in set(instances):
        pointed = manager.read_pointer(name)
        owners = [s for s, n in zip(sessions, instances, strict=True) if n == name]
        assert pointed in owners  # each instance resumes one of its own sessions
    FIGURES["concurrency.servers"] += len(editors)
    FIGURES["concurrency.turns"] += len(editors) * TURNS


async def test_save_during_a_streaming_reply(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    home = register_store(tmp_path / "store")
    with FakeOpenAI() as fake:
        fake.add({"text": "a slow streamed answer " * 6, "chunk": 5, "delay": 0.03})
        editor = Editor(workspace, home, options={"instanceId": "w", "model": model_options(fake)})
        try:
            await editor.start()
            session_id = (await editor.ready())["sessionId"]
            _, pending = editor.start_request("agentAssist/chat", {"text": "stream please"})
            await editor.wait_for("agentAssist/chatDelta", count=2)
            saved = await editor.request("agentAssist/save")
            reply = await pending
            assert reply["endReason"] == "completed"
            snapshot = json.loads(Path(saved["path"]).read_text())
            assert snapshot["session_id"] == session_id  # a consistent snapshot mid-turn
            after = await editor.request("agentAssist/chat", {"text": "next"})
            assert after["turn"] == 2
        finally:
            await editor.stop()
    inputs = check_logs(workspace, home)
    assert inputs[session_id] == ["stream please", "next"]
    reopened = SessionManager(workspace, home=home).open_session(session_id)
    assert not reopened.read_only and reopened.state.turns == 2
    reopened.close()
