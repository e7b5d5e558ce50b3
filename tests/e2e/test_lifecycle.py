"""Session lifecycle over LSP: relaunch/resume, decline, reset, save, drift, crash, locks."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path

from lsp_server.fake_model import FakeOpenAI
from session.context import format_utc

from .harness import Editor, shown, stored

MakeEditor = Callable[..., Editor]
VSCODE_ONLY = pytest.mark.parametrize("client_name", ["vscode"])
RESUME_PROMPT = re.compile(  # the seed's words; a shared store adds the machine
    r"Previous session found \(last active: (\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC)"
    r"(?:, on (\S+))?\)\n"
    r"(.+)\n"  # what it is: its title, its turns, a last turn that did not complete
    r"Resume previous session\?"
)
RESUME_HEADER = "# Resumed Session Context"
SPEC_V2 = "# Support agent\nfour tools now, and a much longer description of them\n"


# -- helpers -------------------------------------------------------------------------------


def session_files(home: Path, session_id: str) -> list[Path]:
    """Every file the store holds for `session_id` (log, snapshot, lock)."""
    return sorted(home.glob(f"projects/*/sessions/{session_id}.*"))


def log_file(home: Path, session_id: str) -> Path:
    paths = list(home.glob(f"projects/*/sessions/{session_id}.events.jsonl"))
    assert len(paths) == 1, paths
    return paths[0]


def warnings_shown(editor: Editor) -> list[str]:
    """The texts of the window/showMessage warnings the editor received."""
    return [
        m.message
        for m in editor.client.messages
        if isinstance(m, types.ShowMessageParams) and m.type == types.MessageType.Warning
    ]


def resume_questions(editor: Editor) -> list[types.ShowMessageRequestParams]:
    return [q for q in editor.questions if "Resume previous session?" in q.message]


def wire_items(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Transcript items reduced to the contract's fields (others may be added freely)."""
    keys = ("turn", "role", "text", "endReason")
    return [{k: item[k] for k in keys if k in item} for item in items]


def turn_inputs(events: list[Any]) -> list[str]:
    return [e.data.input for e in events if e.type == "turn/start"]


def watcher_methods(editor: Editor) -> list[str]:
    return [r.method for params in editor.registrations for r in params.registrations]


async def started(editor: Editor) -> dict[str, Any]:
    """Start the editor and wait for its session; return the sessionChanged params."""
    await editor.start()
    return await editor.ready()


async def first_session(
    make_editor: MakeEditor,
    fake: FakeOpenAI,
    *,
    text: str = "first question",
    reply: str = "first answer",
    **kwargs: Any,
) -> str:
    """Launch, chat one completed turn, stop (autosave); return the session id."""
    fake.add(reply)
    editor = make_editor(**kwargs)
    await started(editor)
    result = await editor.request("agentAssist/chat", {"text": text})
    assert result["endReason"] == "completed" and result["turn"] == 1
    await editor.stop()
    return str(result["sessionId"])


def changed_event(path: Path) -> types.DidChangeWatchedFilesParams:
    uri = from_fs_path(str(path)) or ""
    return types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=uri, type=types.FileChangeType.Changed)]
    )


# -- 1. relaunch → resume ---------------------------------------------------------------------


