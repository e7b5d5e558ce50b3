"""What a generic client sees of a chat: `$/progress`, and `async` chats that end in turnEnded."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor, shown, stored
from .test_lifecycle import changed_event

REPLY = "A first line of the reply.\nAnd its last line, shown in the status bar."
SLOW = {"text": "a slow reply in many small pieces " * 4, "chunk": 4, "delay": 0.03}


async def started(make_editor: Any) -> Editor:
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    return editor


def assert_reply_progress(reports: list[Any], turn: int) -> None:
    """Begin "Agent Assist", reports ending with the reply's last line, a summary at the end."""
    begin, *middle, end = reports
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.title == "Agent Assist"
    assert isinstance(end, types.WorkDoneProgressEnd)
    assert end.message == f"turn {turn} done (15 words)"
    messages = [r.message for r in middle if isinstance(r, types.WorkDoneProgressReport)]
    assert messages[-1] == "And its last line, shown in the status bar."
    assert messages[0] == f"turn {turn}: waiting for the model"
    assert messages[1] == "A firs"  # the last line so far, as it streamed
    assert all(m is not None and len(m) <= 160 for m in messages)


async def test_a_chat_with_a_work_done_token_reports_the_reply_as_progress(
    make_editor: Any, fake: FakeOpenAI
) -> None:
    fake.add({"text": REPLY, "chunk": 6})
    editor = await started(make_editor)
    editor.client.progress_reports["chat-1"] = []  # the client's own token
    reply = await editor.request("agentAssist/chat", {"text": "hi", "workDoneToken": "chat-1"})
    assert reply["text"] == REPLY
    assert_reply_progress(editor.client.progress_reports["chat-1"], reply["turn"])


async def test_a_chat_sent_as_a_command_reports_on_a_token_the_server_creates(
    make_editor: Any, fake: FakeOpenAI
) -> None:
    fake.add({"text": REPLY, "chunk": 6})
    editor = await started(make_editor)
    assert editor.client.progress_reports == {}
    reply = await editor.command("agentAssist.chat", {"text": "hi"})
    assert reply["text"] == REPLY
    (reports,) = editor.client.progress_reports.values()  # created with workDoneProgress/create
    assert_reply_progress(reports, reply["turn"])


