"""What a client nobody here wrote meets: settings changed live, no instanceId of its own."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from engine.config import derived_instance_id
from lsp_server.fake_model import FakeOpenAI
from lsp_server.fake_model.replies import is_summary_request
from session.local.manager import SessionManager

from .harness import REPO, Editor, server_env, shown

MakeEditor = Callable[..., Editor]
VSCODE_ONLY = pytest.mark.parametrize("client_name", ["vscode"])
SECOND_KEY = "sk-second-KEY-fedcba9876543210"


def initialize_as(editor: Editor, *, process_id: int | None = None, pull: bool = True) -> None:
    """Make the editor's `initialize` name another editor process, or not offer pulls."""
    original = editor.client.initialize_session

    async def initialize(params: types.InitializeParams) -> types.InitializeResult:
        if process_id is not None:
            params.process_id = process_id
        if not pull and params.capabilities.workspace is not None:
            params.capabilities.workspace.configuration = None
        return await original(params)

    setattr(editor.client, "initialize_session", initialize)  # noqa: B010


def chat_requests(fake: FakeOpenAI) -> list[Any]:
    """The model requests of turns (the running summary's left out)."""
    return [r for r in fake.requests if not is_summary_request(r.body)]


async def status_model(editor: Editor, name: str, timeout: float = 10) -> None:
    """Wait until `agentAssist/status` names the model `name`."""

    async def poll() -> None:
        while (await editor.request("agentAssist/status"))["model"] != name:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout)


@pytest.mark.parametrize("pull", [True, False], ids=["pulled", "sent"])
async def test_changed_settings_switch_the_model_for_the_next_turn(
    make_editor: MakeEditor, fake: FakeOpenAI, pull: bool
) -> None:
    editor = make_editor()
    initialize_as(editor, pull=pull)
    await editor.start()
    await editor.ready()
    fake.add("first answer")
    await editor.request("agentAssist/chat", {"text": "first"})
    assert chat_requests(fake)[-1].body["model"] == "test-model"

    changes = {"model": {"name": "second-model", "apiKey": SECOND_KEY}, "compactAt": 5}
    if pull:  # the notification carries nothing: only what the server asks for is used
        editor.client.set_configuration(changes, section="agentAssist")
        sent: Any = None
    else:
        sent = {"agentAssist": changes}
    editor.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=sent)
    )
    await status_model(editor, "second-model")

    fake.add("second answer")
    reply = await editor.request("agentAssist/chat", {"text": "second"})
    assert reply["endReason"] == "completed" and reply["turn"] == 2
    request = chat_requests(fake)[-1]
    assert request.body["model"] == "second-model"
    # the base URL and other options stay as initialize gave them; the key is the new one
    assert SECOND_KEY in request.headers.get("authorization", "")
    assert any("compactAt 5 is invalid" in t for t in shown(editor)), shown(editor)
    logged = [m.message for m in editor.client.log_messages]
    assert not [m for m in logged if "unknown method" in m.lower()], logged

    # The user removes the setting: the model is initialize's again (the section is whole).
    if pull:
        editor.client.set_configuration({}, section="agentAssist")
    else:
        sent = {"agentAssist": {}}
    editor.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=sent)
    )
    await status_model(editor, "test-model")
    fake.add("third answer")
    await editor.request("agentAssist/chat", {"text": "third"})
    request = chat_requests(fake)[-1]
    assert request.body["model"] == "test-model"
    assert SECOND_KEY not in request.headers.get("authorization", "")
    await editor.stop()


@VSCODE_ONLY
async def test_instance_and_store_do_not_change_live(
    make_editor: MakeEditor, fake: FakeOpenAI
) -> None:
    editor = make_editor()
    initialize_as(editor, pull=False)
    await editor.start()
    first = await editor.ready()
    settings = {"instanceId": "another-window", "model": {"name": "second-model"}}
    editor.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=settings)
    )
    await status_model(editor, "second-model")
    assert any("instanceId changed" in t and "restarted" in t for t in shown(editor))
    status = await editor.request("agentAssist/status")
    assert status["sessionId"] == first["sessionId"]
    await editor.stop()


@pytest.fixture
async def editor_processes() -> AsyncIterator[Callable[[], Any]]:
    """Start stand-ins for editor processes (their pids are what `initialize` names)."""
    started: list[asyncio.subprocess.Process] = []

    async def spawn() -> int:
        process = await asyncio.create_subprocess_exec("sleep", "600")
        started.append(process)
        return process.pid

    yield spawn
    for process in started:
        process.kill()
        await process.wait()


async def launch(make_editor: MakeEditor, process_id: int) -> tuple[Editor, dict[str, Any]]:
    """Start an editor that sends no instanceId, as process `process_id`."""
    editor = make_editor(options={})
    initialize_as(editor, process_id=process_id)
    await editor.start()
    return editor, await editor.ready()


