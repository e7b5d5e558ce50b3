"""The PostgreSQL store behind the one interface (`session/store/backend.py`).

`PgSessionStore` is one project's view of a `PgStore` (rows whose `project` is the local
`<name>_<hash8>`); `PgEventWriter` is an open session: it holds the advisory lock on its
own connection, numbers events itself (it is the only writer) and folds them into the
session's `SessionState`.

Streamed `assistant/chunk` events are batched: they are committed with the next other
event, or once `CHUNK_BATCH` of them or `CHUNK_DELAY` seconds have gathered (checked as
each arrives), in one transaction. Everything else is committed as it is appended; with
`synchronous_commit = off` unless it is a durable point, so a completed turn costs one
flush of the WAL, as the local log costs one `fsync`. If the writer's process dies, what
it had not committed yet (at most a batch of chunks) is lost; locally those chunks would
be in the file. A batch's age is checked only as a chunk arrives: a stream that stalls
keeps its last chunks until the next event.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..checkpoints import CheckpointRecord
from ..errors import ReadOnlySessionError, SessionError, SessionNotFoundError
from ..events import EVENT_ADAPTER, Event, Persistence, utcnow
from ..paths import is_valid_session_id, project_dir_name
from ..redaction import Redactor
from ..snapshot import FutureSchemaError, SessionState, migrate_snapshot, state_from_events
from ..snapshot import apply_event_to_state as fold
from ..store.backend import DURABLE_TYPES, StoreKind
from ..store.listing import SessionInfo
from .store import PgStore
from .writer import SessionWriter

CHUNK_BATCH = 64
CHUNK_DELAY = 0.2  # seconds a streamed chunk may wait for the batch it goes out with
_BATCHED_TYPES = frozenset({"assistant/chunk"})


class PgEventWriter:
    """An open session in PostgreSQL: the writer lock, its state, the batch not yet sent."""

    def __init__(
        self, store: PgStore, writer: SessionWriter, state: SessionState, next_seq: int
    ) -> None:
        self._store = store
        self._writer = writer
        self._state = state
        self._next_seq = next_seq
        self._pending: list[dict[str, Any]] = []
        self._pending_since = 0.0
        self._undurable = False  # committed without waiting for the flush since the last one

    @property
    def session_id(self) -> str:
        """Return the session id."""
        return self._writer.session_id

    @property
    def state(self) -> SessionState:
        """Return the snapshot projection."""
        return self._state

    @property
    def next_seq(self) -> int:
        """Return the seq of the next event."""
        return self._next_seq

    def append(
        self,
        type_: str,
        data: Mapping[str, Any],
        *,
        turn: int | None = None,
        step: int | None = None,
        sync: bool | None = None,
    ) -> Event:
        """Append one event: numbered, validated, folded; committed now, or batched if a chunk."""
        if self._writer.closed:
            raise SessionError(f"session {self.session_id} is closed")
        raw: dict[str, Any] = {
            "seq": self._next_seq,
            "ts": utcnow(),
            "type": type_,
            "turn": turn,
            "step": step,
            "data": dict(data),
        }
        event = EVENT_ADAPTER.validate_python(raw)  # never write what cannot be read back
        if not self._pending:
            self._pending_since = time.monotonic()
        self._pending.append(raw)
        self._next_seq += 1
        fold(self._state, event)
        durable = sync if sync is not None else type_ in DURABLE_TYPES
        if (
            durable
            or type_ not in _BATCHED_TYPES
            or len(self._pending) >= CHUNK_BATCH
            or time.monotonic() - self._pending_since >= CHUNK_DELAY
        ):
            self._flush(durable=durable)
        return event

    def _flush(self, *, durable: bool) -> None:
        if self._pending:
            # Kept until committed: a failed commit leaves them to be sent again.
            self._writer.write(self._pending, durable=durable)
            self._pending = []
            self._undurable = not durable
        elif durable and self._undurable:
            self._writer.sync()
            self._undurable = False

    def sync(self) -> None:
        """Commit what is batched and wait for the WAL flush."""
        self._flush(durable=True)

    def write_snapshot(self) -> None:
        """Store the state as the session's snapshot, after what it covers is durable."""
        self.sync()
        self._store.put_snapshot(self._state, self._writer.redactor)

    def close(self) -> None:
        """Commit durably, release the lock and close its connection."""
        if self._writer.closed:
            return
        try:
            self.sync()
        finally:
            self._writer.release()


