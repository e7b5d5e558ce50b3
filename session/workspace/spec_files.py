"""The workspace's own agent files: `agent_spec.md` and the `templates/` directory.

A snapshot records whether the spec exists; the seed's reset may delete both, once the
user has confirmed it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

AGENT_SPEC_FILE = "agent_spec.md"
TEMPLATES_DIR = "templates"


def agent_spec_path(root: Path) -> str | None:
    """Return `agent_spec.md` if it is a regular file of the workspace (not a symlink)."""
    spec = root / AGENT_SPEC_FILE
    return AGENT_SPEC_FILE if spec.is_file() and not spec.is_symlink() else None


def reset_targets(root: Path) -> list[str]:
    """Return the spec file / template dir that exist (the caller confirms deleting them)."""
    return [
        name
        for name in (AGENT_SPEC_FILE, TEMPLATES_DIR)
        if (root / name).exists() or (root / name).is_symlink()
    ]


def delete_reset_targets(root: Path, warnings: list[str]) -> list[str]:
    """Delete the reset targets (a symlink itself, never what it points to); return them."""
    deleted = []
    for name in reset_targets(root):
        target = root / name
        try:
            if target.is_symlink() or target.is_file():
                target.unlink()  # a symlink itself, never what it points to
            elif target.is_dir():
                shutil.rmtree(target)
            else:
                continue
        except OSError as exc:
            warnings.append(f"could not delete {name}: {exc.strerror or exc}")
            continue
        deleted.append(name)
    return deleted