async def test_editors_without_instance_ids_get_a_session_each_and_find_them_again(
    make_editor: MakeEditor, fake: FakeOpenAI, editor_processes: Callable[[], Any]
) -> None:
    first_a, first_b = await editor_processes(), await editor_processes()
    a, a_changed = await launch(make_editor, first_a)
    b, b_changed = await launch(make_editor, first_b)
    a_id, b_id = a_changed["sessionId"], b_changed["sessionId"]
    assert a_id != b_id
    assert (a_changed["reason"], b_changed["reason"]) == ("new", "new")
    assert not [t for t in shown(b) if "in use" in t], shown(b)
    for editor, text in ((a, "from A"), (b, "from B")):
        fake.add(f"reply to {text}")
        reply = await editor.request("agentAssist/chat", {"text": text})
        assert reply["endReason"] == "completed"
    await a.stop()
    await b.stop()

    # The server restarted in the same editors: each resumes its own session.
    a, a_changed = await launch(make_editor, first_a)
    b, b_changed = await launch(make_editor, first_b)
    assert (a_changed["sessionId"], a_changed["reason"]) == (a_id, "resumed")
    assert (b_changed["sessionId"], b_changed["reason"]) == (b_id, "resumed")
    await a.stop()
    await b.stop()

    # Both editors restarted (new processes): each is offered a session nobody holds.
    a, a_changed = await launch(make_editor, await editor_processes())
    b, b_changed = await launch(make_editor, await editor_processes())
    assert (a_changed["reason"], b_changed["reason"]) == ("resumed", "resumed")
    assert {a_changed["sessionId"], b_changed["sessionId"]} == {a_id, b_id}
    assert [len(a.questions), len(b.questions)] == [1, 1]
    assert not [t for t in shown(a) + shown(b) if "in use" in t]
    await a.stop()
    await b.stop()


async def run_cli(home: Path, *args: str) -> Any:
    """Run `agent-assist ARGS` (with --json) on the test's store; return what it printed."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lsp_server.cli",
        *args,
        env=server_env(home),
        cwd=str(REPO),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    assert process.returncode == 0, out
    return json.loads(out)


async def gone_process() -> int:
    """Return the pid of a process that ran and is gone (reaped: no zombie answers for it)."""
    process = await asyncio.create_subprocess_exec("true")
    await process.wait()
    return process.pid


def write_pointer(sessions: Path, instance: str, session_id: str, **recorded: Any) -> Path:
    """Write a pointer file as the server does (with what it records of the editor)."""
    path = sessions / f"active_{instance}.json"
    path.write_text(
        json.dumps({"sessionId": session_id, "updatedAt": "2026-01-01T00:00:00Z"} | recorded)
    )
    return path


@pytest.mark.local_store
async def test_pointers_of_editors_that_are_gone_are_removed_at_start_and_by_prune(
    make_editor: MakeEditor,
    fake: FakeOpenAI,
    workspace: Path,
    home: Path,
    editor_processes: Callable[[], Any],
) -> None:
    ended = await asyncio.create_subprocess_exec("sleep", "600")  # editor A, to be closed
    live_b = await editor_processes()
    a, _ = await launch(make_editor, ended.pid)
    b, _ = await launch(make_editor, live_b)
    for editor in (a, b):
        fake.add("hello")
        await editor.request("agentAssist/chat", {"text": "hi"})
    a_id = (await a.request("agentAssist/status"))["sessionId"]
    await a.stop()
    await b.stop()
    ended.kill()
    await ended.wait()
    sessions = SessionManager(workspace, home=home).layout.sessions_dir

    def pointer(pid: int, client: str = "Test Editor") -> Path:
        return sessions / f"active_{derived_instance_id(client, pid)}.json"

    assert pointer(ended.pid).exists() and pointer(live_b).exists()
    assert json.loads(pointer(live_b).read_text())["processId"] == live_b
    dead = await gone_process()
    other = write_pointer(
        sessions, derived_instance_id("Other", dead), a_id, client="Other", processId=dead
    )
    named = write_pointer(sessions, "my-window-1", a_id)  # a user's instanceId: no record

    logs = set(sessions.glob("*.events.jsonl"))
    assert len(logs) == 2
    # A new launch of the same editor removes the pointer of A's, whose process is gone.
    c_pid = await editor_processes()
    c, _ = await launch(make_editor, c_pid)
    assert not pointer(ended.pid).exists()
    assert pointer(live_b).exists() and pointer(c_pid).exists()  # their editors still run
    assert other.exists() and named.exists()  # another editor's, and one not derived
    assert logs <= set(sessions.glob("*.events.jsonl"))  # only a pointer went

    # `sessions prune` removes any editor's stale pointers: Other's, not C's (running).
    args = ["sessions", "prune", "--older-than", "90d", "--workspace", str(workspace), "--json"]
    dry = await run_cli(home, *args, "--dry-run")
    assert dry["stalePointers"] == [derived_instance_id("Other", dead)]
    assert other.exists()
    report = await run_cli(home, *args)
    assert report["removedPointers"] == [str(other)] and report["deleted"] == []
    assert not other.exists() and named.exists() and pointer(c_pid).exists()
    assert pointer(live_b).exists()
    await c.stop()
