"""The editor's buffers: the model reads unsaved text, and its own saved edits are not drift."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_server.fake_model import FakeOpenAI
from session.events import EVENT_ADAPTER, DriftEvent

from .harness import Editor, stored

REPLY = "templates/reply.txt"
WRITTEN = "Dear {name},\nThank you for writing.\n"


def write_reply(fake: FakeOpenAI) -> None:
    """Script a turn in which the model writes `REPLY`."""
    fake.add(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": REPLY, "content": WRITTEN}}]},
        "written",
    )


def tool_results(messages: list[dict[str, Any]]) -> list[str]:
    """Return the contents of the tool messages of a model request."""
    return [str(m.get("content")) for m in messages if m.get("role") == "tool"]


async def wrote_unsaved(make_editor: Any, fake: FakeOpenAI, workspace: Path) -> Editor:
    """Start a buffering editor and have the model write `REPLY`; the edit stays unsaved."""
    write_reply(fake)
    editor: Editor = make_editor(buffered=True)
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "thank them"})
    assert (workspace / REPLY).read_text() == "Dear {name},\n"  # not saved yet
    return editor


async def test_the_next_turn_reads_the_unsaved_text(
    make_editor: Any, fake: FakeOpenAI, workspace: Path
) -> None:
    editor = await wrote_unsaved(make_editor, fake, workspace)
    assert editor.result is not None
    sync = editor.result.capabilities.text_document_sync
    kind = sync.change if isinstance(sync, types.TextDocumentSyncOptions) else sync
    assert kind == types.TextDocumentSyncKind.Incremental
    fake.add({"tool_calls": [{"name": "read_file", "arguments": {"path": REPLY}}]}, "read")
    await editor.request("agentAssist/chat", {"text": "show it"})
    assert tool_results(fake.messages(-1))[-1] == WRITTEN  # after the write's result


async def test_a_read_before_the_editor_reports_the_edit_sees_it(
    make_editor: Any, fake: FakeOpenAI, workspace: Path
) -> None:
    """The client accepted the edit but sends its `didChange` later (eglot: an idle timer)."""
    editor: Editor = make_editor(buffered=True)
    await editor.start()
    await editor.ready()
    editor.open(REPLY)
    editor.hold_changes = True
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": REPLY}}]}
    write_reply(fake)
    fake.add(read, "read")
    await editor.request("agentAssist/chat", {"text": "thank them"})
    await editor.request("agentAssist/chat", {"text": "show it"})
    assert editor.held  # the editor has not said a word about the edit yet
    assert tool_results(fake.messages(-1))[-1] == WRITTEN
    editor.send_held_changes()
    editor.type_line(REPLY, 1, "Thanks!")  # the user goes on typing: the buffer is the truth
    fake.add(read, "read")
    await editor.request("agentAssist/chat", {"text": "and now?"})
    assert tool_results(fake.messages(-1))[-1] == "Dear {name},\nThanks!\n"


async def test_saving_the_assistants_edit_is_not_drift(
    make_editor: Any, fake: FakeOpenAI, workspace: Path
) -> None:
    editor = await wrote_unsaved(make_editor, fake, workspace)
    editor.save(REPLY)
    status = await editor.request("agentAssist/status")  # after the watcher's event
    assert status["drift"] == 0
    assert editor.notifications["agentAssist/drift"] == []
    fake.add("fine")
    await editor.request("agentAssist/chat", {"text": "anything new?"})
    assert "[workspace notice]" not in json.dumps(fake.messages(-1))
    assert editor.notifications["agentAssist/drift"] == []


async def test_a_user_change_before_the_save_is_named_as_such(
    make_editor: Any, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    editor = await wrote_unsaved(make_editor, fake, workspace)
    editor.type_line(REPLY, 1, "Thanks a lot for writing.")
    editor.save(REPLY)
    drift = await editor.wait_for("agentAssist/drift")
    assert drift["source"] == "watcher" and drift["modified"] == [REPLY]
    assert drift["afterAssistantEdit"] == [REPLY]
    status = await editor.request("agentAssist/status")
    assert status["drift"] == 1
    fake.add("noted")
    await editor.request("agentAssist/chat", {"text": "anything new?"})
    sent = json.dumps(fake.messages(-1))
    assert "[workspace notice]" in sent
    assert f"{REPLY}: changed by the user after your edit" in sent
    events = stored(workspace, home).read_events(status["sessionId"]).events
    (logged,) = [e for e in events if isinstance(e, DriftEvent)]
    assert logged.data.modified == logged.data.after_assistant_edit == [REPLY]


def test_a_drift_event_logged_before_after_assistant_edit_still_reads() -> None:
    old = {"seq": 3, "ts": "2026-01-01T00:00:00Z", "type": "workspace/drift"}
    old["data"] = {"source": "watcher", "modified": ["a"], "deleted": [], "created": []}
    event = EVENT_ADAPTER.validate_python(old)
    assert isinstance(event, DriftEvent) and event.data.after_assistant_edit == []


def deleted(editor: Editor, relative: str) -> None:
    """Delete a workspace file and send the watcher's `Deleted`, as an editor does."""
    path = editor.workspace / relative
    path.unlink()
    uri = from_fs_path(str(path)) or ""
    editor.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            [types.FileEvent(uri=uri, type=types.FileChangeType.Deleted)]
        )
    )


