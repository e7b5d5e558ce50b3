"""The one interface of a session store, whichever holds the sessions.

What `SessionLifecycle`, `fork`, checkpoints and the server need from a store: sessions
created or opened for writing by one process only (the returned `Session` holds the lock
until it is closed), events appended with dense seqs and read back, snapshots, the
pointers of editor instances, the listing, checkpoint records with content-addressed
blobs, and deletion. An open `Session` appends through its `SessionLog`, the store's
writing end: numbering, scrubbing, durability; the session folds each event into its
state and history, whichever store wrote it.

Two implementations keep one contract (`tests/store/test_contract.py`):

- `local/manager.py` `SessionManager`: the files of one project; the
  log is an `EventLog`, the lock an `flock` on `<id>.lock`;
- `pg/backend.py` `PgSessionStore`: PostgreSQL (`PgStore`); the log a `PgEventLog`, the lock
  an advisory lock held by the writer's own connection.

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

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from ..events import Event, Persistence
from ..log.writer import SYNC_TYPES
from ..redaction import Redactor

if TYPE_CHECKING:
    from ..checkpoint_storage import CheckpointRecord
    from ..checkpoints import Checkpoints
    from ..log.reader import LogScan
    from ..search.filters import SearchFilter
    from ..search.query import SearchHit
    from ..snapshot import SessionState
    from ..timeline.project import ChangeRows
    from ..workspace.identity import ProjectIdentity
    from .editor import EditorProcess
    from .rows import ListedRow, SessionInfo
    from .session import Session

StoreKind = Literal["local", "postgresql"]
DURABLE_TYPES = SYNC_TYPES


@dataclass(frozen=True)
class BuildProgress:
    """How far the background rebuild is (`SearchIndex.build_step`)."""

    sessions: int  # the project's sessions
    indexed: int  # of them, those already in the new tables
    finished: bool  # the new tables answer; the old ones are gone

    @property
    def percentage(self) -> int:
        """Return the share of sessions indexed, 0-100 (100 only when finished)."""
        if self.finished:
            return 100
        return min(99, 100 * self.indexed // self.sessions) if self.sessions else 0


class StoreSearch(Protocol):
    """A store's literal search: the local store's derived index, or the database's own.

    `store.open_search()` returns one; its owner closes it. Searches may take long (a
    catch-up of the index): call them from a worker thread.
    """

    @property
    def migrating(self) -> bool:
        """Return True while an older index answers and this version's waits to be built."""
        ...

    def search(
        self,
        query: str,
        session_id: str | None = None,
        limit: int = 50,
        filters: SearchFilter | None = None,
        *,
        stale_ok: bool = False,
    ) -> list[SearchHit]:
        """Catch up, then return the events whose text contains `query` (literally), best first.

        `stale_ok`: while `migrating`, an unfiltered search is answered by the older index
        as it is (the caller builds the new one with `build_step`); otherwise the build is
        finished first. Raises `SearchError` (local) or `SessionError` (a database away).
        """
        ...

    def build_step(self) -> BuildProgress:
        """Build a slice of the new index (`finished` at once when none waits)."""
        ...

    def catch_up(self, session_id: str) -> None:
        """Index what `session_id` appended since (after a turn).

        The database's own index catches up when it is searched: nothing to do there.
        """
        ...

    def close(self) -> None:
        """Close what the search opened (the next search opens it again)."""
        ...


class SessionLock(Protocol):
    """A session's writer lock, held until released (by this process only)."""

    def release(self) -> None:
        """Let go of the lock."""
        ...