async def test_relaunch_offers_resume_and_continues_the_session(
    make_editor: MakeEditor, fake: FakeOpenAI, home: Path, workspace: Path
) -> None:
    old_id = await first_session(make_editor, fake)
    snapshot, _ = stored(workspace, home).read_snapshot(old_id)
    assert snapshot is not None  # the clean stop autosaved

    editor = make_editor()
    changed = await started(editor)
    assert len(editor.questions) == 1
    question = editor.questions[0]
    match = RESUME_PROMPT.fullmatch(question.message)
    assert match, question.message
    assert match.group(1) == format_utc(snapshot.updated_at)
    # the machine is named only when it is another one (here: this one; see tests/pg)
    assert match.group(2) is None
    assert match.group(3).endswith(" · 1 turn")  # its title, its one turn
    assert question.type == types.MessageType.Info
    assert [a.title for a in question.actions or []] == ["Resume", "New session"]

    assert (changed["sessionId"], changed["reason"]) == (old_id, "resumed")
    context = (await editor.request("agentAssist/resume"))["context"]
    assert context.startswith(RESUME_HEADER) and old_id in context

    history = await editor.request("agentAssist/history")
    assert history["sessionId"] == old_id
    assert wire_items(history["items"]) == [
        {"turn": 1, "role": "user", "text": "first question"},
        {"turn": 1, "role": "assistant", "text": "first answer", "endReason": "completed"},
    ]

    fake.add("second answer")
    reply = await editor.request("agentAssist/chat", {"text": "second question"})
    assert reply["sessionId"] == old_id and reply["turn"] == 2
    assert context in fake.system_text(-1)
    # the earlier turn is part of what the model sees
    assert "first answer" in json.dumps(fake.messages(-1))
    status = await editor.request("agentAssist/status")
    assert status["resumed"] is True and status["turns"] == 2


@VSCODE_ONLY
async def test_dismissed_resume_prompt_resumes(make_editor: MakeEditor, fake: FakeOpenAI) -> None:
    first = make_editor()
    new = await started(first)
    assert new["reason"] == "new"
    await first.request("agentAssist/save")
    await first.stop()

    editor = make_editor(resume_answer=None)
    changed = await started(editor)
    assert len(resume_questions(editor)) == 1
    assert (changed["sessionId"], changed["reason"]) == (new["sessionId"], "resumed")
    assert (await editor.request("agentAssist/resume"))["context"].startswith(RESUME_HEADER)


# -- 2. decline ------------------------------------------------------------------------------


@pytest.mark.local_store
@VSCODE_ONLY
async def test_declined_resume_starts_new_and_keeps_old_files(
    make_editor: MakeEditor, fake: FakeOpenAI, home: Path
) -> None:
    old_id = await first_session(make_editor, fake)
    old_log = log_file(home, old_id)
    old_bytes = old_log.read_bytes()

    editor = make_editor(resume_answer="New session")
    changed = await started(editor)
    assert len(resume_questions(editor)) == 1
    assert changed["reason"] == "new" and changed["sessionId"] != old_id
    assert (await editor.request("agentAssist/resume"))["context"] == ""
    fake.add("fresh answer")
    reply = await editor.request("agentAssist/chat", {"text": "hello again"})
    assert reply["turn"] == 1 and reply["sessionId"] == changed["sessionId"]
    assert RESUME_HEADER not in fake.system_text(-1)
    await editor.stop()
    assert old_log.read_bytes() == old_bytes  # untouched
    assert any(p.name == f"{old_id}.json" for p in session_files(home, old_id))


# -- 3. autoResume always / never -----------------------------------------------------------


@VSCODE_ONLY
async def test_auto_resume_always_and_never_skip_the_question(
    make_editor: MakeEditor, fake: FakeOpenAI
) -> None:
    first = make_editor()
    old_id = (await started(first))["sessionId"]
    await first.request("agentAssist/save")
    await first.stop()

    always = make_editor(options={"instanceId": "test-window", "autoResume": "always"})
    changed = await started(always)
    assert always.questions == []
    assert (changed["sessionId"], changed["reason"]) == (old_id, "resumed")
    assert (await always.request("agentAssist/resume"))["context"].startswith(RESUME_HEADER)
    await always.stop()

    never = make_editor(options={"instanceId": "test-window", "autoResume": "never"})
    changed = await started(never)
    assert never.questions == []
    assert changed["reason"] == "new" and changed["sessionId"] != old_id
    assert (await never.request("agentAssist/resume"))["context"] == ""


# -- 4. reset --------------------------------------------------------------------------------


