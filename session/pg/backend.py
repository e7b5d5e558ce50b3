"""The PostgreSQL store behind the one interface (`session/store/backend.py`).

`PgSessionStore` is one project's view of a `PgStore` (rows whose `project` is the key
`choose_project` settles on: the workspace's proved identity; another project's session is
not seen, even by its id). An open session is a `Session` like a local one; its log is a
`PgEventLog` (`pg/log.py`), which holds the advisory lock on a connection of its own. A
session's row is made with its first event, so a session nothing was recorded in leaves
nothing behind (as a local one leaves no file).
"""

from __future__ import annotations

import itertools
import secrets
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..checkpoint_storage import CheckpointRecord
from ..checkpoints import Checkpoints
from ..derive.history import HistoryBuilder
from ..errors import SessionError, SessionNotFoundError
from ..events import EVENT_ADAPTER, Event, Persistence
from ..log.reader import LogScan
from ..paths import host_name, is_valid_session_id, storage_root
from ..redaction import Redactor
from ..snapshot import SessionState
from ..store.backend import StoreKind
from ..store.rows import ListedRow, SessionInfo, listed_row
from ..store.session import Session, boundary_state, write_session_start
from ..workspace.identity import project_identity
from .checkpoints import PgCheckpointStorage
from .errors import DatabaseUnreachableError
from .log import PgEventLog, take_up_spool
from .offered import Offered
from .offline import replay_left_spools
from .opening import open_from_rows
from .project import choose_project
from .search import ProjectSearch
from .snapshot_cache import SnapshotCache
from .snapshots import parse_snapshot
from .spool import adopt_legacy_spool, remove_left_spool, spool_dir
from .store import PgStore
from .writer import SessionWriter, held_sessions

if TYPE_CHECKING:
    from contextlib import AbstractContextManager as ContextManager
    from datetime import datetime

    from ..timeline.project import ChangeRows

    Moment = datetime | None