class PgSessionStore:
    """One project's sessions in a PostgreSQL store (the connected role's rows only)."""

    def __init__(self, pg: PgStore, workspace_root: Path) -> None:
        self.pg = pg
        self.workspace_root = workspace_root.resolve()
        self.project = project_dir_name(self.workspace_root)

    @classmethod
    def open(cls, dsn: str, workspace_root: Path, **options: Any) -> PgSessionStore:
        """Connect (creating or migrating the schema) and return the project's store."""
        return cls(PgStore.open(dsn, **options), workspace_root)

    @property
    def kind(self) -> StoreKind:
        """Return `postgresql`."""
        return "postgresql"

    def new_session_id(self) -> str:
        """Return a fresh random id unused by this role."""
        while True:
            candidate = secrets.token_hex(6)
            if self.pg.session(candidate) is None:
                return candidate

    def exists(self, session_id: str) -> bool:
        """Return True if this role has the session."""
        return is_valid_session_id(session_id) and self.pg.session(session_id) is not None

    def create_session(
        self,
        *,
        session_id: str | None = None,
        instance_id: str | None = None,
        persistence: Persistence = "full",
        redactor: Redactor | None = None,
        parent_session_id: str | None = None,
        fork_boundary: int | None = None,
    ) -> PgEventWriter:
        """Insert the session's row, take its lock, append `session/start`."""
        session_id = session_id or self.new_session_id()
        self.pg.create_session(
            session_id,
            self.project,
            workspace_root=str(self.workspace_root),
            instance_id=instance_id,
            parent_session_id=parent_session_id,
            fork_boundary=fork_boundary,
            persistence=persistence,
        )
        redactor = redactor or Redactor(metadata_only=persistence == "metadata")
        writer = self.pg.acquire_writer(session_id, redactor.with_mode(persistence == "metadata"))
        state = SessionState(
            session_id=session_id,
            instance_id=instance_id,
            workspace_root=str(self.workspace_root),
            persistence=persistence,
            parent_session_id=parent_session_id,
            fork_boundary=fork_boundary,
        )
        opened = PgEventWriter(self.pg, writer, state, 0)
        try:
            opened.append(
                "session/start",
                {
                    "session_id": session_id,
                    "parent_session_id": parent_session_id,
                    "fork_boundary": fork_boundary,
                    "instance_id": instance_id,
                    "workspace_root": state.workspace_root,
                    "persistence": persistence,
                    "manifest": state.file_manifest,
                },
                sync=True,
            )
        except BaseException:
            writer.release()
            raise
        return opened

    def open_writer(self, session_id: str, *, redactor: Redactor | None = None) -> PgEventWriter:
        """Take the lock, then read the snapshot and the events after it."""
        if not self.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id} in the PostgreSQL store")
        writer = self.pg.acquire_writer(session_id, redactor)
        try:
            return self._opened(session_id, writer)
        except BaseException:
            writer.release()
            raise

    def _opened(self, session_id: str, writer: SessionWriter) -> PgEventWriter:
        row = self.pg.session(session_id)
        if row is None:  # deleted between the check and the lock
            raise SessionNotFoundError(f"no session {session_id} in the PostgreSQL store")
        state = self._snapshot(session_id, read_only_error=True)
        events = self.read_events(session_id, state.last_seq + 1 if state else 0)
        if state is None:
            state = state_from_events(session_id, events)
            state.instance_id, state.workspace_root = row.instance_id, row.workspace_root
        else:
            for event in events:
                fold(state, event)
        if state.last_seq + 1 != row.next_seq:
            raise SessionError(
                f"session {session_id}: its events end at seq {state.last_seq}, but the store "
                f"numbers the next one {row.next_seq}"
            )
        metadata = state.persistence == "metadata"
        writer.redactor = writer.redactor.with_mode(metadata)  # the same secrets
        opened = PgEventWriter(self.pg, writer, state, row.next_seq)
        open_turn = writer.open_turn()
        if open_turn is not None:  # the process that wrote this turn died: close it honestly
            opened.append(
                "turn/end", {"reason": "interrupted", "synthesized": True}, turn=open_turn
            )
        return opened

    def read_events(self, session_id: str, from_seq: int = 0) -> list[Event]:
        """Return the session's events from `from_seq` on (as the log's events)."""
        raws = self.pg.read_events(session_id, from_seq)
        if not raws and not self.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id} in the PostgreSQL store")
        return [EVENT_ADAPTER.validate_python(raw) for raw in raws]

    def read_snapshot(self, session_id: str) -> SessionState | None:
        """Return the stored snapshot (migrated), or None."""
        return self._snapshot(session_id, read_only_error=False)

    def _snapshot(self, session_id: str, *, read_only_error: bool) -> SessionState | None:
        raw = self.pg.snapshot(session_id)
        if raw is None:
            return None
        try:
            data, _version = migrate_snapshot(raw)
        except FutureSchemaError as exc:
            if read_only_error:
                raise ReadOnlySessionError(f"session {session_id} is read-only: {exc}") from None
            data = raw
        except ValueError:
            return None  # rebuilt from the events, as a damaged snapshot file is
        try:
            state = SessionState.model_validate(data)
        except ValidationError:
            return None
        return state if state.session_id == session_id else None

    def read_pointer(self, instance_id: str) -> str | None:
        """Return the session this editor instance last used."""
        return self.pg.pointer(self.project, instance_id)

    def write_pointer(self, instance_id: str, session_id: str) -> None:
        """Point this editor instance at a session."""
        self.pg.set_pointer(self.project, instance_id, session_id)

    def delete_pointer(self, instance_id: str) -> None:
        """Forget this editor instance's pointer."""
        self.pg.delete_pointer(self.project, instance_id)

    def list_sessions(self) -> list[SessionInfo]:
        """Return the project's listing rows, most recently active first."""
        return [
            SessionInfo(
                row.session_id,
                row.title,
                row.created_at,
                row.updated_at,
                row.turns,
                row.parent_session_id,
                row.phase,
            )
            for row in self.pg.list_sessions(self.project)
        ]

    def delete_session(self, session_id: str) -> bool:
        """Delete the session with its events, pointers and checkpoints."""
        return is_valid_session_id(session_id) and self.pg.delete_session(session_id)

    def put_blob(self, data: bytes) -> str:
        """Store bytes once per role."""
        return self.pg.put_blob(data)

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's bytes if intact."""
        try:
            return self.pg.blob(digest)
        except SessionError:
            return None  # damaged: as a local blob that fails its digest

    def put_checkpoint(self, record: CheckpointRecord) -> None:
        """Store a checkpoint record (its blobs must be stored)."""
        if not self.exists(record.session_id):
            raise SessionNotFoundError(f"no session {record.session_id} in the PostgreSQL store")
        self.pg.put_checkpoint(record)

    def checkpoints(self, session_id: str) -> list[CheckpointRecord]:
        """Return the session's checkpoint records, by number."""
        return self.pg.checkpoints(session_id)

    def close(self) -> None:
        """Close the pool."""
        self.pg.close()
