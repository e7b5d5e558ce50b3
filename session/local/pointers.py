"""The editor instances' pointers (`sessions/active_<instanceId>.json`), and the stale ones.

`Pointers` reads, writes and removes the pointer of an instance: the session it last used.

An editor that sends no `instanceId` is the instance `<client>-<processId>`: a new one at
each launch, so each launch left an `active_<instance>.json` nobody would read again. Such
a pointer records the editor it was written for (`client`, `processId`); it is stale once
that process is gone and no process holds the session it names. Only the pointer file is
removed, never a session's data. Pointers without that record (an `instanceId` the user
chose, or one written before it was recorded) are never taken for stale.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SessionNotFoundError
from ..events import utcnow
from ..paths import is_valid_instance_id, is_valid_session_id
from ..storage import StorageError, atomic_write_json, fsync_dir, read_json_file, unlink_quiet
from ..store.editor import EditorProcess
from .layout import POINTER_PREFIX, POINTER_SUFFIX
from .snapshots import log_warning

if TYPE_CHECKING:
    from collections.abc import Callable

    from .project_listing import ProjectListing

logger = logging.getLogger(__name__)

_POINTER_BYTES = 64 * 1024


@dataclass(frozen=True)
class StalePointer:
    """A pointer of an editor process that is gone, naming a session no process holds."""

    path: Path
    instance_id: str
    session_id: str | None
    editor: EditorProcess


def process_alive(pid: int) -> bool:
    """Return True if a process with `pid` exists (ours to signal or not)."""
    if pid <= 0:
        return True  # never a process group: taken as alive, the pointer is kept
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # not ours to signal (it exists), or anything else: kept
        return True
    return True


def _recorded_editor(path: Path) -> tuple[str | None, EditorProcess] | None:
    """Return the session a pointer names and the editor it records, if it records one."""
    try:
        raw = read_json_file(path, max_bytes=_POINTER_BYTES)
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    client, pid = raw.get("client"), raw.get("processId")
    if not isinstance(client, str) or type(pid) is not int:
        return None
    session_id = raw.get("sessionId")
    valid = is_valid_session_id(session_id)
    return (str(session_id) if valid else None), EditorProcess(client, pid)


def stale_pointers(
    listing: ProjectListing, *, client: str | None = None, keep: str | None = None
) -> list[StalePointer]:
    """Return the project's stale pointers (of editor `client` only, if given).

    `keep`: an instance whose pointer is never returned (the caller's own).
    """
    directory = listing.layout.sessions_dir
    try:
        with os.scandir(directory) as entries:
            names = [
                e.name
                for e in entries
                if e.name.startswith(POINTER_PREFIX) and e.name.endswith(POINTER_SUFFIX)
            ]
    except OSError:
        return []
    found: list[StalePointer] = []
    for name in sorted(names):
        instance = name[len(POINTER_PREFIX) : -len(POINTER_SUFFIX)]
        if instance == keep or not is_valid_instance_id(instance):
            continue
        path = directory / name
        if path.is_symlink():
            continue
        recorded = _recorded_editor(path)
        if recorded is None:
            continue
        session_id, editor = recorded
        if (client is None or editor.client == client) and not process_alive(editor.pid):
            found.append(StalePointer(path, instance, session_id, editor))
    if not found:
        return []
    held = listing.held_locks(p.session_id for p in found if p.session_id is not None)
    return [p for p in found if p.session_id not in held]


def remove_stale_pointers(
    listing: ProjectListing, *, client: str | None = None, keep: str | None = None
) -> list[Path]:
    """Remove the project's stale pointer files (see `stale_pointers`); return them."""
    removed = []
    for pointer in stale_pointers(listing, client=client, keep=keep):
        try:
            if unlink_quiet(pointer.path):
                removed.append(pointer.path)
        except OSError as exc:  # not ours to remove: left as it is
            logger.warning("%s: stale pointer not removed (%s)", pointer.path, exc)
    if removed:
        fsync_dir(listing.layout.sessions_dir)
        logger.info("removed %d stale pointer(s) of editors that are gone", len(removed))
    return removed


def pointers_naming(sessions_dir: Path, session_id: str) -> list[Path]:
    """Return the pointer files that name `session_id` (unreadable ones are not)."""
    if not sessions_dir.is_dir():
        return []
    found = []
    for path in sorted(sessions_dir.glob(f"{POINTER_PREFIX}*{POINTER_SUFFIX}")):
        try:
            raw = read_json_file(path, max_bytes=64 * 1024)
        except (OSError, ValueError):
            continue
        if isinstance(raw, dict) and raw.get("sessionId") == session_id:
            found.append(path)
    return found


def points_to(path: Path, session_id: str, record: dict[str, object]) -> bool:
    """Return True if the pointer file at `path` names `session_id` and records `record`.

    Exactly: the same keys (its `updatedAt` aside) and values; unreadable is False.
    """
    try:
        raw = read_json_file(path, max_bytes=64 * 1024)
    except (OSError, ValueError):
        return False
    return (
        isinstance(raw, dict)
        and raw.keys() == {"sessionId", "updatedAt", *record}
        and raw["sessionId"] == session_id
        and all(raw[key] == value for key, value in record.items())
    )


class Pointers:
    """The pointers of one project's editor instances, each naming a session that exists."""

    def __init__(self, listing: ProjectListing, exists: Callable[[str], bool]) -> None:
        self.layout, self.listing, self._exists = listing.layout, listing, exists

    def read(self, instance_id: str, warnings: list[str] | None = None) -> str | None:
        """Return the session id this instance last used, or None (tampering → warning)."""
        path = self.layout.pointer_path(instance_id)
        try:
            self.layout.check_store_dirs()
        except StorageError as exc:
            log_warning(warnings, f"{path}: ignored ({exc})")
            return None
        try:
            raw = read_json_file(path, max_bytes=_POINTER_BYTES)
        except FileNotFoundError:
            return None
        except ValueError as exc:
            log_warning(warnings, f"{path}: ignored ({exc})")
            return None
        session_id = raw.get("sessionId") if isinstance(raw, dict) else None
        if not is_valid_session_id(session_id):
            log_warning(warnings, f"{path}: ignored (no valid sessionId)")
            return None
        assert isinstance(session_id, str)
        if not self._exists(session_id):
            log_warning(warnings, f"{path}: points to session {session_id}, which no longer exists")
            return None
        return session_id

    def write(self, instance_id: str, session_id: str, editor: EditorProcess | None) -> None:
        """Point this editor instance at `session_id` (which must exist).

        `editor`: the editor process the instance is named after, recorded so the pointer
        can be removed once that process is gone. A pointer that says so already is left as
        it is (a resume of the session it names fsyncs nothing).
        """
        if not self._exists(session_id):
            raise SessionNotFoundError(f"no session {session_id} in this project")
        self.layout.ensure_dirs()
        path, record = self.layout.pointer_path(instance_id), editor.record() if editor else {}
        if not points_to(path, self.layout.checked(session_id), record):
            pointer = {"sessionId": session_id, "updatedAt": utcnow().isoformat()}
            atomic_write_json(path, pointer | record)

    def delete(self, instance_id: str) -> None:
        """Remove this instance's pointer."""
        if unlink_quiet(self.layout.pointer_path(instance_id)):
            fsync_dir(self.layout.sessions_dir)

    def forget_stale(self, client: str | None, keep: str) -> None:
        """Remove `client`'s stale pointer files."""
        remove_stale_pointers(self.listing, client=client, keep=keep)
