"""The one interface of a session store, whichever holds the sessions.

What `SessionLifecycle`, `fork`, `checkpoints` and the catalog need from a store: a session
created or opened for writing by one process only (`EventWriter`, which holds the lock),
events appended with dense seqs and read from a seq, snapshots, the pointers of editor
instances, the listing, checkpoint records with content-addressed blobs, and deletion.

Two implementations keep one contract (`tests/store/test_contract.py`):

- `store/local.py` `LocalSessionStore`: the files of one project (`SessionManager`,
  `EventLog`, `CheckpointStore`); the lock is an `flock` on `<id>.lock`;
- `pg/backend.py` `PgSessionStore`: PostgreSQL (`PgStore`); the lock is an advisory lock
  held by the writer's own connection.

Either way a second writer gets `SessionLockedError`, and the lock goes with the holder's
process. Durability is the same promise: once an event of `DURABLE_TYPES` (a completed
turn's `turn/end`, a save, a rewind, a compaction) or `sync()` returns, everything
appended before it survives a power loss. Locally each event is one `write()` and those
points `fsync`; PostgreSQL commits each event or batch of streamed chunks without waiting
for the WAL flush, and those points commit with `synchronous_commit = on`.

PostgreSQL cannot hold U+0000 in text or jsonb: an event read back from it has U+FFFD
where the local log keeps U+0000 (and jsonb does not keep key order or spacing, so events
are compared as values, never as bytes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

from ..checkpoints import CheckpointRecord
from ..events import Event, Persistence
from ..log.writer import SYNC_TYPES
from ..redaction import Redactor
from ..snapshot import SessionState
from .listing import SessionInfo

StoreKind = Literal["local", "postgresql"]
DURABLE_TYPES = SYNC_TYPES


class EventWriter(Protocol):
    """One open session's writing end: it holds the session's lock until `close`."""

    @property
    def session_id(self) -> str:
        """Return the session id."""
        ...

    @property
    def state(self) -> SessionState:
        """Return the snapshot projection, with every appended event folded in."""
        ...

    @property
    def next_seq(self) -> int:
        """Return the seq the next appended event gets."""
        ...

    def append(
        self,
        type_: str,
        data: Mapping[str, Any],
        *,
        turn: int | None = None,
        step: int | None = None,
        sync: bool | None = None,
    ) -> Event:
        """Validate, scrub and append one event (durable on return if `sync`, by default its type).

        The event returned is unscrubbed, for in-memory use; with `sync` None, types in
        `DURABLE_TYPES` are durable when this returns.
        """
        ...

    def sync(self) -> None:
        """Make everything appended so far durable."""
        ...

    def write_snapshot(self) -> None:
        """Store the snapshot of what has been appended (scrubbed)."""
        ...

    def close(self) -> None:
        """Make everything durable and release the lock (safe to call twice)."""
        ...


class SessionStore(Protocol):
    """The sessions of one project, in files or in a database."""

    @property
    def kind(self) -> StoreKind:
        """Return which store this is."""
        ...

    def new_session_id(self) -> str:
        """Return a fresh random id no session of this store uses."""
        ...

    def exists(self, session_id: str) -> bool:
        """Return True if the store holds the session."""
        ...

    def create_session(
        self,
        *,
        session_id: str | None = None,
        instance_id: str | None = None,
        persistence: Persistence = "full",
        redactor: Redactor | None = None,
        parent_session_id: str | None = None,
        fork_boundary: int | None = None,
    ) -> EventWriter:
        """Create a session, locked, its first event `session/start` (seq 0)."""
        ...

    def open_writer(self, session_id: str, *, redactor: Redactor | None = None) -> EventWriter:
        """Open a session for appending (`SessionLockedError` if another process writes it).

        A turn its last writer left open is closed with a synthesized `turn/end`
        (`interrupted`); a session that must not be written raises `ReadOnlySessionError`.
        """
        ...

    def read_events(self, session_id: str, from_seq: int = 0) -> list[Event]:
        """Return the session's events with `seq >= from_seq`, in order."""
        ...

    def read_snapshot(self, session_id: str) -> SessionState | None:
        """Return the session's stored snapshot, or None."""
        ...

    def read_pointer(self, instance_id: str) -> str | None:
        """Return the existing session an editor instance last used, or None."""
        ...

    def write_pointer(self, instance_id: str, session_id: str) -> None:
        """Point an editor instance at a session."""
        ...

    def delete_pointer(self, instance_id: str) -> None:
        """Forget an editor instance's pointer."""
        ...

    def list_sessions(self) -> list[SessionInfo]:
        """Return the listing rows, the most recently active session first."""
        ...

    def delete_session(self, session_id: str) -> bool:
        """Delete a session with its events, snapshot and checkpoints; True if it existed."""
        ...

    def put_blob(self, data: bytes) -> str:
        """Store bytes once (the same bytes again add nothing); return their SHA-256."""
        ...

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's bytes if it is stored and intact, else None."""
        ...

    def put_checkpoint(self, record: CheckpointRecord) -> None:
        """Store a checkpoint record once (its blobs first); a number used again is an error."""
        ...

    def checkpoints(self, session_id: str) -> list[CheckpointRecord]:
        """Return a session's checkpoint records, by number."""
        ...

    def close(self) -> None:
        """Let go of what the store holds open (writers are closed by their owners)."""
        ...