class PgSessionStore(Offered):
    """One project's sessions in a PostgreSQL store (the connected role's rows only)."""

    def __init__(
        self, pg: PgStore, workspace_root: Path, *, home: Path | None = None, offline: str = ""
    ) -> None:
        self.pg = pg
        self.workspace_root = workspace_root.resolve()
        # The project's proved identity: a clone elsewhere, on another machine, is the same.
        self.identity = project_identity(self.workspace_root)
        # Opened while the database is away (`offline.py`): the project is chosen on connecting.
        self.offline_reason = offline or None
        self._connecting, self._pending_pointers, self.caching = threading.Lock(), {}, False
        self.project = self.identity.key
        if not offline:
            self.project = choose_project(pg, self.identity, str(self.workspace_root))
        # Events the database could not take wait here (`pg/spool.py`).
        root = home if home is not None else storage_root()
        self.home = root
        self.spool_dir = spool_dir(root, self.identity)
        self.cache = SnapshotCache(root, self.identity)
        adopt_legacy_spool(root, self.identity)

    @classmethod
    def open(
        cls,
        dsn: str,
        workspace_root: Path,
        *,
        home: Path | None = None,
        offline_ok: bool = False,
        **options: Any,
    ) -> PgSessionStore:
        """Return the project's store, connected (see `PgStore.open`: `create`, `schema`).

        `offline_ok` (a server): a database that does not answer opens it offline
        (`offline.py`), and the store keeps this machine's snapshot cache fresh.
        """
        try:
            store = cls(PgStore.open(dsn, **options), workspace_root, home=home)
        except DatabaseUnreachableError as exc:
            if not offline_ok:
                raise
            kept = {k: v for k, v in options.items() if k in ("schema", "pool_size", "redactor")}
            store = cls(PgStore(dsn, **kept), workspace_root, home=home, offline=str(exc))
        store.caching = offline_ok
        if store.online:
            store.rebuild_cache()
        return store

    # Send the spools a process that died or closed offline left (`offline.py`).
    replay_spools = replay_left_spools

    @property
    def kind(self) -> StoreKind:
        """Return `postgresql`."""
        return "postgresql"

    @property
    def label(self) -> str:
        """Return the database, as `postgresql://role@host:port/db` (never the password)."""
        info = self.pg.info
        return f"postgresql://{info.user}@{info.where}/{info.dbname}"

    @property
    def project_name(self) -> str:
        """Return the project's key in the database (its identity's, or as renamed)."""
        return self.project

    @property
    def read_only_reason(self) -> str | None:
        """Return why the database must not be written (a newer schema; a reader), or None."""
        return self.pg.read_only_reason

    @property
    def notice(self) -> str | None:
        """Return the schema's read-only reason when it is newer than this code, or None."""
        return self.pg.status.read_only_reason if self.pg.status else None

    def session_ids(self) -> list[str]:
        """Return the ids of the project's sessions (one query)."""
        return [info.session_id for info in self.list_sessions()]

    def log_location(self, session_id: str) -> str:
        """Return the database and the session, for messages."""
        return f"{self.label} (session {session_id})"

    def new_session_id(self) -> str:
        """Return a fresh random id unused by this role (nor by a spool here, while away)."""
        if self.offline_reason is not None:
            return self.new_offline_id()
        while True:
            candidate = secrets.token_hex(6)
            if self.pg.session(candidate) is None:
                return candidate

    def exists(self, session_id: str) -> bool:
        """Return True if this project has the session (another project's is not seen)."""
        if not is_valid_session_id(session_id) or self.offline_reason is not None:
            return self.offline_reason is not None and self.away_exists(session_id)
        row = self.pg.session(session_id)
        return row is not None and row.project == self.project

    def _missing(self, session_id: str) -> SessionNotFoundError:
        return SessionNotFoundError(f"no session {session_id} in the PostgreSQL store")

    # -- create / open ---------------------------------------------------------------

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
        """Take a new session's lock; its row and `session/start` come with its first event."""
        session_id = session_id or self.new_session_id()
        redactor = (redactor or Redactor()).with_mode(persistence == "metadata")
        writer = None if self.offline_reason else self.pg.acquire_writer(session_id, redactor)
        if writer is not None and self.pg.session(session_id) is not None:  # any project
            writer.release()
            raise SessionError(f"session {session_id} already exists in the PostgreSQL store")
        create_row = self.row_maker(
            session_id, instance_id, persistence, parent_session_id, fork_boundary
        )
        state = SessionState(
            session_id=session_id,
            instance_id=instance_id,
            workspace_root=str(self.workspace_root),
            persistence=persistence,
            parent_session_id=parent_session_id,
            fork_boundary=fork_boundary,
        )
        scrubber = writer.redactor if writer is not None else self.pg.scrubber(redactor)
        log = self.session_log(session_id, writer, 0, scrubber, create_row)
        session = Session(state, log, HistoryBuilder())
        log.describe = lambda: session.state
        try:
            if write_start:
                self.start_log(session)
        except BaseException:
            log.close()
            raise
        return session

    def start_log(self, session: Session) -> None:
        """Write the `session/start` event if nothing is stored yet (durably: it makes the row)."""
        write_session_start(session)
        session.sync()

    def detached_session(
        self, reason: str, *, instance_id: str | None, persistence: Persistence, redactor: Redactor
    ) -> Session:
        """Return a new session that is never written: no row, no lock."""
        state = SessionState(
            session_id=secrets.token_hex(6),
            instance_id=instance_id,
            workspace_root=str(self.workspace_root),
            persistence=persistence,
        )
        log = PgEventLog(self.pg, state.session_id, None, 0, redactor=redactor)
        return Session(state, log, HistoryBuilder(), read_only_reason=reason)

    def open_session(
        self, session_id: str, *, redactor: Redactor | None = None, read_only: bool = False
    ) -> Session:
        """Take the lock (unless `read_only`), then read the snapshot and the events after it."""
        if not self.exists(session_id):
            raise self._missing(session_id)
        if self.offline_reason is not None:  # born in the spool, or said so (`offline.py`)
            return self.open_spooled(session_id, redactor)
        writer = None if read_only else self.pg.acquire_writer(session_id, redactor)
        try:
            if writer is not None:
                take_up_spool(self.spool_dir, session_id, writer)
                self.pg.set_host(session_id, host_name())
            row = self.pg.session(session_id)
            if row is None:  # deleted between the check and the lock
                raise self._missing(session_id)
            return open_from_rows(self, row, writer, redactor, read_only)
        except BaseException:
            if writer is not None:
                writer.release()
            raise

    # -- reading -------------------------------------------------------------------

    def read_events(self, session_id: str) -> LogScan:
        """Return the session's events (as the log's events)."""
        if self.offline_reason is not None:
            return self.away_events(session_id)
        return LogScan(events=list(self.iter_events(session_id, None)))

    def iter_events(
        self, session_id: str, batch: int | None = 500, *, types: frozenset[str] | None = None
    ) -> Iterator[Event]:
        """Yield the session's events (those of `types` only, if given), a batch at a time."""
        pages = self.pg.event_pages(session_id, batch, types)
        first = next(pages, [])
        if not first and not self.exists(session_id):
            raise self._missing(session_id)
        for raws in itertools.chain([first], pages):
            yield from map(EVENT_ADAPTER.validate_python, raws)

    def read_snapshot(
        self, session_id: str, warnings: list[str] | None = None, *, keep: bool = False
    ) -> tuple[SessionState | None, str | None]:
        """Return the stored snapshot (migrated) or None, and why it is read-only, if it is."""
        if self.offline_reason is not None:
            return self.away_snapshot(session_id, warnings)
        raw = self.pg.snapshot(session_id) if is_valid_session_id(session_id) else None
        if raw is None:
            return None, None
        return parse_snapshot(raw, session_id, warnings)

    def write_snapshot(self, session: Session) -> str:
        """Store the snapshot at the last turn boundary, after what it covers is durable."""
        if session.read_only:
            raise SessionError(f"session is read-only: {session.read_only_reason}")
        session.sync()
        if not session.log.online:  # the events are safe in the spool; the snapshot can wait
            raise SessionError(
                f"the snapshot of session {session.session_id} is not stored while the "
                "database cannot be reached; its events are kept in the local spool"
            )
        self.pg.put_snapshot(boundary_state(session), session.log.redactor)
        self.cache_snapshot(session.session_id)  # what a start while it is away offers
        return self.log_location(session.session_id)

    def save(self, session: Session) -> str:
        """Commit the session's events durably and store its snapshot."""
        return self.write_snapshot(session)

    # -- pointers, listing, deleting (the pointers and times: `offered.py`) ---------

    def list_sessions(self) -> list[SessionInfo]:
        """Return every listing row of the project (none folded), most recently active first."""
        return self.list_sessions_page(empty=True)[0]

    def list_sessions_page(
        self, offset: int = 0, limit: int | None = None, *, empty: bool = False
    ) -> tuple[list[SessionInfo], int]:
        """Return a page of the project's sessions, newest first, and how many there are."""
        rows, total, _ = self.pg.list_sessions_page(
            self.project, max(0, offset), limit, empty=empty
        )
        return [row.info() for row in rows], total

    def list_rows_page(
        self,
        offset: int = 0,
        limit: int | None = None,
        *,
        empty: bool = False,
        keep: str | None = None,
    ) -> tuple[list[ListedRow], int, int]:
        """Return a page of the project's sessions as listed rows, its total and the folded."""
        page = self.pg.list_sessions_page(
            self.project, max(0, offset), limit, empty=empty, keep=keep
        )
        return [listed_row(row) for row in page[0]], page[1], page[2]

    def acquire_lock(self, session_id: str) -> SessionWriter:
        """Take the session's writer lock (its advisory lock, on a connection of its own)."""
        return self.pg.acquire_writer(session_id)

    def delete_session(self, session_id: str) -> Sequence[object]:
        """Delete the session, its events, pointers, checkpoints and spool; return what went."""
        if not is_valid_session_id(session_id):
            return []
        removed: list[object] = [session_id] if self.pg.delete_session(session_id) else []
        spool = remove_left_spool(self.spool_dir, session_id)
        return removed if spool is None else [*removed, spool]

    def held_locks(self, session_ids: Iterable[str]) -> set[str]:
        """Return those of `session_ids` this role's writers lock now (one look at `pg_locks`)."""
        ids = [sid for sid in set(session_ids) if is_valid_session_id(sid)]
        if not ids:
            return set()
        with self.pg.connection() as conn:
            return held_sessions(conn, self.pg.schema, self.pg.owner, ids)

    def open_search(self) -> ProjectSearch:
        """Return the search of this project's events (`pg/search.py`)."""
        return ProjectSearch(self)

    def fork_source(self, session_id: str) -> tuple[list[Event], list[bytes] | None]:
        """Return the session's readable events (a fork copies them as values)."""
        return self.read_events(session_id).events, None

    def has_sessions(self) -> bool:
        """Return True if the project has a session here (empty ones included)."""
        return bool(self.list_sessions_page(0, 1, empty=True)[1])

    def stale_pointers(self) -> list[str]:
        """Return none: the database's pointers come from many machines (no pid says)."""
        return []

    remove_stale_pointers = stale_pointers

    def forget_stale_pointers(self, client: str | None, keep: str) -> None:
        """Nothing: the database keeps no pointer per editor process."""

    def file_changes(self, path: str, since: Moment, until: Moment) -> ContextManager[ChangeRows]:
        """Yield a file's changes from the project's events (`timeline/pg.py`)."""
        from ..timeline.pg import database_changes

        return nullcontext(database_changes(self.pg, self.project, path, since, until))

    def read_blobs(self, digests: set[str]) -> dict[str, bytes | None]:
        """Return the role's blobs of `digests` in one query."""
        from ..timeline.pg import database_blobs

        return database_blobs(self.pg, digests)

    def import_seed(self, session_id: str, redactor: Redactor | None) -> None:
        """Import the seed's session offered for resume into the database."""
        from functools import partial

        from ..store.seed_store import import_offered
        from .importing import import_seed_session

        import_offered(self, session_id, partial(import_seed_session, self, redactor=redactor))

    # -- checkpoints and blobs -------------------------------------------------------

    def checkpoint_store(self) -> Checkpoints:
        """Return this project's checkpoints over this role's records and blobs."""
        return Checkpoints(PgCheckpointStorage(self.pg), self.workspace_root)

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
            raise self._missing(record.session_id)
        self.pg.put_checkpoint(record)

    def checkpoints(self, session_id: str) -> list[CheckpointRecord]:
        """Return the session's checkpoint records, by number."""
        return self.pg.checkpoints(session_id)

    def close(self) -> None:
        """Close the pool."""
        self.pg.close()
