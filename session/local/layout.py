"""ProjectLayout: where one project's files live under the store root, checked before use.

The project's directory is found by its portable identity (`local/projects.py`).

```
projects/<name>_<hash8>/sessions/    logs, snapshots, locks, pointers
projects/<name>_<hash8>/checkpoints/ checkpoint records
projects/<name>_<hash8>/blobs/       content-addressed copies of tracked files
```

No path is built from an id that is not checked first, and no directory is used through a
symlink.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ..errors import SessionError, SessionNotFoundError
from ..paths import is_valid_instance_id, is_valid_session_id, storage_root
from ..storage import StorageError, ensure_private_dir
from ..workspace.identity import project_identity
from .projects import find_project_dir, mark

# `sessions/active_<instanceId>.json`: the session an editor instance last used.
POINTER_PREFIX, POINTER_SUFFIX = "active_", ".json"

logger = logging.getLogger(__name__)


class ProjectLayout:
    """The directories and file names of one project's sessions."""

    def __init__(
        self, workspace_root: Path, *, home: Path | None = None, at: Path | None = None
    ) -> None:
        """`at`: the project directory as it is (a moved or unknown workspace's), never labelled."""
        self.workspace_root = workspace_root.resolve()
        self.home = home if home is not None else storage_root()
        self.identity = project_identity(self.workspace_root)
        # Record the identity in the project directory at the first write, unless `at` names
        # a directory whose identity is not known.
        found = find_project_dir(self.home / "projects", self.workspace_root, self.identity)
        self.adopt = at is None or at == found
        self._marked = False
        self.project_dir = found if at is None else at
        self.sessions_dir = self.project_dir / "sessions"
        self.checkpoints_dir = self.project_dir / "checkpoints"
        self.blobs_dir = self.project_dir / "blobs"

    def ensure_dirs(self) -> None:
        """Create the project directories (0700), refusing symlinks; record the identity."""
        for directory in (self.home, self.home / "projects", self.project_dir, self.sessions_dir):
            ensure_private_dir(directory)
        if self.adopt and not self._marked:
            self._marked = mark(self.project_dir, self.identity, self.workspace_root)

    def check_store_dirs(self) -> None:
        """Raise StorageError if a store directory is a symlink: nothing is read through it."""
        for directory in (self.home, self.home / "projects", self.project_dir, self.sessions_dir):
            try:
                st = os.lstat(directory)
            except FileNotFoundError:
                return
            except OSError as exc:
                raise StorageError(f"cannot use {directory}: {exc.strerror or exc}") from None
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
                raise StorageError(f"{directory} is not a plain directory; refusing to use it")

    def checked(self, session_id: str) -> str:
        """Return `session_id` if it is a valid id; else raise SessionNotFoundError."""
        if not is_valid_session_id(session_id):
            raise SessionNotFoundError(f"invalid session id {session_id!r}")
        return session_id

    def log_path(self, session_id: str) -> Path:
        """Return `sessions/<id>.events.jsonl`."""
        return self.sessions_dir / f"{self.checked(session_id)}.events.jsonl"

    def snapshot_path(self, session_id: str) -> Path:
        """Return `sessions/<id>.json`."""
        return self.sessions_dir / f"{self.checked(session_id)}.json"

    def lock_path(self, session_id: str) -> Path:
        """Return `sessions/<id>.lock`."""
        return self.sessions_dir / f"{self.checked(session_id)}.lock"

    def has_session(self, session_id: str) -> bool:
        """Return True if the session has a log or a snapshot."""
        return self.log_path(session_id).exists() or self.snapshot_path(session_id).exists()

    def pointer_path(self, instance_id: str) -> Path:
        """Return `sessions/active_<instanceId>.json`."""
        if not is_valid_instance_id(instance_id):
            raise SessionError(f"invalid instance id {instance_id!r}")
        return self.sessions_dir / f"{POINTER_PREFIX}{instance_id}{POINTER_SUFFIX}"

    def session_ids(self) -> Iterator[str]:
        """Yield the ids of every session in this project (from file names)."""
        if not self.sessions_dir.is_dir():
            return
        try:
            self.check_store_dirs()
        except StorageError as exc:
            logger.warning("%s: sessions not listed (%s)", self.sessions_dir, exc)
            return
        seen: set[str] = set()
        for entry in os.scandir(self.sessions_dir):
            name = entry.name
            for suffix in (".events.jsonl", ".json"):
                if name.endswith(suffix):
                    candidate = name[: -len(suffix)]
                    if is_valid_session_id(candidate) and candidate not in seen:
                        seen.add(candidate)
                        yield candidate
