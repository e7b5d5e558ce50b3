"""SessionManager: the local store of one project, made of its parts.

It creates, opens, saves, lists and deletes sessions, and keeps the editor instances'
pointers. Its parts: `layout` (where the project's files live), `listing` (the session
list), `checkpoint_files` (checkpoint records and blobs), the locks (`locks.py`); how a
session is opened and how snapshot files are read and written live in their own modules.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..checkpoint_storage import CheckpointRecord
from ..checkpoints import Checkpoints
from ..derive.history import HistoryBuilder
from ..errors import ReadOnlySessionError, SessionError, SessionNotFoundError
from ..events import Event, Persistence
from ..log.reader import LogScan, iter_log, scan_log
from ..log.writer import EventLog
from ..redaction import Redactor
from ..snapshot import SessionState
from ..store.backend import StoreKind
from ..store.editor import EditorProcess
from ..store.rows import ListedRow, SessionInfo
from ..store.seed_store import import_offered
from ..store.session import Lock, Session, write_session_start
from . import pointers as pointer_files
from .checkpoint_files import CheckpointFiles
from .deleting import delete_files
from .fork_source import local_fork_source
from .layout import ProjectLayout
from .listing import last_event_time, last_turn_end
from .local_search import LocalSearch
from .opening import open_from_files
from .pointers import Pointers
from .project_listing import ProjectListing
from .seed_import import import_session
from .snapshots import SnapshotReader, write_snapshot_file

if TYPE_CHECKING:
    from contextlib import AbstractContextManager as ContextManager

    from ..timeline.project import ChangeRows

    Moment = datetime | None
    from ..workspace.identity import ProjectIdentity

__all__ = ["SessionManager"]

logger = logging.getLogger(__name__)


class SessionManager:
    """Creates, opens, saves, lists and deletes the sessions of one project: the local store."""

    def __init__(
        self, workspace_root: Path, *, home: Path | None = None, at: Path | None = None
    ) -> None:
        """`at`: the project directory as it is (`ProjectLayout`), else found by identity."""
        self.layout = ProjectLayout(workspace_root, home=home, at=at)
        self.listing = ProjectListing(self.layout)
        self.pointers = Pointers(self.listing, self.exists)
        self.snapshots = SnapshotReader(self.layout)

    @property
    def workspace_root(self) -> Path:
        """Return the project's workspace root (resolved)."""
        return self.layout.workspace_root

    @property
    def home(self) -> Path:
        """Return the store root."""
        return self.layout.home

    @property
    def identity(self) -> ProjectIdentity:
        """Return the project's identity, which names its directory."""
        return self.layout.identity

    @property
    def kind(self) -> StoreKind:
        """Return `local`."""
        return "local"

    @property
    def label(self) -> str:
        """Return the store root."""
        return str(self.home)

    @property
    def project_name(self) -> str:
        """Return the project's directory name (`<name>-<hash>`), as listings give it."""
        return self.layout.project_dir.name

    read_only_reason = notice = None  # the files have no store-wide read-only mode

    def session_ids(self) -> list[str]:
        """Return the ids of the project's sessions, from the file names."""
        return list(self.layout.session_ids())

    def log_location(self, session_id: str) -> str:
        """Return the session's log file."""
        return str(self.layout.log_path(session_id))

    def new_session_id(self) -> str:
        """Return a fresh random 12-hex id not used in this project."""
        while True:
            candidate = os.urandom(6).hex()
            if not self.layout.has_session(candidate):
                return candidate

    def exists(self, session_id: str) -> bool:
        """Return True if the session has a log or a snapshot."""
        return self.layout.has_session(session_id)

    # -- pointers --------------------------------------------------------------

    def latest_elsewhere(self) -> tuple[str, str | None] | None:
        """Return None: on one machine's files each editor instance resumes its own session."""
        return None

    def session_host(self, session_id: str) -> str | None:
        """Return None: every session here was written on this machine."""
        return None

    def read_pointer(self, instance_id: str, warnings: list[str] | None = None) -> str | None:
        """Return the session id this instance last used, or None (tampering → warning)."""
        return self.pointers.read(instance_id, warnings)

    def write_pointer(
        self, instance_id: str, session_id: str, editor: EditorProcess | None = None
    ) -> None:
        """Point this editor instance at `session_id`, which must exist (`pointers.py`)."""
        self.pointers.write(instance_id, session_id, editor)

    def delete_pointer(self, instance_id: str) -> None:
        """Remove this instance's pointer."""
        self.pointers.delete(instance_id)

    def stale_pointers(self) -> list[str]:
        """Return the instance ids of the pointers of editors that are gone."""
        return [pointer.instance_id for pointer in pointer_files.stale_pointers(self.listing)]

    def remove_stale_pointers(self) -> list[str]:
        """Remove the pointer files of editors that are gone; return them."""
        return [str(path) for path in pointer_files.remove_stale_pointers(self.listing)]

    def forget_stale_pointers(self, client: str | None, keep: str) -> None:
        """Remove `client`'s stale pointer files (`pointers.py`)."""
        self.pointers.forget_stale(client, keep)

    # -- through the interface: search, fork, the seed's store -----------------------

    def open_search(self) -> LocalSearch:
        """Return the search over the project's index (`local_search.py`)."""
        return LocalSearch(self.layout)

    def fork_source(self, session_id: str) -> tuple[list[Event], list[bytes] | None]:
        """Return the session's readable events and their lines (`fork_source.py`)."""
        return local_fork_source(self.layout, session_id)

    def file_changes(self, path: str, since: Moment, until: Moment) -> ContextManager[ChangeRows]:
        """Yield a file's changes from `timeline.sqlite`, caught up first (`timeline/local.py`)."""
        from ..timeline.local import local_changes

        return local_changes(self.layout, path, since, until)

    def has_sessions(self) -> bool:
        """Return True if a session's file is here."""
        return next(self.layout.session_ids(), None) is not None

    def import_seed(self, session_id: str, redactor: Redactor | None) -> None:
        """Import the seed's session offered for resume (`seed_store.py`)."""
        import_offered(self, session_id, partial(import_session, self.listing, redactor=redactor))

    # -- snapshots -------------------------------------------------------------

    def read_snapshot(
        self, session_id: str, warnings: list[str] | None = None, *, keep: bool = False
    ) -> tuple[SessionState | None, str | None]:
        """Read and migrate a snapshot: (state or None, read-only reason or None).

        `keep`: the resume offer's read, handed to the open after it (`SnapshotReader`).
        """
        return self.snapshots.read(session_id, warnings, keep)

    def write_snapshot(self, session: Session, redactor: Redactor | None = None) -> Path:
        """Write the session's snapshot atomically, at the last turn boundary of its log."""
        if session.read_only:
            raise ReadOnlySessionError(f"session is read-only: {session.read_only_reason}")
        self.layout.ensure_dirs()
        path = self.layout.snapshot_path(session.session_id)
        write_snapshot_file(path, session, redactor)
        return path

    # -- open / create ------------------------------------------------------------

    def acquire_lock(self, session_id: str) -> Lock:
        """Take the advisory writer lock of a session, or raise SessionLockedError."""
        return self.listing.lock(session_id)

    def detached_session(
        self, reason: str, *, instance_id: str | None, persistence: Persistence, redactor: Redactor
    ) -> Session:
        """Return a new session that is never written (the store refused): no files."""
        state = SessionState(
            session_id=self.new_session_id(),
            instance_id=instance_id,
            workspace_root=str(self.workspace_root),
            persistence=persistence,
        )
        log = EventLog(self.layout.log_path(state.session_id), redactor=redactor, read_only=True)
        return Session(state, log, HistoryBuilder(), None, read_only_reason=reason)

    def create_session(
        self,
        *,
        instance_id: str | None = None,
        persistence: Persistence = "full",
        redactor: Redactor | None = None,
        session_id: str | None = None,
        parent_session_id: str | None = None,
        fork_boundary: int | None = None,
        write_start: bool = True,
    ) -> Session:
        """Create a new session (locked); its log starts with `session/start`."""
        self.layout.ensure_dirs()
        session_id = session_id or self.new_session_id()
        lock = self.acquire_lock(session_id)
        if self.exists(session_id):
            lock.release()
            raise SessionError(f"session {session_id} already exists in this project")
        redactor = redactor or Redactor(metadata_only=persistence == "metadata")
        state = SessionState(
            session_id=session_id,
            instance_id=instance_id,
            workspace_root=str(self.workspace_root),
            persistence=persistence,
            parent_session_id=parent_session_id,
            fork_boundary=fork_boundary,
        )
        session = Session(
            state,
            EventLog(self.layout.log_path(session_id), redactor=redactor),
            HistoryBuilder(),
            lock,
        )
        if write_start:
            self.start_log(session)
        return session

    def start_log(self, session: Session) -> None:
        """Write the `session/start` event if the log is still empty."""
        write_session_start(session)

    def open_session(
        self,
        session_id: str,
        *,
        redactor: Redactor | None = None,
        read_only: bool = False,
    ) -> Session:
        """Open a session: snapshot + log tail (whole log only when the snapshot is stale)."""
        self.layout.checked(session_id)
        self.layout.check_store_dirs()
        if not self.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id} in this project")
        lock = None if read_only else self.acquire_lock(session_id)
        try:
            return self._open_locked(session_id, lock, redactor, read_only)
        except BaseException:
            if lock is not None:
                lock.release()
            raise

    def _open_locked(
        self,
        session_id: str,
        lock: Lock | None,
        redactor: Redactor | None,
        read_only: bool,
    ) -> Session:
        warnings: list[str] = []
        snapshot = self.read_snapshot(session_id, warnings)
        session = open_from_files(
            session_id,
            self.layout.log_path(session_id),
            snapshot,
            warnings,
            lock=lock,
            redactor=redactor,
            read_only=read_only,
        )
        if not session.read_only and session.log.next_seq == 0:
            saved_at = session.state.updated_at  # a file without a log (the seed's): its save
            self.start_log(session)
            session.state.updated_at = saved_at  # stays "last active" for the resume block
        for message in warnings:
            logger.warning("%s", message)
        return session

    def read_events(self, session_id: str) -> LogScan:
        """Read a session's whole log (for transcripts, search, fork)."""
        self.layout.check_store_dirs()
        if not self.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id} in this project")
        return scan_log(self.layout.log_path(session_id))

    def iter_events(
        self, session_id: str, *, types: frozenset[str] | None = None
    ) -> Iterator[Event]:
        """Yield a session's readable events (of `types`), one log line in memory at a time."""
        self.layout.check_store_dirs()
        if not self.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id} in this project")
        return iter_log(self.layout.log_path(session_id), types)

    def save(self, session: Session) -> Path:
        """Fsync the log and write the snapshot."""
        session.log.sync()
        return self.write_snapshot(session)

    # -- listing / deleting -----------------------------------------------------------

    def last_event_time(self, session_id: str) -> datetime | None:
        """Return the time of the log's last recorded event (recovery markers aside).

        Reads only the end of the log: the snapshot's time is stale after a crash.
        """
        return last_event_time(self.layout.log_path(session_id))

    def last_turn_end(self, session_id: str) -> str | None:
        """Return how the session's last turn ended when not completed (`interrupted`…)."""
        return last_turn_end(self.layout.log_path(session_id))

    # -- listing (`project_listing.py`) -----------------------------------------

    def list_sessions_page(
        self, offset: int = 0, limit: int | None = None, *, empty: bool = False
    ) -> tuple[list[SessionInfo], int]:
        """Return a page of the sessions, newest first, and how many there are."""
        return self.listing.list_sessions_page(offset, limit, empty=empty)

    def list_rows_page(
        self,
        offset: int = 0,
        limit: int | None = None,
        *,
        empty: bool = False,
        keep: str | None = None,
    ) -> tuple[list[ListedRow], int, int]:
        """Return a page as stored, the total, and how many sessions without a turn it folds."""
        return self.listing.list_rows_page(offset, limit, empty=empty, keep=keep)

    def held_locks(self, session_ids: Iterable[str]) -> set[str]:
        """Return the sessions among `session_ids` whose writer lock a process holds now."""
        return self.listing.held_locks(session_ids)

    def list_sessions(self) -> list[SessionInfo]:
        """List every session newest first, those without a turn too."""
        return self.list_sessions_page(empty=True)[0]

    def delete_session(self, session_id: str) -> list[Path]:
        """Delete a session's log, snapshot, lock, checkpoints and pointers; return them."""
        return delete_files(self.layout, session_id)

    # -- checkpoints and blobs -----------------------------------------------------

    def checkpoint_store(self) -> Checkpoints:
        """Return the checkpoints of this project (`checkpoints/` and `blobs/`)."""
        return Checkpoints(CheckpointFiles(self.layout), self.workspace_root)

    def put_blob(self, data: bytes) -> str:
        """Store `blobs/<aa>/<sha256>` once."""
        return CheckpointFiles(self.layout).write_blob(data)

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's bytes if intact."""
        return CheckpointFiles(self.layout).read_blob(digest)

    def put_checkpoint(self, record: CheckpointRecord) -> None:
        """Write `checkpoints/<id>/<n>.json` (its session and blobs must exist)."""
        if not self.exists(record.session_id):
            raise SessionNotFoundError(f"no session {record.session_id} in this project")
        CheckpointFiles(self.layout).put(record)

    def read_blobs(self, digests: set[str]) -> dict[str, bytes | None]:
        """Return the blobs of `digests`, one file each."""
        return {digest: self.read_blob(digest) for digest in digests}

    def checkpoints(self, session_id: str) -> list[CheckpointRecord]:
        """Return the session's checkpoint records, by number."""
        return CheckpointFiles(self.layout).records(session_id)

    def close(self) -> None:
        """Nothing is held open between calls."""
