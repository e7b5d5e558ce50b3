"""Deleting a session's files: log, snapshot, lock, checkpoints and the pointers naming it."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..storage import fsync_dir, unlink_quiet
from . import snapshot_file
from .layout import ProjectLayout
from .pointers import pointers_naming


def delete_files(layout: ProjectLayout, session_id: str) -> list[Path]:
    """Delete a session's files; return what went (the caller holds its lock)."""
    # The pointers naming it: read while the session still exists.
    removed = pointers_naming(layout.sessions_dir, session_id)
    for path in removed:
        unlink_quiet(path)
    for path in (layout.log_path(session_id), layout.snapshot_path(session_id)):
        if unlink_quiet(path):
            removed.append(path)
    snapshot_file.remove(layout.snapshot_path(session_id))
    checkpoints = layout.checkpoints_dir / layout.checked(session_id)
    if checkpoints.is_dir() and not checkpoints.is_symlink():
        shutil.rmtree(checkpoints)
        removed.append(checkpoints)
    unlink_quiet(layout.lock_path(session_id))
    fsync_dir(layout.sessions_dir)
    return removed
