"""Test data shared by the e2e, cli and reliability suites."""

from __future__ import annotations

from pathlib import Path


def make_workspace(tmp_path: Path) -> Path:
    """Create the standard test project: a spec file and one template."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "agent_spec.md").write_text("# Support agent\nthree tools\n")
    (root / "templates").mkdir()
    (root / "templates" / "reply.txt").write_text("Dear {name},\n")
    return root