@pytest.mark.parametrize("saved", [True, False], ids=["saved", "unsaved"])
async def test_a_file_the_assistant_wrote_then_the_user_deleted_is_plainly_deleted(
    make_editor: Any, fake: FakeOpenAI, workspace: Path, home: Path, saved: bool
) -> None:
    """Saved or not, the assistant's write does not make the user's deletion its "edit"."""
    editor = await wrote_unsaved(make_editor, fake, workspace)
    if saved:
        editor.save(REPLY)
        await editor.request("agentAssist/status")  # the save is no drift
        assert editor.notifications["agentAssist/drift"] == []
    deleted(editor, REPLY)
    drift = await editor.wait_for("agentAssist/drift")
    assert (drift["deleted"], drift["modified"], drift["afterAssistantEdit"]) == ([REPLY], [], [])
    status = await editor.request("agentAssist/status")
    assert status["drift"] == 1
    fake.add("noted")
    await editor.request("agentAssist/chat", {"text": "anything new?"})
    sent = json.dumps(fake.messages(-1))
    assert f"- {REPLY}: deleted" in sent and "after your edit" not in sent
    events = stored(workspace, home).read_events(status["sessionId"]).events
    (logged,) = [e for e in events if isinstance(e, DriftEvent)]
    assert (logged.data.deleted, logged.data.after_assistant_edit) == ([REPLY], [])


async def test_a_tracked_file_open_with_unsaved_changes_is_told_after_resume(
    make_editor: Any, fake: FakeOpenAI, workspace: Path
) -> None:
    fake.add("first")
    first: Editor = make_editor()
    await first.start()
    await first.ready()
    await first.request("agentAssist/chat", {"text": "hello"})
    await first.stop()
    editor: Editor = make_editor(buffered=True)
    await editor.start()
    await editor.ready()
    editor.open("agent_spec.md")  # as on disk: nothing to say
    editor.open(REPLY, "Dear {name},\nkept unsaved across the restart\n")
    fake.add({"tool_calls": [{"name": "read_file", "arguments": {"path": REPLY}}]}, "seen")
    await editor.request("agentAssist/chat", {"text": "go on"})
    first_request = json.dumps(fake.messages(-2))
    assert "open in the editor with unsaved changes:\\n- templates/reply.txt\\n" in first_request
    assert "agent_spec.md" not in first_request.split("unsaved changes")[1]
    assert "kept unsaved" in tool_results(fake.messages(-1))[-1]
    fake.add("again")
    await editor.request("agentAssist/chat", {"text": "and now?"})
    assert "unsaved changes" not in json.dumps(fake.messages(-1)[-1])  # told once


NEW = "templates/new.txt"


@pytest.mark.parametrize("client_name", ["vscode"])  # it takes CreateFile in an edit
@pytest.mark.parametrize("seen", ["before", "after"])
async def test_the_empty_file_an_editor_creates_for_the_assistants_new_file_is_not_drift(
    make_editor: Any, fake: FakeOpenAI, workspace: Path, seen: str
) -> None:
    """The watcher reports the empty file before the edit is answered, or during the turn."""
    write = {"name": "write_file", "arguments": {"path": NEW, "content": WRITTEN}}
    fake.add({"tool_calls": [write]}, {"hang": "written"})
    editor: Editor = make_editor(buffered=True, watch_creates=seen == "before")
    await editor.start()
    await editor.ready()
    _, pending = editor.start_request("agentAssist/chat", {"text": "create it"})
    await editor.wait_for("agentAssist/toolCall", count=2)  # write_file done
    assert (workspace / NEW).read_text() == ""  # created empty, the text in the buffer
    if seen == "after":
        editor.watched(from_fs_path(str(workspace / NEW)) or "", types.FileChangeType.Created)
    assert (await editor.request("agentAssist/status"))["drift"] == 0  # during the turn
    fake.release()
    await pending
    editor.save(NEW)
    assert (await editor.request("agentAssist/status"))["drift"] == 0
    assert editor.notifications["agentAssist/drift"] == []
    fake.add("fine")
    await editor.request("agentAssist/chat", {"text": "anything new?"})
    assert "[workspace notice]" not in json.dumps(fake.messages(-1))
