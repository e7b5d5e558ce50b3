"""Which directory under `projects/` holds a project: found by its portable identity.

A project is named by its identity (`workspace/identity.py`: the origin remote, else the
root commit, else the absolute path). Each project directory keeps that identity in
`project.json` (`{key, kind, how, name}`), written with its first session. Opening a
workspace looks, in order, for

1. a directory whose `project.json` names the same key: the project moved, was renamed, or
   is another clone of the same repository (its sessions are shared; each editor instance
   keeps its own session and lock);
2. the directory named as before identities, `<name>_<hash8>` of the absolute path: it is
   adopted (its `project.json` written at the next write), never moved or renamed;
3. else a new one: `<name>_<digest of the key>` for a repository, `<name>_<hash8>` of the
   path otherwise (as before).

Directories are read without following symlinks; a damaged `project.json` is ignored.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from ..paths import project_dir_name
from ..storage import StorageError, atomic_write_json, read_json_file
from ..workspace.identity import ProjectIdentity

logger = logging.getLogger(__name__)

MARKER = "project.json"
_MARKER_BYTES = 64 * 1024


def read_marker(project_dir: Path) -> str | None:
    """Return the identity key a project directory's `project.json` names, or None."""
    try:
        raw = read_json_file(project_dir / MARKER, max_bytes=_MARKER_BYTES)
    except FileNotFoundError:
        return None
    except ValueError as exc:
        logger.warning("%s: ignored (%s)", project_dir / MARKER, exc)
        return None
    key = raw.get("key") if isinstance(raw, dict) else None
    return key if isinstance(key, str) and key else None


def new_dir_name(workspace_root: Path, identity: ProjectIdentity) -> str:
    """Return the name a new project directory gets."""
    legacy = project_dir_name(workspace_root)
    if identity.kind == "path":
        return legacy
    return f"{legacy.rsplit('_', 1)[0]}_{identity.digest}"


def find_project_dir(projects: Path, workspace_root: Path, identity: ProjectIdentity) -> Path:
    """Return the directory of the project at `workspace_root` (existing or to be made)."""
    legacy = projects / project_dir_name(workspace_root)
    matches: list[Path] = []
    try:
        entries = sorted(os.scandir(projects), key=lambda entry: entry.name)
    except OSError:
        entries = []
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and read_marker(Path(entry.path)) == identity.key:
            matches.append(Path(entry.path))
    if matches:
        # this very path's directory first, if it is one of them; else the oldest name
        return legacy if legacy in matches else matches[0]
    if _is_plain_dir(legacy):
        return legacy
    return projects / new_dir_name(workspace_root, identity)


def mark(project_dir: Path, identity: ProjectIdentity) -> None:
    """Record the identity in `project.json` unless the directory already names one.

    Best effort: a store that refuses it (a full disk) costs nothing but the record, which
    the next write tries again; the project is still found by its path meanwhile.
    """
    marker = project_dir / MARKER
    if marker.exists() or marker.is_symlink():
        return
    try:
        atomic_write_json(
            marker,
            {
                "key": identity.key,
                "kind": identity.kind,
                "how": identity.how,
                "name": identity.name,
            },
        )
    except StorageError as exc:
        logger.warning("%s: the project's identity is not recorded yet (%s)", marker, exc)


def _is_plain_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
