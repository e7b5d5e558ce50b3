"""Restoring a checkpoint gives each file back its mode: a 0600 file is not recreated 0644.

The checkpoint record keeps each copied file's permission bits (never setuid, setgid or
sticky); a record written before modes were kept restores a file it recreates as 0600.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI
from tests.e2e.harness import Editor

TRACKED = ["agent_spec.md", "templates/**", "private.txt", "run.sh"]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def files(workspace: Path) -> tuple[Path, Path]:
    private, script = workspace / "private.txt", workspace / "run.sh"
    private.write_text("mine alone\n")
    private.chmod(0o600)
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755 | stat.S_ISUID)
    return private, script


def editor_for(make_editor, apply_edits: bool) -> Editor:
    options = {"instanceId": "test-window", "trackedFiles": TRACKED}
    editor: Editor = make_editor(options=options, apply_edits=apply_edits)
    return editor


@pytest.mark.parametrize("apply_edits", [False, True], ids=["direct", "applyEdit"])
async def test_restored_files_get_their_checkpointed_modes(
    make_editor, workspace: Path, files: tuple[Path, Path], apply_edits: bool
) -> None:
    private, script = files
    editor = editor_for(make_editor, apply_edits)
    await editor.start()
    await editor.ready()
    saved = await editor.request("agentAssist/save")
    private.unlink()  # recreated on restore
    script.write_text("#!/bin/sh\necho changed\n")  # rewritten on restore
    script.chmod(0o644)
    restored = await editor.request("agentAssist/checkpoint", {"number": saved["checkpoint"]})
    assert sorted(restored["restoredFiles"]) == ["private.txt", "run.sh"]
    assert private.read_text() == "mine alone\n" and mode(private) == 0o600
    assert script.read_text() == "#!/bin/sh\necho hi\n"
    assert mode(script) == 0o755  # its x bits back; never setuid


@pytest.mark.local_store
async def test_a_record_without_modes_recreates_files_0600(
    make_editor, workspace: Path, home: Path, files: tuple[Path, Path]
) -> None:
    private, script = files
    script.chmod(0o755)
    editor = editor_for(make_editor, apply_edits=False)
    await editor.start()
    await editor.ready()
    saved = await editor.request("agentAssist/save")
    (record_path,) = home.rglob(f"checkpoints/{saved['sessionId']}/{saved['checkpoint']}.json")
    record = json.loads(record_path.read_text())
    assert record.pop("modes") == {
        "agent_spec.md": mode(workspace / "agent_spec.md"),
        "templates/reply.txt": mode(workspace / "templates" / "reply.txt"),
        "private.txt": 0o600,
        "run.sh": 0o755,
    }
    record_path.write_text(json.dumps(record))  # as written before modes were kept
    private.unlink()
    script.write_text("changed\n")
    restored = await editor.request("agentAssist/checkpoint", {"number": saved["checkpoint"]})
    assert sorted(restored["restoredFiles"]) == ["private.txt", "run.sh"]
    assert private.read_text() == "mine alone\n" and mode(private) == 0o600  # not 0644
    assert script.read_text() == "#!/bin/sh\necho hi\n"
    assert mode(script) == 0o755  # an existing file keeps its own mode


async def test_a_checkpoint_restored_for_a_fake_model_turn_keeps_modes(
    make_editor, fake: FakeOpenAI, workspace: Path, files: tuple[Path, Path]
) -> None:
    """The model rewrites a private file; restoring the checkpoint before it keeps 0600."""
    private, _ = files
    fake.add(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "private.txt", "content": "x\n"}}
            ]
        },
        "rewrote it",
    )
    editor = editor_for(make_editor, apply_edits=True)
    await editor.start()
    await editor.ready()
    saved = await editor.request("agentAssist/save")
    await editor.request("agentAssist/chat", {"text": "rewrite private.txt"})
    private.unlink()
    await editor.request("agentAssist/checkpoint", {"number": saved["checkpoint"]})
    assert private.read_text() == "mine alone\n" and mode(private) == 0o600
