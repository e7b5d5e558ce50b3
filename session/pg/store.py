"""PgStore: the PostgreSQL store's low-level operations over one connection pool.

Opening it checks that the database answers, creates or migrates the schema, and opens
the pool. A schema newer than this code knows opens read-only: reads work, writes raise
`PgReadOnlyError`. Writing a session's events takes its `SessionWriter` (the lock).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from ..checkpoints import CheckpointRecord
from ..events import Persistence
from ..redaction import Redactor
from ..snapshot import SessionState
from . import blobs, listing, records
from .connection import CONNECT_TIMEOUT, configure, connect_kwargs, open_connection, reporting
from .dsn import DsnInfo, parse_dsn, unreachable
from .errors import DatabaseUnreachableError, PgReadOnlyError
from .events import last_turn_end, read_events
from .migrations import MIGRATIONS, Migration
from .query import DEFAULT_SCHEMA, Conn, check_schema_name
from .records import SessionRow
from .schema import SchemaStatus, check_schema, ensure_schema
from .writer import SessionWriter

T = TypeVar("T")
PROBE_TIMEOUT = 2  # seconds a caller waits to learn the database is still away
FIRST_WAIT = 0.5  # seconds waited for a pooled connection before probing the database
POOL_IDLE = 5.0  # seconds a pooled connection is kept unused (only while no writer lends)
READER = "opened by a command that only reads: it writes nothing"


class PgStore:
    """Sessions, events, pointers, checkpoints and blobs of the connected role."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        pool_size: int = 4,
        redactor: Redactor | None = None,
        read_only: bool = False,
    ) -> None:
        self.info: DsnInfo = parse_dsn(dsn)  # parsed first: a bad DSN fails here, unechoed
        self._dsn = dsn
        self.schema = check_schema_name(schema)
        self._pool_size = pool_size
        # Opened by a command that only reads: nothing is created, migrated, locked or written.
        self.reader = read_only
        self.unindexed = 0  # events the last search read from the events, not the index
        # The DSN's password is one more secret no row may hold (a user may paste it).
        self.redactor = self.scrubber(redactor or Redactor())
        self.status: SchemaStatus | None = None
        self.owner = ""
        self._pool: ConnectionPool[Conn] | None = None
        # The writers this store acquired: each lends its connection to the store's other
        # work, so a server with a session open holds that one connection (`connection`).
        self._writers: weakref.WeakSet[SessionWriter] = weakref.WeakSet()
        self._away = False  # the database was found gone and no connection has worked since

    @classmethod
    def open(
        cls,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        pool_size: int = 4,
        redactor: Redactor | None = None,
        migrations: Sequence[Migration] = MIGRATIONS,
        create: bool = True,
        read_only: bool = False,
    ) -> PgStore:
        """Connect, create or migrate the schema, open the pool; return the store.

        `create` False: the schema is only checked (`check_schema`), for commands that read.
        `read_only`: the store never writes (implies not `create`): its search reads what is
        not indexed yet from the events instead of indexing it.
        """
        store = cls(dsn, schema=schema, pool_size=pool_size, redactor=redactor, read_only=read_only)
        create = create and not read_only
        store.connect(migrations, create=create)
        return store

    def connect(self, migrations: Sequence[Migration] = MIGRATIONS, *, create: bool = True) -> None:
        """See `open`."""
        with open_connection(self._dsn, self.info, "setup") as conn, reporting(self.info):
            if create:
                self.status = ensure_schema(conn, self.schema, migrations)
            else:
                where = f"PostgreSQL at {self.info.where} (database {self.info.dbname})"
                self.status = check_schema(conn, self.schema, where, migrations)
            row = conn.execute("SELECT current_user").fetchone()
            self.owner = str(row[0]) if row else ""
        # A command that only reads prepares no statement: through PgBouncer in transaction
        # mode, the next transaction may run on another server connection.
        prepared = {"prepare_threshold": None} if self.reader else {}
        # Used only while no writer lends its connection: none kept, one closed when unused.
        pool: ConnectionPool[Conn] = ConnectionPool(
            self._dsn,
            min_size=0,
            max_size=self._pool_size,
            max_idle=POOL_IDLE,
            kwargs={"autocommit": True, **connect_kwargs(self._dsn, "pool"), **prepared},
            configure=configure,
            check=ConnectionPool.check_connection,
            # A database that went away is said at once, not after psycopg's 30 s default.
            timeout=CONNECT_TIMEOUT + 1,
            open=False,
            name="agent-assist",
        )
        try:
            with reporting(self.info, connecting=True):
                pool.open(wait=True, timeout=CONNECT_TIMEOUT * 2)
        except BaseException:
            pool.close()  # its workers would go on trying
            raise
        self._pool = pool

    @property
    def read_only_reason(self) -> str | None:
        """Why this store must not be written, or None."""
        if self.reader:
            return READER
        return self.status.read_only_reason if self.status else None

    def _writable(self) -> None:
        if reason := self.read_only_reason:
            raise PgReadOnlyError(reason)

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        """Lend a pooled connection (autocommit); a lost database is reported by host.

        Once the database has been found gone, the pool would make each caller wait its
        whole timeout (~6 s) for a connection that cannot come: until one connection works
        again, each caller probes with one connection of its own (`PROBE_TIMEOUT`) and is
        told at once if the database is still away.
        """
        for writer in list(self._writers):
            with writer.lend() as lent:
                if lent is None:
                    continue
                try:
                    with reporting(self.info):
                        yield lent
                except DatabaseUnreachableError:
                    self._away = True
                    raise
                return
        pool = self._pool
        if pool is None:  # opened while the database was away (`offline.py`): not yet
            raise unreachable(self.info, "it has not answered since this server started")
        if self._away:
            self._probe()
        try:
            with reporting(self.info):
                try:
                    conn = pool.getconn(timeout=FIRST_WAIT)
                except PoolTimeout:
                    # Busy, or the database went away since: a probe tells which at once
                    # (the first caller to find it gone is not kept for the pool's ~6 s).
                    self._probe()
                    conn = pool.getconn()
                try:
                    with conn:  # as `pool.connection()`: commit, or roll back on an error
                        yield conn
                finally:
                    pool.putconn(conn)
        except DatabaseUnreachableError:
            self._away = True
            raise

    def _probe(self) -> None:
        """Connect once, briefly: raise `DatabaseUnreachableError` if the database is away."""
        settings = {**connect_kwargs(self._dsn, "probe"), "connect_timeout": PROBE_TIMEOUT}
        with reporting(self.info, connecting=True):
            psycopg.connect(self._dsn, autocommit=True, **settings).close()
        self._away = False
        assert self._pool is not None
        self._pool.check()  # its broken connections replaced now, not at their next use

    def _run(self, operation: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self.connection() as conn:
            return operation(conn, self.schema, *args, **kwargs)

    def _write(self, operation: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        self._writable()
        return self._run(operation, *args, **kwargs)

    # sessions and snapshots

    def create_session(
        self,
        session_id: str,
        project: str,
        *,
        workspace_root: str | None = None,
        instance_id: str | None = None,
        parent_session_id: str | None = None,
        fork_boundary: int | None = None,
        persistence: Persistence = "full",
    ) -> SessionRow:
        """Create a session's row, with no events yet."""
        return self._write(
            records.create_session,
            session_id,
            project,
            workspace_root=workspace_root,
            instance_id=instance_id,
            parent_session_id=parent_session_id,
            fork_boundary=fork_boundary,
            persistence=persistence,
        )

    def set_host(self, session_id: str, host: str) -> None:
        """Record the machine a session is being written from."""
        self._write(records.set_host, session_id, host)

    def session(self, session_id: str) -> SessionRow | None:
        """Return the session's row, or None."""
        return self._run(records.get_session, session_id)

    def projects_at(self, workspace_root: str) -> list[str]:
        """Return the projects whose sessions recorded this workspace, the most recent first."""
        return self._run(records.projects_at, workspace_root)

    def rename_project(self, old: str, new: str) -> int:
        """Move this role's sessions and pointers of project `old` to `new`."""
        return self._write(records.rename_project, old, new)

    def list_sessions(self, project: str | None = None) -> list[SessionRow]:
        """Return this role's sessions, the most recently updated first."""
        return self._run(records.list_sessions, project)

    def list_sessions_page(
        self,
        project: str,
        offset: int,
        limit: int | None,
        *,
        empty: bool = False,
        keep: str | None = None,
    ) -> tuple[list[SessionRow], int, int]:
        """Return a page of a project's sessions, newest first, its total and the folded."""
        writable = self.read_only_reason is None  # may fill its unfilled rows (#43)
        page = listing.list_sessions_page
        return self._run(page, project, offset, limit, empty=empty, keep=keep, writable=writable)

    def delete_session(self, session_id: str) -> bool:
        """Delete a session with its events, pointers and checkpoints."""
        return self._write(records.delete_session, session_id)

    def put_snapshot(self, state: SessionState, redactor: Redactor | None = None) -> None:
        """Store the session's snapshot, scrubbed (of the DSN's password too)."""
        self._write(records.put_snapshot, state, self.scrubber(redactor))

    def snapshot(self, session_id: str) -> dict[str, Any] | None:
        """Return the session's snapshot JSON, or None."""
        return self._run(records.get_snapshot, session_id)

    # events

    def acquire_writer(self, session_id: str, redactor: Redactor | None = None) -> SessionWriter:
        """Take the session's writer lock (`SessionLockedError` if another process has it)."""
        self._writable()
        writer = SessionWriter.acquire(
            self._dsn, self.info, self.schema, session_id, self.scrubber(redactor)
        )
        self._writers.add(writer)
        return writer

    def read_events(
        self,
        session_id: str,
        from_seq: int = 0,
        limit: int | None = None,
        types: frozenset[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Return the session's events from `from_seq` on (of `types`, if given), in order."""
        return self._run(read_events, session_id, from_seq, limit, types)

    def event_pages(
        self, session_id: str, batch: int | None, types: frozenset[str] | None = None
    ) -> Iterator[list[dict[str, Any]]]:
        """Yield the session's events a page of `batch` at a time (keyset on seq; None: all)."""
        page = self.read_events(session_id, 0, batch, types)
        while page:
            yield page
            if batch is None or len(page) < batch:
                return
            page = self.read_events(session_id, page[-1]["seq"] + 1, batch, types)

    # pointers

    def set_pointer(self, project: str, instance_id: str, session_id: str) -> None:
        """Point an editor instance at a session."""
        self._write(records.set_pointer, project, instance_id, session_id)

    def pointer(self, project: str, instance_id: str) -> str | None:
        """Return the session an editor instance points at, or None."""
        return self._run(records.get_pointer, project, instance_id)

    def delete_pointer(self, project: str, instance_id: str) -> None:
        """Forget an editor instance's pointer."""
        self._write(records.delete_pointer, project, instance_id)

    def last_turn_end(self, session_id: str) -> str | None:
        """Return how a session's last turn ended when not completed (`interrupted`…)."""
        return self._run(last_turn_end, session_id)

    # checkpoints and blobs

    def put_blob(self, data: bytes) -> str:
        """Store bytes once for this role; return their SHA-256."""
        return self._write(blobs.put_blob, data)

    def blob(self, digest: str) -> bytes | None:
        """Return a blob's bytes (verified), or None."""
        return self._run(blobs.get_blob, digest)

    def put_checkpoint(self, record: CheckpointRecord, redactor: Redactor | None = None) -> None:
        """Store a checkpoint record (its blobs first: `put_blob`).

        A blob collected since is an error, never a record whose copy is gone.
        """
        with self.checkpoint_writing() as writer:
            writer.put_checkpoint(record, redactor)

    @contextmanager
    def checkpoint_writing(self) -> Iterator[CheckpointWriter]:
        """Write a checkpoint's blobs and record in one transaction, the blob lock shared."""
        self._writable()
        with self.connection() as conn, conn.transaction():
            blobs.hold_blobs(conn, self.schema, alone=False)
            yield CheckpointWriter(self, conn)

    def checkpoints(self, session_id: str) -> list[CheckpointRecord]:
        """Return a session's checkpoint records, by number."""
        return self._run(blobs.list_checkpoints, session_id)

    def collect_blobs(self) -> list[str]:
        """Delete the blobs no checkpoint keeps, once no checkpoint is being written."""
        return self._write(blobs.collect_garbage)

    def scrubber(self, redactor: Redactor | None) -> Redactor:
        """Return `redactor` (else the store's) knowing the database's own secrets."""
        if redactor is None:
            return self.redactor
        for secret in self.info.secrets:
            redactor.add_secret(secret)
        return redactor

    def close(self) -> None:
        """Close the pool (writers hold connections of their own)."""
        if self._pool is not None:
            # Its workers may be retrying a database that went away: do not wait for them.
            self._pool.close(timeout=1.0)
            self._pool = None

    def __enter__(self) -> PgStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class CheckpointWriter:
    """One checkpoint's writes, inside `PgStore.checkpoint_writing`'s transaction."""

    def __init__(self, store: PgStore, conn: Conn) -> None:
        self.store = store
        self.conn = conn

    def put_blob(self, data: bytes) -> str:
        """Store bytes once for this role; return their SHA-256."""
        return blobs.put_blob(self.conn, self.store.schema, data)

    def put_checkpoint(self, record: CheckpointRecord, redactor: Redactor | None = None) -> None:
        """Store the checkpoint's record (committed with its blobs)."""
        blobs.put_checkpoint(self.conn, self.store.schema, record, self.store.scrubber(redactor))
