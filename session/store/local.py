"""The local store behind the one interface: a thin adapter over today's files.

`SessionManager` (layout, pointers, `flock` locks), `Session` and `EventLog` (one `write()`
per event, an `fsync` at durable points) and `CheckpointStore` (records and blobs) do
the work exactly as they do for the server; this only gives them the interface's shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..checkpoints import CheckpointRecord, CheckpointStore
from ..errors import ReadOnlySessionError, SessionError, SessionNotFoundError
from ..events import Event, Persistence
from ..log.writer import LogError
from ..redaction import Redactor
from ..snapshot import SessionState
from .backend import StoreKind
from .listing import SessionInfo
from .manager import SessionManager
from .session import Session


class LocalEventWriter:
    """An open local session: its `Session` (log, state, history) and its `flock`."""

    def __init__(self, manager: SessionManager, session: Session) -> None:
        self.manager = manager
        self.session = session

    @property
    def session_id(self) -> str:
        """Return the session id."""
        return self.session.session_id

    @property
    def state(self) -> SessionState:
        """Return the snapshot projection."""
        return self.session.state

    @property
    def next_seq(self) -> int:
        """Return the seq of the next event."""
        return self.session.log.next_seq

    def append(
        self,
        type_: str,
        data: Mapping[str, Any],
        *,
        turn: int | None = None,
        step: int | None = None,
        sync: bool | None = None,
    ) -> Event:
        """Append one event to the log (fsynced at durable points)."""
        return self.session.append(type_, data, turn=turn, step=step, sync=sync)

    def sync(self) -> None:
        """Fsync the log."""
        try:
            self.session.log.sync()
        except LogError as exc:
            raise SessionError(str(exc), errno=exc.errno) from None

    def write_snapshot(self) -> None:
        """Write `<id>.json` atomically at the last turn boundary."""
        self.manager.write_snapshot(self.session)

    def close(self) -> None:
        """Fsync and close the log, release the lock."""
        self.session.close()


class LocalSessionStore:
    """The sessions of one project under the store root, in files."""

    def __init__(self, workspace_root: Path, *, home: Path | None = None) -> None:
        self.manager = SessionManager(workspace_root, home=home)
        self.checkpoint_store = CheckpointStore(self.manager)

    @property
    def kind(self) -> StoreKind:
        """Return `local`."""
        return "local"

    def new_session_id(self) -> str:
        """Return a fresh id unused in this project."""
        return self.manager.new_session_id()

    def exists(self, session_id: str) -> bool:
        """Return True if the session has a log or a snapshot."""
        return self.manager.exists(session_id)

    def create_session(
        self,
        *,
        session_id: str | None = None,
        instance_id: str | None = None,
        persistence: Persistence = "full",
        redactor: Redactor | None = None,
        parent_session_id: str | None = None,
        fork_boundary: int | None = None,
    ) -> LocalEventWriter:
        """Create a session, locked, starting with `session/start`."""
        if session_id is not None and self.manager.exists(session_id):
            raise SessionError(f"session {session_id} already exists in this project")
        session = self.manager.create_session(
            instance_id=instance_id,
            persistence=persistence,
            redactor=redactor,
            session_id=session_id,
            parent_session_id=parent_session_id,
            fork_boundary=fork_boundary,
        )
        return LocalEventWriter(self.manager, session)

    def open_writer(self, session_id: str, *, redactor: Redactor | None = None) -> LocalEventWriter:
        """Open a session for appending: snapshot plus the log after it."""
        session = self.manager.open_session(session_id, redactor=redactor)
        if session.read_only_reason is not None:
            session.close()
            raise ReadOnlySessionError(
                f"session {session_id} is read-only: {session.read_only_reason}"
            )
        return LocalEventWriter(self.manager, session)

    def read_events(self, session_id: str, from_seq: int = 0) -> list[Event]:
        """Return the readable events of the log from `from_seq` on."""
        if not self.manager.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id} in this project")
        return [e for e in self.manager.read_events(session_id).events if e.seq >= from_seq]

    def read_snapshot(self, session_id: str) -> SessionState | None:
        """Return the session's snapshot (migrated), or None."""
        return self.manager.read_snapshot(session_id)[0]

    def read_pointer(self, instance_id: str) -> str | None:
        """Return the session `active_<instance>.json` names, if it still exists."""
        return self.manager.read_pointer(instance_id)

    def write_pointer(self, instance_id: str, session_id: str) -> None:
        """Write `active_<instance>.json` atomically."""
        if not self.manager.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id} in this project")
        self.manager.write_pointer(instance_id, session_id)

    def delete_pointer(self, instance_id: str) -> None:
        """Remove `active_<instance>.json`."""
        self.manager.delete_pointer(instance_id)

    def list_sessions(self) -> list[SessionInfo]:
        """Return the listing, newest first (`listing.sqlite`)."""
        return self.manager.list_sessions()

    def delete_session(self, session_id: str) -> bool:
        """Delete the session's log, snapshot, lock and checkpoint records."""
        return bool(self.manager.delete_session(session_id))

    def put_blob(self, data: bytes) -> str:
        """Store `blobs/<aa>/<sha256>` once."""
        return self.checkpoint_store.write_blob(data)

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's bytes if intact."""
        return self.checkpoint_store.read_blob(digest)

    def put_checkpoint(self, record: CheckpointRecord) -> None:
        """Write `checkpoints/<id>/<n>.json` (its session and blobs must exist)."""
        if not self.manager.exists(record.session_id):
            raise SessionNotFoundError(f"no session {record.session_id} in this project")
        if self.checkpoint_store.load(record.session_id, record.number) is not None:
            raise SessionError(
                f"session {record.session_id} already has checkpoint {record.number}"
            )
        missing = [
            digest
            for digest in record.files.values()
            if not self.checkpoint_store.blob_path(digest).is_file()
        ]
        if missing:
            raise SessionError(
                f"checkpoint {record.number} of session {record.session_id} refers to a blob "
                f"the store does not hold ({missing[0][:12]}…)"
            )
        self.checkpoint_store.write_record(record)

    def checkpoints(self, session_id: str) -> list[CheckpointRecord]:
        """Return the session's checkpoint records, by number."""
        return self.checkpoint_store.records(session_id)

    def close(self) -> None:
        """Nothing is held open between calls."""