async def test_an_async_chat_answers_at_once_and_ends_in_turn_ended(
    make_editor: Any, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add(SLOW)
    editor = await started(make_editor)
    answer = await editor.request("agentAssist/chat", {"text": "go", "async": True})
    assert answer == {"sessionId": answer["sessionId"], "turn": 1, "status": "started"}
    assert editor.notifications["agentAssist/turnEnded"] == []  # the reply is still streaming
    ended = await editor.wait_for("agentAssist/turnEnded")
    assert ended["sessionId"] == answer["sessionId"] and ended["turn"] == 1
    assert ended["endReason"] == "completed" and ended["error"] is None
    assert ended["text"] == SLOW["text"] == editor.deltas()
    assert ended["usage"]["requests"] == 1
    events = stored(workspace, home).read_events(answer["sessionId"]).events
    ends = [e for e in events if e.type == "turn/end"]
    assert [e.data.reason for e in ends] == ["completed"]  # recorded as any chat


async def test_an_async_chat_that_fails_says_why_in_turn_ended(
    make_editor: Any, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add({"error": 500, "message": "do not repeat", "retry": False})
    editor = await started(make_editor)
    answer = await editor.request("agentAssist/chat", {"text": "go", "async": True})
    ended = await editor.wait_for("agentAssist/turnEnded")
    assert ended["turn"] == answer["turn"] == 1 and ended["endReason"] == "error"
    assert "do not repeat" in ended["error"] and ended["usage"] is None
    events = stored(workspace, home).read_events(answer["sessionId"]).events
    assert [e.data.reason for e in events if e.type == "turn/end"] == ["error"]
    fake.add("after the failure")
    reply = await editor.request("agentAssist/chat", {"text": "again"})
    assert reply["text"] == "after the failure" and reply["turn"] == 2


async def test_a_second_async_chat_queues_behind_the_running_one(
    make_editor: Any, fake: FakeOpenAI
) -> None:
    fake.add(SLOW, "second reply")
    editor = await started(make_editor)
    first = await editor.request("agentAssist/chat", {"text": "one", "async": True})
    second = await editor.request("agentAssist/chat", {"text": "two", "async": True})
    assert (first["status"], first["turn"]) == ("started", 1)
    assert (second["status"], second["turn"]) == ("queued", None)
    status = await editor.request("agentAssist/status")
    assert status["state"] == "running" and status["waiting"] == 1
    await editor.wait_for("agentAssist/turnEnded", count=2)
    ends = editor.notifications["agentAssist/turnEnded"]
    assert [(e["turn"], e["text"]) for e in ends] == [(1, SLOW["text"]), (2, "second reply")]
    starts = editor.notifications["agentAssist/turnStarted"]
    assert [(s["turn"], s["text"]) for s in starts] == [(1, "one"), (2, "two")]
    await asyncio.sleep(0)
    assert (await editor.request("agentAssist/status"))["state"] == "idle"


@pytest.mark.parametrize("client_name", ["vscode"])  # it lets the server register watchers
@pytest.mark.parametrize("drift_messages", [True, False])
async def test_live_drift_is_shown_as_a_message_unless_the_client_opts_out(
    make_editor: Any, workspace: Path, drift_messages: bool
) -> None:
    options = {"instanceId": "test-window", "driftMessages": drift_messages}
    editor: Editor = make_editor(options=options)
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/status")  # the watcher registration came before this
    spec = workspace / "agent_spec.md"
    spec.write_text("# Support agent\nchanged by the user\n")
    editor.client.workspace_did_change_watched_files(changed_event(spec))
    drift = await editor.wait_for("agentAssist/drift")
    assert drift["source"] == "watcher" and drift["messageShown"] is drift_messages
    told = [m for m in shown(editor) if "agent_spec.md: modified" in m]
    expected = ["Files changed outside the assistant: agent_spec.md: modified"]
    assert told == (expected if drift_messages else [])


async def test_an_async_chat_without_a_token_reports_progress_whose_cancel_stops_it(
    make_editor: Any, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add(SLOW)
    editor = await started(make_editor)
    answer = await editor.request("agentAssist/chat", {"text": "go", "async": True})
    (token,) = editor.client.progress_reports  # created with workDoneProgress/create
    await editor.wait_for("agentAssist/chatDelta", count=3)
    editor.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token))
    ended = await editor.wait_for("agentAssist/turnEnded")
    assert (ended["turn"], ended["endReason"], ended["error"]) == (answer["turn"], "aborted", None)
    assert ended["text"] == editor.deltas() and 0 < len(ended["text"]) < len(SLOW["text"])
    reports = editor.client.progress_reports[token]
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == "stopped"
    history = await editor.request("agentAssist/history")
    last = history["items"][-1]
    assert (last["text"], last["partial"], last["endReason"]) == (ended["text"], True, "aborted")
    events = stored(workspace, home).read_events(answer["sessionId"]).events
    assert [e.data.reason for e in events if e.type == "turn/end"] == ["aborted"]


async def test_an_async_chat_that_fails_mid_reply_sends_what_was_kept_of_it(
    make_editor: Any, fake: FakeOpenAI
) -> None:
    fake.add({"cut": "first try "}, {"cut": "second try "}, {"cut": "third try, also cut"})
    editor = await started(make_editor)
    await editor.request("agentAssist/chat", {"text": "go", "async": True})
    ended = await editor.wait_for("agentAssist/turnEnded")
    assert ended["endReason"] == "error" and "incomplete" in ended["error"]
    assert ended["text"] == "third try, also cut"  # the retried attempts' text is dropped
    last = (await editor.request("agentAssist/history"))["items"][-1]
    assert (last["text"], last["partial"]) == (ended["text"], True)


async def test_cancel_stops_the_running_turn_for_clients_without_progress(
    make_editor: Any, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add(SLOW, SLOW, "third reply")
    editor = await started(make_editor)
    assert await editor.request("agentAssist/cancel") == {"stopped": False, "turn": None}
    await editor.request("agentAssist/chat", {"text": "one", "async": True})
    await editor.wait_for("agentAssist/chatDelta", count=2)
    assert await editor.request("agentAssist/cancel", {"turn": 2}) == {
        "stopped": False,
        "turn": None,
    }
    assert await editor.request("agentAssist/cancel", {"turn": 1}) == {"stopped": True, "turn": 1}
    (ended,) = editor.notifications["agentAssist/turnEnded"]  # sent before the answer
    assert ended["endReason"] == "aborted" and ended["text"] == editor.deltas()
    assert (await editor.request("agentAssist/status"))["state"] == "idle"
    # A plain chat request is stopped too: it is answered RequestCancelled.
    _, pending = editor.start_request("agentAssist/chat", {"text": "two"})
    await editor.wait_for("agentAssist/turnStarted", count=2)
    # Its reply is streaming (the model got the request: the slow reply is not left queued).
    streamed = len(editor.notifications["agentAssist/chatDelta"])
    await editor.wait_for("agentAssist/chatDelta", count=streamed + 1)
    assert await editor.command("agentAssist.cancel", {}) == {"stopped": True, "turn": 2}
    with pytest.raises(JsonRpcException) as info:
        await pending
    assert info.value.code == -32800
    reply = await editor.request("agentAssist/chat", {"text": "three"})
    assert reply["text"] == "third reply" and reply["turn"] == 3
    events = stored(workspace, home).read_events(reply["sessionId"]).events
    ends = [e.data.reason for e in events if e.type == "turn/end"]
    assert ends == ["aborted", "aborted", "completed"]
