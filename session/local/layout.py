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
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SessionError, SessionNotFoundError
from ..paths import is_valid_instance_id, is_valid_session_id, storage_root
from ..storage import StorageError, ensure_private_dir, read_json_file
from ..store.rows import ListedRow, SessionInfo, row_info
from ..workspace.identity import project_identity
from .listing import listed_fields
from .listing_db import ListingFile
from .listing_index import ListingIndex
from .locks import is_held
from .projects import find_project_dir, mark

if TYPE_CHECKING:
    from .listing import ListedState


# `sessions/active_<instanceId>.json`: the session an editor instance last used.
POINTER_PREFIX, POINTER_SUFFIX = "active_", ".json"

logger = logging.getLogger(__name__)


class ProjectLayout:
    """The directories and file names of one project's sessions."""

    def __init__(self, workspace_root: Path, *, home: Path | None = None) -> None:
        self.workspace_root = workspace_root.resolve()
        self.home = home if home is not None else storage_root()
        self.identity = project_identity(self.workspace_root)
        self.adopt = True  # record the identity in the project directory at the first write
        self._marked = False
        self.project_dir = find_project_dir(
            self.home / "projects", self.workspace_root, self.identity
        )
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

    def _checked(self, session_id: str) -> str:
        if not is_valid_session_id(session_id):
            raise SessionNotFoundError(f"invalid session id {session_id!r}")
        return session_id

    def log_path(self, session_id: str) -> Path:
        """Return `sessions/<id>.events.jsonl`."""
        return self.sessions_dir / f"{self._checked(session_id)}.events.jsonl"

    def snapshot_path(self, session_id: str) -> Path:
        """Return `sessions/<id>.json`."""
        return self.sessions_dir / f"{self._checked(session_id)}.json"

    def lock_path(self, session_id: str) -> Path:
        """Return `sessions/<id>.lock`."""
        return self.sessions_dir / f"{self._checked(session_id)}.lock"

    def list_sessions_page(
        self, offset: int = 0, limit: int | None = None, *, empty: bool = False
    ) -> tuple[list[SessionInfo], int]:
        """Return a page of the sessions, newest first, and how many there are.

        Without `empty`, the sessions without a turn are folded (`list_rows_page`).
        """
        rows, total, _, _ = self._listed(offset, limit, empty, None)
        return [row_info(row) for row in rows], total

    def list_rows_page(
        self,
        offset: int = 0,
        limit: int | None = None,
        *,
        empty: bool = False,
        keep: str | None = None,
    ) -> tuple[list[ListedRow], int, int]:
        """Return a page as stored (times as RFC 3339 text: no object per row), and the total.

        Without `empty`, the sessions without a turn (saved at an exit without one) but
        `keep` are folded: left out of the page and the total; the last value counts them.
        """
        rows, total, _, folded = self._listed(offset, limit, empty, keep)
        return rows, total, folded

    def list_rows_in_use(
        self, offset: int = 0, limit: int | None = None, *, empty: bool = False
    ) -> tuple[list[ListedRow], int, set[str], int]:
        """Return a page as stored, its total, which of it a process holds, and the folded.

        The folded: how many sessions without a turn were left out (none with `empty`). The
        rows' times are RFC 3339 text, as JSON shows them: 10,000 rows are listed without an
        object each. The lock files to probe are those the listing saw.
        """
        rows, total, locked, folded = self._listed(offset, limit, empty, None)
        wanted = {row[0] for row in rows}
        return rows, total, self._probe(wanted.intersection(locked)), folded

    def _listed(
        self, offset: int, limit: int | None, empty: bool, keep: str | None
    ) -> tuple[list[ListedRow], int, set[str], int]:
        try:
            self.check_store_dirs()
        except StorageError as exc:
            logger.warning("%s: sessions not listed (%s)", self.sessions_dir, exc)
            return [], 0, set(), 0
        if not self.sessions_dir.is_dir():
            return [], 0, set(), 0
        index = ListingIndex(self.project_dir)
        rows, total, folded = index.rows(
            self.sessions_dir, self.listed_snapshot, offset, limit, empty=empty, keep=keep
        )
        return rows, total, index.locked, folded

    def listed_snapshot(self, session_id: str) -> ListedState | None:
        """Return what a changed listing row is rebuilt from (None: the log, without one).

        A snapshot as our writer makes it is read without the models; any other goes to the
        full reader, which warns and falls back as opening the session would.
        """
        path = self.snapshot_path(session_id)
        try:
            fields = listed_fields(read_json_file(path), session_id)
        except FileNotFoundError:
            return None
        except ValueError:  # unreadable: the full reader says why
            fields = None
        if fields is not None:
            return fields
        from .snapshots import read_snapshot_file  # the models: only for an unusual snapshot

        return read_snapshot_file(path, session_id, None)[0]

    def held_locks(self, session_ids: Iterable[str]) -> set[str]:
        """Return the sessions among `session_ids` whose writer lock a process holds now.

        A few are probed by name; for many, one listing of `sessions/` says which have a lock
        file to probe. A probe takes the lock for an instant, creating and following nothing;
        a lock file no process holds (its writer died) is removed then.
        """
        wanted = set(session_ids)
        if len(wanted) <= _PROBE_BY_NAME:  # a page: cheaper than listing 20,000 names
            return self._probe(wanted)
        try:
            names = os.listdir(self.sessions_dir)
        except OSError:
            return set()
        return self._probe(wanted.intersection(n[:-5] for n in names if n.endswith(".lock")))

    def _probe(self, locked: Iterable[str]) -> set[str]:
        held: set[str] = set()
        died: list[Path] = []
        for sid in locked:
            if is_held(self.sessions_dir / f"{sid}.lock", removed=died):
                held.add(sid)
        listing = ListingFile(self.project_dir)
        for path in died:  # a writer that died: its lock file no longer says so to listings
            listing.note_written(path.name[:-5])
        return held

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


_PROBE_BY_NAME = 200  # up to this many sessions, each lock file is opened by its name
