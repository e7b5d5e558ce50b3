"""Which project and which session a command is about, and whether a session is in use."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING

from .running import ProblemError, UsageError

if TYPE_CHECKING:
    from session.store.layout import ProjectLayout
    from session.store.manager import SessionManager


def workspace_of(args: argparse.Namespace) -> Path:
    """Return the resolved `--workspace` directory (default: the current one)."""
    path = Path(args.workspace or ".").expanduser()
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory")
    return path.resolve()


def project_manager(args: argparse.Namespace) -> SessionManager:
    """Return the manager of the project of `--workspace` (default: the current directory)."""
    from session.store.manager import SessionManager

    return SessionManager(workspace_of(args))


def layouts(args: argparse.Namespace) -> list[ProjectLayout]:
    """Return the current project's layout, or every project's with `--all-projects`.

    What only reads the project's files (the session list) takes the layout: it imports no
    model, so a listing answers without the cost of loading what opening a session needs.
    """
    if getattr(args, "all_projects", False):
        return list(managers(args))
    from session.store.layout import ProjectLayout

    return [ProjectLayout(workspace_of(args))]


def managers(args: argparse.Namespace) -> list[SessionManager]:
    """Return the current project's manager, or every project's with `--all-projects`."""
    if getattr(args, "all_projects", False):
        from session.catalog import list_projects
        from session.paths import storage_root

        return [project.manager for project in list_projects(storage_root())]
    return [project_manager(args)]


def resolve_session(manager: SessionManager, wanted: str) -> str:
    """Return the session id matching `wanted` exactly or as a unique prefix (≥ 4 chars)."""
    if not re.fullmatch(r"[a-f0-9]{1,12}", wanted):
        raise UsageError(f"invalid session id {wanted!r} (12 lowercase hex characters)")
    ids = sorted(manager.session_ids())
    if wanted in ids:
        return wanted
    matches = [i for i in ids if i.startswith(wanted)] if len(wanted) >= 4 else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ProblemError(f"{wanted!r} matches several sessions: {', '.join(matches)}")
    raise ProblemError(f"no session {wanted} in project {manager.project_dir.name}")


def in_use(manager: SessionManager, session_id: str) -> bool:
    """Return True if a running process holds the session's lock (probed, never created)."""
    return session_id in manager.held_locks([session_id])
