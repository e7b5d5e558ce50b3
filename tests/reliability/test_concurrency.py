"""Several servers on one project at once, and a save during a streaming reply."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_server.fake_model import FakeOpenAI
from session.derive.history import build_history
from session.local.manager import SessionManager

from ..e2e.harness import Editor
from .conftest import FIGURES, model_options, register_store

TURNS = 3


def check_logs(workspace: Path, home: Path) -> dict[str, list[str]]:
    """Every log: valid JSON lines with dense seq; return each session's turn inputs."""
    manager = SessionManager(workspace, home=home)
    inputs: dict[str, list[str]] = {}
    for session_id in manager.layout.session_ids():
        lines = manager.layout.log_path(session_id).read_bytes().splitlines()
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


def _changed(path: Path) -> types.DidChangeWatchedFilesParams:
    uri = from_fs_path(str(path)) or ""
    return types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=uri, type=types.FileChangeType.Changed)]
    )


@pytest.mark.parametrize("client", ["vscode", "neovim"])
async def test_chat_while_the_watcher_fires(tmp_path: Path, client: str) -> None:
    """Files change on disk all through streaming replies: client-side watcher events
    (VS Code) or the server's own watcher (Neovim). The drift events land between whole
    lines, every turn completes, and the log replays to the history the server held."""
    workspace = tmp_path / "project"
    (workspace / "templates").mkdir(parents=True)
    spec = workspace / "agent_spec.md"
    spec.write_text("# spec\n")
    templates = [workspace / "templates" / f"t{n}.txt" for n in range(5)]
    for path in templates:
        path.write_text("v0\n")
    home = register_store(tmp_path / "store")
    with FakeOpenAI() as fake:
        editor = Editor(
            workspace,
            home,
            client=client,
            options={"instanceId": "w", "model": model_options(fake)},
        )
        await editor.start()
        try:
            session_id = (await editor.ready())["sessionId"]
            await asyncio.sleep(0.5)  # the server-side watcher arms itself
            stop = asyncio.Event()

            async def edit_files() -> int:
                edits = 0
                while not stop.is_set():
                    path = [spec, *templates][edits % (len(templates) + 1)]
                    path.write_text(f"edit {edits}\n")
                    if client == "vscode":
                        editor.client.workspace_did_change_watched_files(_changed(path))
                    edits += 1
                    await asyncio.sleep(0.01)
                return edits

            editing = asyncio.ensure_future(edit_files())
            texts = [f"question {n} while files change" for n in range(1, TURNS + 3)]
            for text in texts:
                fake.add({"text": f"a streamed answer to {text} " * 4, "chunk": 7, "delay": 0.01})
                reply = await editor.request("agentAssist/chat", {"text": text})
                assert reply["endReason"] == "completed"
            stop.set()
            edits = await editing
            await asyncio.sleep(0.3)  # the last watcher events
            drift = editor.notifications["agentAssist/drift"]
            assert drift and all(d["source"] == "watcher" for d in drift)
            assert "[workspace notice]" in json.dumps(fake.messages(-1))
            held = await editor.request("agentAssist/history")
        finally:
            await editor.stop()
    inputs = check_logs(workspace, home)
    assert inputs[session_id] == texts
    manager = SessionManager(workspace, home=home)
    scan = manager.read_events(session_id)
    assert any(e.type == "workspace/drift" for e in scan.events)
    reopened = manager.open_session(session_id)
    try:
        assert reopened.state.turns == len(texts) and reopened.open_turn is None
        replayed = build_history(scan.events).messages()
        assert reopened.history.messages() == replayed  # snapshot + tail == full replay
    finally:
        reopened.close()
    users = [i["text"] for i in held["items"] if i["role"] == "user"]
    assert users == texts
    FIGURES["concurrency.watcher_turns"] += len(texts)
    FIGURES["concurrency.watcher_file_edits"] += edits
    FIGURES["concurrency.watcher_drift_notifications"] += len(drift)
