"""The seed's own store over LSP: the first launch in a project is offered its session."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor

MakeEditor = Callable[..., Editor]
SEED = Path(__file__).resolve().parents[1] / "unit" / "seed"
SID = "a1b2c3d4e5f6"
SUMMARY_LINE = "User designed a customer support agent with three tools."


def lay_out_seed(seed_home: Path, workspace: Path) -> Path:
    """The seed's store with the golden session of this project (under the seed's own hash)."""
    data = json.loads((SEED / f"{SID}.json").read_text())
    reply = (workspace / "templates" / "reply.txt").read_bytes()
    data["file_manifest"] = {
        "agent_spec.md": "0" * 64,  # modified since
        "templates/reply.txt": hashlib.sha256(reply).hexdigest(),
    }
    sessions = seed_home / "projects" / f"{workspace.name}_5eed5eed" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / f"{SID}.json").write_text(json.dumps(data, indent=2))
    (sessions / "active_4242.json").write_text(json.dumps({"session_id": SID}))
    return sessions


def files_of(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), os.lstat(p).st_mtime_ns) for p in root.rglob("*.json")}


@pytest.mark.parametrize("client_name", ["vscode"])
async def test_the_first_launch_resumes_the_seed_session(
    make_editor: MakeEditor,
    fake: FakeOpenAI,
    workspace: Path,
    home: Path,
    tmp_path: Path,
    store_kind: str,
) -> None:
    """On either store: into PostgreSQL it is copied as `sessions import` copies it."""
    seed_home = tmp_path / "datarobot" / "agent_assist"
    sessions = lay_out_seed(seed_home, workspace)
    before = files_of(seed_home)
    env = {"AGENT_ASSIST_SEED_HOME": str(seed_home)}

    editor = make_editor(env=env)
    await editor.start()
    changed = await editor.ready()
    questions = [q.message for q in editor.questions if "Resume previous session?" in q.message]
    assert questions == [
        "Previous session found (last active: 2026-03-31 14:22 UTC, in the seed's store)\n"
        "\u201cUser designed a customer support agent with three tools. Model selection\u201d\n"
        "Resume previous session?"
    ]
    assert (changed["sessionId"], changed["reason"]) == (SID, "resumed")
    fake.add("carrying on")
    reply = await editor.request("agentAssist/chat", {"text": "where were we?"})
    assert reply["sessionId"] == SID and reply["endReason"] == "completed"
    system = fake.system_text(0)
    assert "# Resumed Session Context" in system and f"(ID: {SID})" in system
    assert SUMMARY_LINE in system and "- agent_spec.md: modified" in system
    assert "Last active: 2026-03-31 14:22 UTC" in system
    assert "Chose REST API tools over SDK wrappers for portability" in system
    await editor.stop()

    copied = list(home.glob(f"projects/*/sessions/{SID}.json"))
    if store_kind == "local":
        assert len(copied) == 1 and json.loads(copied[0].read_text())["schema_version"] == 3
    else:
        assert copied == []  # in the database only: the scratch store is gone
    assert files_of(seed_home) == before and sessions.is_dir()

    again = make_editor(env=env)
    await again.start()
    changed = await again.ready()
    assert changed["sessionId"] == SID  # ours now: offered as ours, the seed's not again
    assert [q.message for q in again.questions if "seed" in q.message] == []
