"""What each change of a file replaced and wrote, recorded by the real server (#42).

The model writes `config.yaml` twice in one turn (through the editor where it applies
edits, else directly), the user edits it on disk (the watcher's drift), a checkpoint is
restored: each event names the content digests before and after, and the store holds
those contents as blobs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor, stored

V0 = "name: demo\n"
V1 = "name: demo\nlevel: 1\n"
V2 = "name: demo\nlevel: 2\n"
HAND = "name: demo\nlevel: 2\nport: 8080\n"
OPTIONS = {"instanceId": "changes-window", "trackedFiles": ["agent_spec.md", "config.yaml"]}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write(content: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "config.yaml", "content": content}}
        ]
    }


def change(before: str, after: str) -> dict[str, Any]:
    return {"path": "config.yaml", "before": sha(before), "after": sha(after), "withheld": None}


async def test_writes_a_hand_edit_and_a_restore_record_what_they_replaced(
    make_editor: Any, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    (workspace / "config.yaml").write_text(V0)
    editor: Editor = make_editor(options=dict(OPTIONS))
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    saved = await editor.request("agentAssist/save")  # holds V0
    fake.add(write(V1), write(V2), "the config is written")
    await editor.request("agentAssist/chat", {"text": "make the config"})
    assert (workspace / "config.yaml").read_text() == V2
    (workspace / "config.yaml").write_text(HAND)  # by hand
    editor.watched(from_fs_path(str(workspace / "config.yaml")) or "", types.FileChangeType.Changed)
    await editor.wait_for("agentAssist/drift")
    await editor.request("agentAssist/checkpoint", {"number": saved["checkpoint"]})
    assert (workspace / "config.yaml").read_text() == V0

    store = stored(workspace, home)
    log = [e.model_dump(mode="json") for e in store.read_events(session_id).events]
    results = [e["data"]["files"] for e in log if e["type"] == "tool/result"]
    assert results == [[change(V0, V1)], [change(V1, V2)]]
    (drift,) = [e["data"] for e in log if e["type"] == "workspace/drift"]
    assert drift["source"] == "watcher" and drift["changes"] == [change(V2, HAND)]
    (rewind,) = [e["data"] for e in log if e["type"] == "session/rewind"]
    assert rewind["files"] == [change(HAND, V0)]
    blobs = store.checkpoint_store()
    for text in (V0, V1, V2, HAND):
        assert blobs.read_blob(sha(text)) == text.encode()