@pytest.mark.local_store
@VSCODE_ONLY
async def test_reset_after_resume_drops_session_and_context(
    make_editor: MakeEditor, fake: FakeOpenAI, home: Path
) -> None:
    old_id = await first_session(make_editor, fake)
    editor = make_editor()
    assert (await started(editor))["sessionId"] == old_id
    assert (await editor.request("agentAssist/resume"))["context"].startswith(RESUME_HEADER)
    fake.add("with context")
    await editor.request("agentAssist/chat", {"text": "before reset"})
    assert RESUME_HEADER in fake.system_text(-1)

    result = await editor.request("agentAssist/reset", {"deleteFiles": False})
    new_id = result["sessionId"]
    assert new_id != old_id and result["deletedFiles"] == []
    reset_changed = await editor.wait_for("agentAssist/sessionChanged", count=2)
    assert (reset_changed["sessionId"], reset_changed["reason"]) == (new_id, "reset")
    assert [q for q in editor.questions if "Resume" not in q.message] == []  # no file question
    assert session_files(home, old_id) == []
    assert (await editor.request("agentAssist/resume"))["context"] == ""
    fake.add("without context")
    reply = await editor.request("agentAssist/chat", {"text": "after reset"})
    assert reply["sessionId"] == new_id and reply["turn"] == 1
    assert "Resumed Session Context" not in fake.system_text(-1)
    assert "before reset" not in json.dumps(fake.messages(-1))
    await editor.stop()

    relaunch = make_editor()
    changed = await started(relaunch)
    assert len(resume_questions(relaunch)) == 1
    assert (changed["sessionId"], changed["reason"]) == (new_id, "resumed")


@pytest.mark.local_store
@VSCODE_ONLY
async def test_reset_then_clean_stop_leaves_nothing_to_resume(
    make_editor: MakeEditor, home: Path
) -> None:
    first = make_editor()
    old_id = (await started(first))["sessionId"]
    await first.request("agentAssist/save")
    await first.stop()

    editor = make_editor()
    assert (await started(editor))["sessionId"] == old_id
    reset_id = (await editor.request("agentAssist/reset", {"deleteFiles": False}))["sessionId"]
    await editor.stop()
    assert session_files(home, old_id) == []

    relaunch = make_editor()
    changed = await started(relaunch)
    assert relaunch.questions == []  # no autosave resurrection of either session
    assert changed["reason"] == "new" and changed["sessionId"] not in (old_id, reset_id)
    assert (await relaunch.request("agentAssist/resume"))["context"] == ""


@VSCODE_ONLY
async def test_reset_asks_about_spec_and_templates(
    make_editor: MakeEditor, workspace: Path
) -> None:
    editor = make_editor(reset_answer="Cancel")
    session_id = (await started(editor))["sessionId"]

    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/reset", {})
    assert info.value.code == -32803
    assert info.value.data == {"cancelled": True}  # the clients show it as information
    assert len(editor.questions) == 1
    question = editor.questions[0]
    assert "agent_spec.md" in question.message and "templates" in question.message
    assert [a.title for a in question.actions or []] == ["Delete files", "Keep files", "Cancel"]
    assert (await editor.request("agentAssist/status"))["sessionId"] == session_id
    assert len(editor.notifications["agentAssist/sessionChanged"]) == 1
    assert (workspace / "agent_spec.md").is_file() and (workspace / "templates").is_dir()

    editor.reset_answer = "Delete files"
    result = await editor.request("agentAssist/reset", {})
    assert len(editor.questions) == 2
    assert result["sessionId"] != session_id
    assert sorted(result["deletedFiles"]) == ["agent_spec.md", "templates"]
    assert not (workspace / "agent_spec.md").exists()
    assert not (workspace / "templates").exists()
    status = await editor.request("agentAssist/status")
    assert status["sessionId"] == result["sessionId"]


# -- 5. save ---------------------------------------------------------------------------------


