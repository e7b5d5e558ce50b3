"""The store's catalog: its projects, the workspace each recorded, their pointer files.

A `SessionManager` is made from a workspace and owns that project's files; the catalog goes
the other way, for commands that look at the whole store (`sessions --all-projects`,
`doctor`): it lists `projects/<name>_<hash8>/` (never through a symlink), finds the
workspace a project's sessions recorded, and lists the `active_<instance>.json` pointers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..paths import is_valid_instance_id
from ..storage import read_json_file
from .layout import POINTER_PREFIX, POINTER_SUFFIX
from .manager import SessionManager
from .projects import workspace_in_log

_SNAPSHOT_LIMIT = 16 * 1024 * 1024


@dataclass(frozen=True)
class ProjectEntry:
    """One project directory of the store and the workspace its sessions recorded."""

    manager: SessionManager
    workspace_root: str | None  # None: no session recorded one (or none is readable)

    @property
    def name(self) -> str:
        """Return the directory's name, `<name>_<hash8>`."""
        return self.manager.layout.project_dir.name

    @property
    def workspace_exists(self) -> bool:
        """Return True if the recorded workspace is still a directory."""
        return bool(self.workspace_root and Path(self.workspace_root).is_dir())


@dataclass(frozen=True)
class PointerFile:
    """An `active_<instance>.json` file: which session an editor instance last used."""

    path: Path
    instance_id: str

    @property
    def valid(self) -> bool:
        """Return True if the name holds a valid instance id (the server writes no other)."""
        return is_valid_instance_id(self.instance_id)


def projects_root(home: Path) -> Path:
    """Return the directory that holds the store's project directories."""
    return home / "projects"


def refused_projects_root(home: Path) -> Path | None:
    """Return the projects directory if it is a symlink, which the server refuses to use."""
    projects = projects_root(home)
    return projects if projects.is_symlink() else None


def project_dirs(home: Path) -> list[Path]:
    """Return the project directories of the store (never through a symlink)."""
    projects = projects_root(home)
    if not projects.is_dir() or projects.is_symlink():
        return []
    return sorted(p for p in projects.iterdir() if p.is_dir() and not p.is_symlink())


def list_projects(home: Path) -> list[ProjectEntry]:
    """Return every project of the store with the workspace it recorded."""
    entries = []
    for directory in project_dirs(home):
        probe = _manager_at(home, directory, directory)
        root = recorded_workspace_root(probe)
        manager = _manager_at(home, directory, Path(root)) if root else probe
        entries.append(ProjectEntry(manager, root))
    return entries


def recorded_workspace_root(manager: SessionManager) -> str | None:
    """Return the workspace root recorded in a project's logs or snapshots."""
    for session_id in sorted(manager.layout.session_ids()):
        log = manager.layout.log_path(session_id)
        if not log.is_symlink() and (root := workspace_in_log(log)):
            return root
        snapshot = manager.layout.snapshot_path(session_id)
        if snapshot.is_symlink():
            continue
        try:
            raw = read_json_file(snapshot, max_bytes=_SNAPSHOT_LIMIT)
        except (ValueError, OSError):
            continue
        if isinstance(raw, dict) and isinstance(raw.get("workspace_root"), str):
            return str(raw["workspace_root"])
    return None


def pointer_files(manager: SessionManager) -> list[PointerFile]:
    """Return the project's `active_*.json` pointer files, sorted by name."""
    if not manager.layout.sessions_dir.is_dir():
        return []
    pointers = []
    for path in sorted(manager.layout.sessions_dir.glob(f"{POINTER_PREFIX}*{POINTER_SUFFIX}")):
        instance = path.name[len(POINTER_PREFIX) : -len(POINTER_SUFFIX)]
        pointers.append(PointerFile(path, instance))
    return pointers


def pointers_to(manager: SessionManager, session_id: str) -> list[PointerFile]:
    """Return the valid pointers that name `session_id` (read while the session exists)."""
    return [
        pointer
        for pointer in pointer_files(manager)
        if pointer.valid and manager.read_pointer(pointer.instance_id) == session_id
    ]


def _manager_at(home: Path, project_dir: Path, workspace_root: Path) -> SessionManager:
    # A moved or unknown workspace: its directory as it is, never labelled with an identity
    # it may not have.
    return SessionManager(workspace_root, home=home, at=project_dir)
