"""A file's timeline over LSP: agentAssist/fileHistory, fileVersion and restoreFile (#42).

One server: the model writes `config.yaml` in two steps of one turn and again in a second
turn, the user edits it on disk (the watcher's drift), then the timeline is asked, filtered,
a version read and restored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor

V1 = "name: demo\n"
V2 = "name: demo\nlevel: 1\n"
V3 = "name: demo\nlevel: 1\nport: 8080\n"
HAND = "name: demo\nlevel: 2\nport: 8080\n"
OPTIONS = {"instanceId": "history-window", "trackedFiles": ["agent_spec.md", "config.yaml"]}


def write(content: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "config.yaml", "content": content}}
        ]
    }


async def failure(editor: Editor, method: str, params: dict[str, Any]) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await editor.request(method, params)
    return info.value


@pytest.mark.parametrize("client_name", ["vscode"])
async def test_the_timeline_of_a_file_over_lsp(
    make_editor: Any, fake: FakeOpenAI, workspace: Path
) -> None:
    editor: Editor = make_editor(options=dict(OPTIONS))
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    fake.add(write(V1), write(V2), "the config is written")
    await editor.request("agentAssist/chat", {"text": "make the config"})
    fake.add(write(V3), "added the port")
    await editor.request("agentAssist/chat", {"text": "add the port"})
    assert (workspace / "config.yaml").read_text() == V3
    (workspace / "config.yaml").write_text(HAND)  # by hand
    uri = from_fs_path(str(workspace / "config.yaml")) or ""
    editor.watched(uri, types.FileChangeType.Changed)
    await editor.wait_for("agentAssist/drift")

    found = await editor.request("agentAssist/fileHistory", {"path": "config.yaml"})
    assert found["path"] == "config.yaml" and not found.get("truncated")
    steps = [(c["kind"], c["turn"], c["step"], c["tool"]) for c in found["changes"]]
    writes = [("write", 2, 1, "write_file"), ("write", 1, 2, "write_file")]
    writes.append(("write", 1, 1, "write_file"))
    assert steps == [("drift", None, None, None), *writes]
    newest_write = next(c for c in found["changes"] if c["kind"] == "write")
    assert newest_write["sessionId"] == session_id
    assert newest_write["sessionTitle"] == "make the config"
    assert newest_write["userMessage"] == "add the port"
    assert "+port: 8080" in newest_write["diff"]
    assert "-level: 1\n+level: 2" in found["changes"][0]["diff"]
    by_line = await editor.request(
        "agentAssist/fileHistory", {"path": str(workspace / "config.yaml"), "line": "level: 1"}
    )
    assert [(c["kind"], c["turn"], c["step"]) for c in by_line["changes"]] == [
        ("drift", None, None),
        ("write", 1, 2),  # the step that introduced it
    ]
    version = await editor.request(
        "agentAssist/fileVersion",
        {"path": "config.yaml", "sessionId": session_id, "turn": 1, "step": 2},
    )
    assert version["text"] == V1
    drift = found["changes"][0]  # a drift is named by its time
    seen = await editor.request(
        "agentAssist/fileVersion",
        {"path": "config.yaml", "sessionId": session_id, "ts": drift["ts"], "side": "after"},
    )
    assert seen == {"path": "config.yaml", "sha256": drift["afterSha256"], "text": HAND}
    restored = await editor.request(
        "agentAssist/restoreFile",
        {"path": "config.yaml", "sessionId": session_id, "turn": 1, "step": 2},
    )
    assert restored == {"path": "config.yaml", "restored": True}
    assert (workspace / "config.yaml").read_text() == V1
    assert any("config.yaml" in (e.label or "") for e in editor.edits)  # undoable
    params = {"path": "config.yaml", "sessionId": session_id, "turn": 1, "step": 1}
    refused = await failure(editor, "agentAssist/restoreFile", params)
    assert refused.code == -32803 and "allowDelete" in refused.message
    gone = await editor.request("agentAssist/restoreFile", {**params, "allowDelete": True})
    assert gone["restored"] and not (workspace / "config.yaml").exists()
    cut = await editor.request("agentAssist/fileHistory", {"path": "config.yaml", "limit": 1})
    assert len(cut["changes"]) == 1 and cut["truncated"] is True
    since = await editor.request(
        "agentAssist/fileHistory", {"path": "config.yaml", "since": "2000-01-01"}
    )
    # (a restore records nothing itself: the watcher sees it as the user's change)
    assert since["changes"] == found["changes"]
    past = await editor.request(
        "agentAssist/fileHistory", {"path": "config.yaml", "until": "2000-01-01"}
    )
    assert past["changes"] == []

    for params, field in (
        ({"path": "../outside.txt"}, "path"),
        ({"path": "/etc/passwd"}, "path"),
        ({"path": "config.yaml", "since": "someday"}, "since"),
    ):
        error = await failure(editor, "agentAssist/fileHistory", params)
        assert error.code == -32602 and f"'{field}'" in error.message, error.message
    missing = await failure(
        editor,
        "agentAssist/fileVersion",
        {"path": "config.yaml", "sessionId": session_id, "turn": 7},
    )
    assert missing.code == -32803 and "no recorded change" in missing.message

    # "Turn 2 broke it": take another route from just before it, in a fork.
    fork = await editor.request(
        "agentAssist/fork", {"sessionId": session_id, "beforeTurn": newest_write["turn"]}
    )
    assert fork["parentSessionId"] == session_id and fork["sessionId"] != session_id
    history = await editor.request("agentAssist/history", {})
    inputs = [item["text"] for item in history["items"] if item["role"] == "user"]
    assert inputs == ["make the config"]  # the turns before it, not it
    unknown = await failure(editor, "agentAssist/fork", {"sessionId": session_id, "beforeTurn": 9})
    assert unknown.code == -32803 and "no turn 9" in unknown.message


@pytest.mark.parametrize("client_name", ["vscode"])
async def test_writes_and_a_restore_replace_a_buffer_the_editor_does_not_sync(
    make_editor: Any, fake: FakeOpenAI, workspace: Path
) -> None:
    """VS Code syncs no document to us: an edit's range must cover whatever its buffer holds
    (two writes of one turn before a save; the user's unsaved typing), not the disk's text."""
    editor: Editor = make_editor(options=dict(OPTIONS))
    editor.unsynced = {}
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    (workspace / "config.yaml").write_text("a\n")
    fake.add(write(V3), write(V1), "written twice")
    await editor.request("agentAssist/chat", {"text": "write it twice"})
    uri = from_fs_path(str(workspace / "config.yaml")) or ""
    assert editor.unsynced[uri] == V1  # the second write replaced all of the first
    editor.unsynced[uri] += "typed by the user, unsaved\nand more\n"
    restored = await editor.request(
        "agentAssist/restoreFile",
        {"path": "config.yaml", "sessionId": session_id, "turn": 1, "step": 1},
    )
    assert restored["restored"] and editor.unsynced[uri] == "a\n"