class SessionStore(Protocol):
    """The sessions of one project, in files or in a database."""

    @property
    def kind(self) -> StoreKind:
        """Return which store this is."""
        ...

    @property
    def label(self) -> str:
        """Return where the sessions are, for messages (never a password)."""
        ...

    @property
    def workspace_root(self) -> Path:
        """Return the project root."""
        ...

    @property
    def project_name(self) -> str:
        """Return the project as listings name it: its directory locally, its key in a database."""
        ...

    @property
    def read_only_reason(self) -> str | None:
        """Return why the store refuses writes (a newer database schema; a reader), else None."""
        ...

    @property
    def notice(self) -> str | None:
        """Return what to tell the user on opening the store (a newer schema: only read)."""
        ...

    @property
    def identity(self) -> ProjectIdentity:
        """Return the project's portable identity (what names its sessions)."""
        ...

    @property
    def home(self) -> Path:
        """Return this machine's agent-assist directory (caches of this machine live there)."""
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
        instance_id: str | None = None,
        persistence: Persistence = "full",
        redactor: Redactor | None = None,
        session_id: str | None = None,
        parent_session_id: str | None = None,
        fork_boundary: int | None = None,
        write_start: bool = True,
    ) -> Session:
        """Create a session, locked; `session/start` (seq 0) now, or at `start_log`."""
        ...

    def start_log(self, session: Session) -> None:
        """Write the session's `session/start` event if nothing is stored yet."""
        ...

    def detached_session(
        self, reason: str, *, instance_id: str | None, persistence: Persistence, redactor: Redactor
    ) -> Session:
        """Return a new session that is never written (the store refused writes)."""
        ...

    def open_session(
        self, session_id: str, *, redactor: Redactor | None = None, read_only: bool = False
    ) -> Session:
        """Open a session: locked for appending (`SessionLockedError` if another writes it).

        A turn its last writer left open is closed with a synthesized `turn/end`
        (`interrupted`); a session that must not be written opens read-only (its
        `read_only_reason` says why), as does any with `read_only`.
        """
        ...

    def read_events(self, session_id: str) -> LogScan:
        """Return the session's readable events, in order, and the problems found."""
        ...

    def iter_events(
        self, session_id: str, *, types: frozenset[str] | None = None
    ) -> Iterator[Event]:
        """Yield the session's readable events in order, a bounded batch in memory at a time.

        For replaying a session however long it is (ACP's `session/load`). `types`: only
        the events of those types (a quick pass, e.g. for the rewinds a replay must know).
        `SessionNotFoundError` if there is no such session (at the first item at the latest).
        """
        ...

    def read_snapshot(
        self, session_id: str, warnings: list[str] | None = None, *, keep: bool = False
    ) -> tuple[SessionState | None, str | None]:
        """Return the session's stored snapshot (migrated) or None, and a read-only reason."""
        ...

    def write_snapshot(self, session: Session) -> object:
        """Store the session's snapshot, at the last turn boundary it has appended."""
        ...

    def save(self, session: Session) -> object:
        """Make the session's events durable and store its snapshot."""
        ...

    def last_event_time(self, session_id: str) -> datetime | None:
        """Return the time of the session's last recorded event."""
        ...

    def last_turn_end(self, session_id: str) -> str | None:
        """Return how the session's last turn ended when not completed (`interrupted`…)."""
        ...

    def read_pointer(self, instance_id: str, warnings: list[str] | None = None) -> str | None:
        """Return the existing session an editor instance last used, or None."""
        ...

    def latest_elsewhere(self) -> tuple[str, str | None] | None:
        """Return, for a shared store, the project's latest session and its host (else None)."""
        ...

    def session_host(self, session_id: str) -> str | None:
        """Return, for a shared store, the machine a session was last written from."""
        ...

    def write_pointer(
        self, instance_id: str, session_id: str, editor: EditorProcess | None = None
    ) -> None:
        """Point an editor instance at a session (`editor`: the one it is named after)."""
        ...

    def delete_pointer(self, instance_id: str) -> None:
        """Forget an editor instance's pointer."""
        ...

    def list_sessions(self) -> list[SessionInfo]:
        """Return every listing row (those without a turn too), most recently active first."""
        ...

    def list_sessions_page(
        self, offset: int = 0, limit: int | None = None, *, empty: bool = False
    ) -> tuple[list[SessionInfo], int]:
        """Return a page of the listing, newest first, and how many sessions it has.

        Without `empty`, the sessions without a turn are folded, as by `list_rows_page`.
        """
        ...

    def list_rows_page(
        self,
        offset: int = 0,
        limit: int | None = None,
        *,
        empty: bool = False,
        keep: str | None = None,
    ) -> tuple[list[ListedRow], int, int]:
        """Return a page of the listing as kept, newest first, its total, and the folded.

        The rows' times are RFC 3339 text (UTC, `Z`), as JSON sends them. Without `empty`,
        the sessions without a turn (saved at an exit without one; a turn's input or a
        summary gives a title, and one with a title is listed) other than `keep` are folded:
        neither on the page nor in the total; the last value says how many.
        """
        ...

    def acquire_lock(self, session_id: str) -> SessionLock:
        """Take a session's writer lock without opening it (`SessionLockedError` if held)."""
        ...

    def delete_session(self, session_id: str) -> Sequence[object]:
        """Delete a session with its events, snapshot, checkpoints and the pointers naming it.

        Return what went. The caller holds the session's lock (`session.deletion`) or knows
        no other process can write it.
        """
        ...

    def held_locks(self, session_ids: Iterable[str]) -> set[str]:
        """Return the sessions among `session_ids` whose writer lock a process holds now.

        Only looked at: no lock is taken (a file lock probed, `pg_locks` read).
        """
        ...

    def session_ids(self) -> list[str]:
        """Return the ids of the project's sessions (empty ones too), in no particular order."""
        ...

    def log_location(self, session_id: str) -> str:
        """Return where a session's events are, for messages: a file, or the database and id."""
        ...

    def stale_pointers(self) -> list[str]:
        """Return the instance ids of the pointers of editors that are gone (sessions idle).

        A shared store keeps none: its pointers come from many machines, where no process
        id says anything.
        """
        ...

    def remove_stale_pointers(self) -> list[str]:
        """Remove the stale pointers (found again: one may have been taken up since).

        Return what went (locally the files).
        """
        ...

    def has_sessions(self) -> bool:
        """Return True if the project has any session here (empty ones included)."""
        ...

    def forget_stale_pointers(self, client: str | None, keep: str) -> None:
        """Remove the pointers of `client`'s earlier launches (all but `keep`).

        Only those whose editor process is gone and whose session no one holds; the
        database keeps no such pointers.
        """
        ...

    def fork_source(self, session_id: str) -> tuple[list[Event], list[bytes] | None]:
        """Return a session's readable events for a fork to copy, and their log lines.

        The lines (byte for byte) locally, else None; a missing or unreadable log is a
        `SessionError`.
        """
        ...

    def import_seed(self, session_id: str, redactor: Redactor | None) -> None:
        """Import the seed's session of this project offered for resume (no-op if here)."""
        ...

    def file_changes(
        self, path: str, since: datetime | None, until: datetime | None
    ) -> AbstractContextManager[ChangeRows]:
        """Yield a workspace file's recorded changes, newest first, and a title lookup.

        The local index is caught up first and read as iterated; PostgreSQL reads its events.
        """
        ...

    def read_blobs(self, digests: set[str]) -> dict[str, bytes | None]:
        """Return the blobs of `digests` (None: absent or damaged), in as few reads as it can."""
        ...

    def open_search(self) -> StoreSearch:
        """Return the store's literal search of this project (its caller closes it)."""
        ...

    def checkpoint_store(self) -> Checkpoints:
        """Return the checkpoints of this project, over this store's records and blobs."""
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
        """Let go of what the store holds open (sessions are closed by their owners)."""
        ...
