"""Which directory under `projects/` holds a project: found by its proved identity.

A project is named by its identity (`workspace/identity.py`: the origin remote with the root
commit, else the root commit, else the absolute path). Each project directory keeps that
identity in `project.json` (`{key, kind, how, name, remote, folders}`), written with its first
session; `folders` are the workspaces that have used it. Opening a workspace looks, in order,
for

1. a directory whose `project.json` names the same key: the project moved, was renamed, or
   is another clone of the same repository (its sessions are shared; each editor instance
   keeps its own session and lock);
2. a directory that claims the same origin remote without this key's proof (recorded before
   the root commit was required, or while it could not be read) and whose `folders` (or,
   recorded before them, its sessions' `session/start`) name this very workspace: it is kept,
   and its `project.json` takes the proved key at the next write;
3. the directory named as before identities, `<name>_<hash8>` of the absolute path: it is
   adopted (its `project.json` written at the next write), never moved or renamed;
4. else a new one: `<name>_<digest of the key>` for a repository, `<name>_<hash8>` of the
   path otherwise (as before).

A remote URL alone never joins two folders: anyone can write it into a `.git/config`.
Directories are read without following symlinks; a damaged `project.json` is ignored.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..paths import project_dir_name
from ..storage import StorageError, atomic_write_json, read_json_file
from ..workspace.identity import ProjectIdentity, claimed_remote

logger = logging.getLogger(__name__)

MARKER = "project.json"
_MARKER_BYTES = 256 * 1024
_MAX_FOLDERS = 256  # the newest kept: a marker stays small whatever moves


def read_marker(project_dir: Path) -> str | None:
    """Return the identity key a project directory's `project.json` names, or None."""
    marker = _read(project_dir)
    return marker["key"] if marker is not None else None


def _read(project_dir: Path) -> dict[str, Any] | None:
    try:
        raw = read_json_file(project_dir / MARKER, max_bytes=_MARKER_BYTES)
    except FileNotFoundError:
        return None
    except ValueError as exc:
        logger.warning("%s: ignored (%s)", project_dir / MARKER, exc)
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("key"), str) or not raw["key"]:
        return None
    return raw


def marker_folders(project_dir: Path) -> list[str]:
    """Return the workspaces a project directory's `project.json` names, the newest last."""
    marker = _read(project_dir)
    folders = marker.get("folders") if marker is not None else None
    return [f for f in folders if isinstance(f, str)] if isinstance(folders, list) else []


def _claim(marker: dict[str, Any]) -> str | None:
    """Return the origin remote a marker claims: its `remote`, or that of a `remote:` key."""
    remote = marker.get("remote")
    return remote if isinstance(remote, str) else claimed_remote(marker["key"])


def _proved(marker: dict[str, Any]) -> bool:
    """Return True if the marker's key is proved (a root commit), not a remote or path alone."""
    key = marker["key"]
    assert isinstance(key, str)
    return key.startswith("commit:") or (key.startswith("remote:") and claimed_remote(key) != key)


def new_dir_name(workspace_root: Path, identity: ProjectIdentity) -> str:
    """Return the name a new project directory gets."""
    legacy = project_dir_name(workspace_root)
    if identity.kind == "path":
        return legacy
    return f"{legacy.rsplit('_', 1)[0]}_{identity.digest}"


def find_project_dir(projects: Path, workspace_root: Path, identity: ProjectIdentity) -> Path:
    """Return the directory of the project at `workspace_root` (existing or to be made)."""
    legacy = projects / project_dir_name(workspace_root)
    markers = sorted(_markers(projects), key=lambda item: (item[0] != legacy, item[0].name))
    for path, marker in markers:  # this very path's directory first; else the oldest name
        if marker["key"] == identity.key:
            return path
    if identity.remote is not None:
        proved = identity.kind != "path"
        for path, marker in markers:
            if _claim(marker) != identity.remote or (proved and _proved(marker)):
                continue
            if used_by(path, marker, workspace_root):
                return path
    if _is_plain_dir(legacy):
        return legacy
    return projects / new_dir_name(workspace_root, identity)


def _markers(projects: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    try:
        entries = list(os.scandir(projects))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and (marker := _read(Path(entry.path))):
            yield Path(entry.path), marker


def used_by(project_dir: Path, marker: dict[str, Any], workspace_root: Path) -> bool:
    """Return True if the project recorded `workspace_root` as one of its folders."""
    root = str(workspace_root)
    folders = marker.get("folders")
    if isinstance(folders, list) and root in folders:
        return True
    return root in recorded_folders(project_dir)


def recorded_folders(project_dir: Path) -> Iterator[str]:
    """Yield the workspace each session's `session/start` recorded (a log's first line)."""
    sessions = project_dir / "sessions"
    try:
        names = sorted(os.listdir(sessions))
    except OSError:
        return
    for name in names:
        if name.endswith(".events.jsonl") and (root := workspace_in_log(sessions / name)):
            yield root


def workspace_in_log(path: Path) -> str | None:
    """Return the workspace root of a log's `session/start` (its first line).

    Read as plain JSON: the admin commands' listing must not load the event models.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            event = orjson.loads(fh.readline(1 << 20))
    except (ValueError, OSError):
        return None
    data = event.get("data") if isinstance(event, dict) else None
    if not isinstance(data, dict) or event.get("type") != "session/start":
        return None
    root = data.get("workspace_root")
    return root if isinstance(root, str) and root else None


def mark(project_dir: Path, identity: ProjectIdentity, workspace_root: Path) -> bool:
    """Record the identity in `project.json`, and `workspace_root` among its folders.

    A directory that already names a key keeps it, unless that key was never proved (an
    origin remote alone, or a path) and this workspace, one of its folders, proves the same
    remote by its root commit: then the proved key replaces it. Best effort: a store that
    refuses it (a full disk) costs nothing but the record, which the next start tries again.
    Return True once the record is as it should be.
    """
    path = project_dir / MARKER
    if path.is_symlink():
        return True
    root = str(workspace_root)
    marker = _read(project_dir) if path.exists() else None
    if marker is None and path.exists():
        return True  # damaged: left for a person to look at, as before
    if marker is None:
        record = _identity_record(identity, [root])
    else:
        folders = marker.get("folders")
        listed = isinstance(folders, list)
        if not isinstance(folders, list):  # recorded before folders: its sessions say which
            folders = list(dict.fromkeys(recorded_folders(project_dir)))
        folders = [folder for folder in folders if isinstance(folder, str)]
        upgrade = (
            identity.remote is not None
            and identity.kind != "path"
            and not _proved(marker)
            and _claim(marker) == identity.remote
        )
        if listed and root in folders and not upgrade:
            return True
        kept = [*[f for f in folders if f != root][-_MAX_FOLDERS + 1 :], root]
        record = _identity_record(identity, kept) if upgrade else {**marker, "folders": kept}
    try:
        atomic_write_json(path, record)
    except StorageError as exc:
        logger.warning("%s: the project's identity is not recorded yet (%s)", path, exc)
        return False
    return True


def _identity_record(identity: ProjectIdentity, folders: list[str]) -> dict[str, Any]:
    record: dict[str, Any] = {
        "key": identity.key,
        "kind": identity.kind,
        "how": identity.how,
        "name": identity.name,
    }
    if identity.remote is not None:
        record["remote"] = identity.remote
    record["folders"] = folders
    return record


def _is_plain_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