@VSCODE_ONLY
async def test_save_numbers_checkpoints(
    make_editor: MakeEditor, workspace: Path, home: Path, store_kind: str
) -> None:
    editor = make_editor()
    session_id = (await started(editor))["sessionId"]
    first = await editor.request("agentAssist/save")
    second = await editor.request("agentAssist/save")
    assert (first["checkpoint"], second["checkpoint"]) == (1, 2)
    for saved in (first, second):
        assert saved["sessionId"] == session_id
        if store_kind == "local":
            assert Path(saved["path"]).is_file()
            assert Path(saved["path"]).resolve().is_relative_to(home.resolve())
        else:  # the database, named without a password
            assert saved["path"].startswith("postgresql://") and session_id in saved["path"]
    events = stored(workspace, home).read_events(session_id).events
    assert [e.data.checkpoint for e in events if e.type == "session/save"] == [1, 2]


# -- 6. drift on resume -----------------------------------------------------------------------


async def test_resume_reports_drift_of_tracked_files(
    make_editor: MakeEditor, fake: FakeOpenAI, workspace: Path
) -> None:
    old_id = await first_session(make_editor, fake)
    (workspace / "agent_spec.md").write_text(SPEC_V2)

    editor = make_editor()
    changed = await started(editor)
    assert (changed["sessionId"], changed["reason"]) == (old_id, "resumed")
    drift = await editor.wait_for("agentAssist/drift")
    assert drift["sessionId"] == old_id and drift["source"] == "resume"
    assert drift["modified"] == ["agent_spec.md"]
    assert drift["deleted"] == [] and drift["created"] == []
    assert len(editor.notifications["agentAssist/drift"]) == 1
    assert any("agent_spec.md" in t for t in warnings_shown(editor)), shown(editor)
    assert drift["messageShown"] is True  # the default: a generic client gets the message

    context = (await editor.request("agentAssist/resume"))["context"]
    assert "- agent_spec.md: modified" in context
    assert "templates/reply.txt: modified" not in context
    fake.add("I see the spec changed")
    await editor.request("agentAssist/chat", {"text": "what changed?"})
    assert "- agent_spec.md: modified" in fake.system_text(-1)
    assert (await editor.request("agentAssist/status"))["drift"] == 1


# -- 7. live drift from the file watcher -------------------------------------------------------


async def test_watched_file_changes_reach_the_model_but_own_writes_do_not(
    make_editor: MakeEditor, fake: FakeOpenAI, workspace: Path
) -> None:
    editor = make_editor()
    session_id = (await started(editor))["sessionId"]
    # The registration (if any) is sent right after sessionChanged, before this reply.
    await editor.request("agentAssist/status")
    if types.WORKSPACE_DID_CHANGE_WATCHED_FILES not in watcher_methods(editor):
        assert editor.client_name == "neovim", "VS Code allows dynamic watcher registration"
        pytest.skip("this client does not let the server register file watchers")
    assert editor.client_name == "vscode"

    spec = workspace / "agent_spec.md"
    spec.write_text(SPEC_V2)
    editor.client.workspace_did_change_watched_files(changed_event(spec))
    drift = await editor.wait_for("agentAssist/drift")
    assert drift["sessionId"] == session_id and drift["source"] == "watcher"
    assert drift["modified"] == ["agent_spec.md"]

    fake.add("noted")
    await editor.request("agentAssist/chat", {"text": "anything new?"})
    sent = json.dumps(fake.messages(-1))
    assert "agent_spec.md: modified" in sent

    template = workspace / "templates" / "reply.txt"
    fake.add(
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "templates/reply.txt", "content": "Hi {name}!\n"},
                }
            ]
        },
        "template rewritten",
    )
    reply = await editor.request("agentAssist/chat", {"text": "rewrite the template"})
    assert reply["text"] == "template rewritten"
    assert editor.edits, "the write went through workspace/applyEdit"
    assert template.read_text() == "Hi {name}!\n"

    # The editor reports the assistant's own write, then a real outside change.
    editor.client.workspace_did_change_watched_files(changed_event(template))
    spec.write_text(SPEC_V2 + "and one more line written by the user\n")
    editor.client.workspace_did_change_watched_files(changed_event(spec))
    second = await editor.wait_for("agentAssist/drift", count=2)
    assert second["source"] == "watcher" and second["modified"] == ["agent_spec.md"]
    all_drift = editor.notifications["agentAssist/drift"]
    assert len(all_drift) == 2
    assert not any("templates/reply.txt" in json.dumps(n) for n in all_drift)

    fake.add("ok")
    await editor.request("agentAssist/chat", {"text": "and now?"})
    note = json.dumps(fake.messages(-1)[-1])
    assert "agent_spec.md: modified" in note and "templates/reply.txt" not in note


