"""A file's timeline asked with hostile paths, and restores aimed where they must not write.

The log is untrusted too (a model chose the paths it names): a recorded change of
`.git/config`, of a file behind a symlink leading out of the workspace, of a protected path,
or of `../escape.txt` is never written back by `agentAssist/restoreFile`; paths asked that
leave the workspace are `-32602`, never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI
from session.local.manager import SessionManager
from tests.e2e.harness import Editor
from tests.file_timeline import change

FSMONITOR = '[core]\n\tfsmonitor = "id > /tmp/pwned; false"\n'
PLAIN = "[core]\n\tbare = false\n"


def recorded(workspace: Path, home: Path) -> str:
    """A session whose one step 'changed' hostile paths; return its id."""
    manager = SessionManager(workspace, home=home)
    writer = manager.create_session()
    files = [
        change(manager, ".git/config", FSMONITOR, PLAIN),
        change(manager, "link/evil.txt", "owned\n", "x\n"),
        change(manager, ".vscode/tasks.json", '{"tasks": []}\n', "{}\n"),
        change(manager, "../escape.txt", "a\n", "b\n"),
        change(manager, "/etc/cron.d/x", "a\n", "b\n"),
    ]
    writer.append("turn/start", {"input": "do things"}, turn=1)
    result = {"tool_call_id": "c", "name": "write_file", "content": "ok", "files": files}
    writer.append("tool/result", result, turn=1, step=1)
    writer.append("turn/end", {"reason": "completed"}, turn=1)
    writer.close()
    return writer.session_id


async def failure(editor: Editor, method: str, params: dict[str, Any]) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await editor.request(method, params)
    return info.value


async def test_hostile_paths_and_restores_are_refused(
    make_editor: Any, fake: FakeOpenAI, workspace: Path, home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text(PLAIN)
    session_id = recorded(workspace, home)
    editor: Editor = make_editor(options={"instanceId": "hostile-window"})
    await editor.start()
    await editor.ready()

    for path in ("../x", "a/../../x", "..\\x", "/etc/passwd", str(workspace) + "2/x", "a\x00b"):
        error = await failure(editor, "agentAssist/fileHistory", {"path": path})
        assert error.code == -32602 and "'path'" in error.message, (path, error.message)
    error = await failure(editor, "agentAssist/fileHistory", {"path": "x" * 5000})
    assert error.code == -32602
    for path in ("escape.txt", "etc/cron.d/x"):  # recorded outside: never indexed under these
        assert (await editor.request("agentAssist/fileHistory", {"path": path}))["changes"] == []

    git = await editor.request("agentAssist/fileHistory", {"path": ".git/config"})
    assert [c["kind"] for c in git["changes"]] == ["write"]  # listed: reading is harmless
    where = {"sessionId": session_id, "turn": 1, "step": 1}
    error = await failure(editor, "agentAssist/restoreFile", {"path": ".git/config", **where})
    assert error.code == -32803 and ".git" in error.message
    assert (workspace / ".git" / "config").read_text() == PLAIN  # the fsmonitor never came back

    error = await failure(editor, "agentAssist/restoreFile", {"path": "link/evil.txt", **where})
    assert error.code == -32803 and "outside the workspace" in error.message
    assert list(outside.iterdir()) == []

    error = await failure(
        editor, "agentAssist/restoreFile", {"path": ".vscode/tasks.json", **where}
    )
    assert error.code == -32803 and "protected" in error.message
    assert any("tasks.json" in q.message for q in editor.questions)  # asked, and refused
    assert not (workspace / ".vscode").exists()

    error = await failure(editor, "agentAssist/restoreFile", {"path": "../escape.txt", **where})
    assert error.code == -32602
    assert not (workspace.parent / "escape.txt").exists()
    assert editor.edits == []  # nothing was ever sent to the editor to apply


async def test_a_client_without_apply_edit_gets_it_written_on_disk_never_outside(
    make_editor: Any, fake: FakeOpenAI, workspace: Path, home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    session_id = recorded(workspace, home)
    manager = SessionManager(workspace, home=home)
    writer = manager.open_session(session_id)
    files = [change(manager, "notes/todo.txt", "first\n", "second\n")]
    result = {"tool_call_id": "n", "name": "write_file", "content": "ok", "files": files}
    writer.append("turn/start", {"input": "notes"}, turn=2)
    writer.append("tool/result", result, turn=2, step=1)
    writer.close()
    editor: Editor = make_editor(options={"instanceId": "plain-window"}, apply_edits=False)
    await editor.start()
    await editor.ready()
    where = {"sessionId": session_id, "turn": 2, "step": 1}
    done = await editor.request("agentAssist/restoreFile", {"path": "notes/todo.txt", **where})
    assert done == {"path": "notes/todo.txt", "restored": True}
    assert (workspace / "notes" / "todo.txt").read_text() == "first\n"
    where["turn"] = 1
    error = await failure(editor, "agentAssist/restoreFile", {"path": "link/evil.txt", **where})
    assert error.code == -32803 and list(outside.iterdir()) == []
