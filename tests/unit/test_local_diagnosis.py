"""The local store's self-diagnosis, reported into any `Findings` (not only the doctor's)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from session.local.diagnosis import Level, diagnose
from session.local.manager import SessionManager
from session.workspace.identity import project_identity


@dataclass
class Recorder:
    """The smallest `Findings`: what a caller outside `lsp_server` would pass."""

    lines: list[tuple[Level, str, str]] = field(default_factory=list)
    root: dict[str, Any] = field(default_factory=dict)
    projects: list[dict[str, Any]] = field(default_factory=list)

    def add(self, level: Level, area: str, message: str) -> None:
        self.lines.append((level, area, message))


def test_a_store_diagnoses_itself_and_skips_the_index_without_search(
    workspace: Path, home: Path
) -> None:
    manager = SessionManager(workspace, home=home)
    session = manager.create_session()
    session.close()
    os.chmod(home, 0o700)
    found = Recorder()

    diagnose(found, home, workspace, project_identity(workspace), searchable=False)

    assert found.root == {"path": str(home), "exists": True, "mode": "0700", "writable": True}
    [project] = found.projects
    assert project["index"] is None  # a build without search has no index to check
    assert [row["sessionId"] for row in project["sessions"]] == [session.session_id]
    assert project["sessions"][0]["problems"] == [] and not project["sessions"][0]["inUse"]
    assert ("ok", "storage", f"{home} (mode 0700, writable)") in found.lines
    name = manager.layout.project_dir.name
    assert ("ok", "projects", f"{name}: 1 session, {workspace}") in found.lines
    assert not [line for line in found.lines if line[0] in ("warning", "problem")]


def test_a_missing_store_is_fine_and_has_no_projects(tmp_path: Path) -> None:
    found = Recorder()
    home = tmp_path / "nothing-here"

    diagnose(found, home, tmp_path, project_identity(tmp_path), searchable=True)

    assert found.root == {"path": str(home), "exists": False}
    assert found.projects == []
    assert found.lines == [("ok", "storage", f"{home} does not exist yet (created on first use)")]