# -- 8. kill -9 mid-stream --------------------------------------------------------------------


@VSCODE_ONLY
async def test_kill_mid_stream_marks_turn_interrupted(
    make_editor: MakeEditor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add("the first, complete answer")
    fake.add({"text": "a very slow story that never ends " * 20, "chunk": 4, "delay": 0.05})
    editor = make_editor()
    session_id = (await started(editor))["sessionId"]
    first = await editor.request("agentAssist/chat", {"text": "first question"})
    assert first["turn"] == 1
    _, pending = editor.start_request("agentAssist/chat", {"text": "tell me a long story"})
    await editor.wait_for("agentAssist/chatDelta", count=first_deltas(editor) + 3)
    await editor.kill()
    pending.cancel()
    await asyncio.gather(pending, return_exceptions=True)

    relaunch = make_editor()
    changed = await started(relaunch)
    assert (changed["sessionId"], changed["reason"]) == (session_id, "resumed")
    events = stored(workspace, home).read_events(session_id).events
    ends = [e for e in events if e.type == "turn/end"]
    assert [(e.turn, e.data.reason) for e in ends] == [(1, "completed"), (2, "interrupted")]
    assert not [e for e in events if e.turn == 2 and e.seq > ends[-1].seq]

    history = wire_items((await relaunch.request("agentAssist/history"))["items"])
    assert history[:2] == [
        {"turn": 1, "role": "user", "text": "first question"},
        {
            "turn": 1,
            "role": "assistant",
            "text": "the first, complete answer",
            "endReason": "completed",
        },
    ]
    assert history[2] == {"turn": 2, "role": "user", "text": "tell me a long story"}
    assert history[-1]["turn"] == 2 and history[-1]["endReason"] == "interrupted"

    fake.add("back again")
    reply = await relaunch.request("agentAssist/chat", {"text": "are you there?"})
    assert reply["sessionId"] == session_id and reply["turn"] == 3
    assert reply["endReason"] == "completed"


def first_deltas(editor: Editor) -> int:
    """Deltas already received (those of the completed turn)."""
    return len(editor.notifications["agentAssist/chatDelta"])


# -- 9. two servers, one instanceId ----------------------------------------------------------


@pytest.mark.local_store
@VSCODE_ONLY
async def test_second_server_with_same_instance_does_not_share_the_log(
    make_editor: MakeEditor, fake: FakeOpenAI, home: Path
) -> None:
    a = make_editor()
    a_id = (await started(a))["sessionId"]
    fake.add("reply A1")
    assert (await a.request("agentAssist/chat", {"text": "from A"}))["sessionId"] == a_id

    b = make_editor()  # same workspace, home and instanceId, while A still runs
    changed = await started(b)
    b_id = changed["sessionId"]
    assert b_id != a_id and changed["reason"] == "new"
    assert any("in use" in t for t in warnings_shown(b)), shown(b)

    fake.add("reply B1")
    assert (await b.request("agentAssist/chat", {"text": "from B"}))["sessionId"] == b_id
    fake.add("reply A2")
    second = await a.request("agentAssist/chat", {"text": "from A again"})
    assert second["sessionId"] == a_id and second["turn"] == 2
    await b.stop()
    await a.stop()

    manager = stored(a.workspace, home)
    assert turn_inputs(manager.read_events(a_id).events) == ["from A", "from A again"]
    assert turn_inputs(manager.read_events(b_id).events) == ["from B"]
    for session_id in (a_id, b_id):
        lines = log_file(home, session_id).read_bytes().splitlines()
        records = [json.loads(line) for line in lines]
        assert [r["seq"] for r in records] == list(range(len(records)))


# -- 10. history, sessions, open ------------------------------------------------------------


@VSCODE_ONLY
async def test_sessions_list_and_open_another_session(
    make_editor: MakeEditor, fake: FakeOpenAI
) -> None:
    old_id = await first_session(make_editor, fake, text="alpha", reply="alpha answer")
    editor = make_editor(resume_answer="New session")
    new_id = (await started(editor))["sessionId"]
    fake.add("beta answer")
    await editor.request("agentAssist/chat", {"text": "beta"})

    listed = await editor.request("agentAssist/sessions")
    sessions = listed["sessions"]
    assert [s["sessionId"] for s in sessions] == [new_id, old_id] and listed["total"] == 2
    assert [s["active"] for s in sessions] == [True, False]
    assert [s["turns"] for s in sessions] == [1, 1]
    page = await editor.request("agentAssist/sessions", {"offset": 1, "limit": 1})
    assert [s["sessionId"] for s in page["sessions"]] == [old_id] and page["total"] == 2

    opened = await editor.request("agentAssist/open", {"sessionId": old_id})
    assert opened["sessionId"] == old_id
    assert opened["context"].startswith(RESUME_HEADER) and old_id in opened["context"]
    opened_changed = await editor.wait_for("agentAssist/sessionChanged", count=2)
    assert (opened_changed["sessionId"], opened_changed["reason"]) == (old_id, "opened")
    sessions = (await editor.request("agentAssist/sessions"))["sessions"]
    assert {s["sessionId"]: s["active"] for s in sessions} == {old_id: True, new_id: False}
    history = await editor.request("agentAssist/history")
    assert history["sessionId"] == old_id
    assert [(i["role"], i["text"]) for i in history["items"]] == [
        ("user", "alpha"),
        ("assistant", "alpha answer"),
    ]
    other = await editor.request("agentAssist/history", {"sessionId": new_id})
    assert [(i["role"], i["text"]) for i in other["items"]] == [
        ("user", "beta"),
        ("assistant", "beta answer"),
    ]

    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/open", {"sessionId": "0123456789ab"})
    assert info.value.code == -32803 and "0123456789ab" in info.value.message
    assert (await editor.request("agentAssist/status"))["sessionId"] == old_id

    fake.add("gamma answer")
    reply = await editor.request("agentAssist/chat", {"text": "gamma"})
    assert reply["sessionId"] == old_id and reply["turn"] == 2
    assert old_id in fake.system_text(-1)


# -- 11. invalid initialization options --------------------------------------------------------


@pytest.mark.local_store
@VSCODE_ONLY
async def test_invalid_options_warn_and_fall_back_to_defaults(
    make_editor: MakeEditor, fake: FakeOpenAI, home: Path
) -> None:
    bad = {"instanceId": "../bad", "autoResume": "sometimes"}
    editor = make_editor(options=dict(bad))
    changed = await started(editor)
    assert changed["reason"] == "new"
    texts = warnings_shown(editor)
    assert any("instanceId" in t and "../bad" in t for t in texts), texts
    assert any("autoResume" in t and "sometimes" in t for t in texts), texts
    fake.add("still working")
    reply = await editor.request("agentAssist/chat", {"text": "hello"})
    assert reply["text"] == "still working" and reply["endReason"] == "completed"
    await editor.stop()
    stored = [p.relative_to(home).as_posix() for p in home.rglob("*")]
    assert not any("bad" in p for p in stored), stored
    assert not (home.parent / "bad").exists()
    # the instance derived from clientInfo and processId (pytest-lsp's own pid) holds the pointer
    pointer = f"sessions/active_Test-Editor-{os.getpid()}.json"
    assert any(p.endswith(pointer) for p in stored), stored

    again = make_editor(options=dict(bad))
    changed = await started(again)
    assert len(resume_questions(again)) == 1  # autoResume fell back to "ask"
    assert (changed["sessionId"], changed["reason"]) == (reply["sessionId"], "resumed")


async def test_a_client_that_renders_drift_gets_no_duplicate_message(
    make_editor: MakeEditor, fake: FakeOpenAI, workspace: Path
) -> None:
    old_id = await first_session(make_editor, fake)
    (workspace / "agent_spec.md").write_text(SPEC_V2)
    editor = make_editor(options={"instanceId": "test-window", "driftMessages": False})
    changed = await started(editor)
    assert changed["sessionId"] == old_id
    drift = await editor.wait_for("agentAssist/drift")
    assert drift["modified"] == ["agent_spec.md"] and drift["messageShown"] is False
    assert not any("agent_spec.md" in t for t in warnings_shown(editor)), shown(editor)


@pytest.mark.local_store
async def test_new_keeps_the_previous_session_whole(
    make_editor: MakeEditor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    editor = make_editor()
    old_id = (await started(editor))["sessionId"]
    fake.add("first answer")
    await editor.request("agentAssist/chat", {"text": "first question"})
    await editor.request("agentAssist/save")
    manager = stored(workspace, home)
    before = manager.layout.log_path(old_id).read_bytes()
    result = await editor.request("agentAssist/new")
    assert result["previousSessionId"] == old_id and result["sessionId"] != old_id
    changed = editor.notifications["agentAssist/sessionChanged"][-1]
    assert changed == {"sessionId": result["sessionId"], "reason": "new"}
    listed = [s["sessionId"] for s in (await editor.request("agentAssist/sessions"))["sessions"]]
    assert old_id in listed
    assert manager.layout.log_path(old_id).read_bytes() == before  # untouched, byte for byte
    assert (await editor.request("agentAssist/history"))["items"] == []
    await editor.request("agentAssist/open", {"sessionId": old_id})
    items = (await editor.request("agentAssist/history"))["items"]
    assert [i["text"] for i in items if i["role"] == "user"] == ["first question"]


@VSCODE_ONLY
async def test_declining_then_quitting_saves_the_new_session_and_the_declined_one_still_opens(
    make_editor: MakeEditor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    """The seed's "No" then exit: the new session is saved and the pointer names it."""
    old_id = await first_session(make_editor, fake)
    editor = make_editor(resume_answer="New session")
    changed = await started(editor)
    new_id = changed["sessionId"]
    assert changed["reason"] == "new" and new_id != old_id
    await editor.stop()  # no turn in it
    store = stored(workspace, home)
    state, _ = store.read_snapshot(new_id)
    assert state is not None and state.turns == 0 and state.file_manifest  # the drift baseline
    assert store.read_pointer("test-window") == new_id

    relaunch = make_editor()
    changed = await started(relaunch)
    assert relaunch.questions == []  # nothing in the new one to resume, the old one declined
    assert changed["reason"] == "new"
    listed = await relaunch.request("agentAssist/sessions", {"includeEmpty": True})
    assert {old_id, new_id} <= {s["sessionId"] for s in listed["sessions"]}
    opened = await relaunch.request("agentAssist/open", {"sessionId": old_id})
    assert opened["context"].startswith(RESUME_HEADER)
    fake.add("continued")
    reply = await relaunch.request("agentAssist/chat", {"text": "go on"})
    assert (reply["sessionId"], reply["turn"]) == (old_id, 2)
