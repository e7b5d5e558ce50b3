"""The PostgreSQL store as either side of a transfer (`session/transfer.py`).

Read: a project's sessions (`project` is the local `<name>_<hash8>`), each under its
advisory writer lock, so a session a server is writing is reported in use. A schema newer
than this code is read without the lock (no writer of ours can take one there).

Written, under the session's writer lock: the session's row from its `session/start`,
made with the first events (so a session refused leaves nothing), then its events with
their own seqs and times (`SessionWriter.copy`), one transaction a batch, so an
interruption leaves a dense prefix the next run continues; then blobs, checkpoint
records, the snapshot, and the row's `created_at`/`updated_at` set back to the session's
own times (the appends moved them to now). Rows never hold the DSN's password: a session
whose events, snapshot or checkpointed files contain it is not copied.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..checkpoints import CheckpointRecord
from ..events import EVENT_ADAPTER, SessionStartEvent
from ..local.importing import LocalTransferStore
from ..snapshot import SessionState, state_from_events
from ..transfer import Raw, TransferError
from .connection import open_connection, reporting
from .dsn import DsnInfo, parse_dsn
from .query import q
from .schema import read_version
from .search import catch_up
from .store import PgStore
from .writer import SessionWriter

if TYPE_CHECKING:
    from ..local.manager import SessionManager
    from ..redaction import Redactor
    from ..store.seed_store import ImportOutcome, SeedSession

PAGE = 2000  # events read per query
_TIMES = """UPDATE {s}.sessions SET created_at = %s, updated_at = %s
    WHERE owner = {me} AND session_id = %s"""


def database_label(info: DsnInfo, schema: str) -> str:
    """Return where a schema is, for messages: host, port, database (never the password)."""
    return f"PostgreSQL at {info.where} (database {info.dbname}, schema {schema})"


def schema_exists(dsn: str, schema: str) -> bool:
    """Return True if the database has the agent-assist schema (checked without creating it)."""
    info = parse_dsn(dsn)
    with open_connection(dsn, info, "migrate") as conn, reporting(info):
        return read_version(conn, schema) is not None


def _holds(value: Any, secret: str) -> bool:
    if isinstance(value, str):
        return secret in value
    if isinstance(value, dict):
        return any(_holds(k, secret) or _holds(v, secret) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds(item, secret) for item in value)
    return False


class PgSessionImport:
    """One session being copied into PostgreSQL, its writer lock held."""

    def __init__(self, store: PgTransferStore, writer: SessionWriter, start: Raw | None) -> None:
        self.store = store
        self.pg = store.pg
        self.writer = writer
        self.session_id = writer.session_id
        self._start = start  # the first event of a session whose row is still to be made

    def existing_events(self) -> list[Raw]:
        """Return the session's events already in the database."""
        return self.store.raw_events(self.session_id)

    def _refuse_secrets(self, value: Any, what: str) -> None:
        for secret in self.pg.info.secrets:
            if _holds(value, secret):
                raise TransferError(
                    f"session {self.session_id}: its {what} contain the database's password, "
                    "which no row may hold; not copied"
                )

    def append_events(self, raws: Sequence[Raw]) -> None:
        """Insert events with their own seqs in one transaction (they must continue the log)."""
        self._refuse_secrets(list(raws), "events")
        if self._start is not None:  # made with the first events, as a server makes it
            self.store.create_row(self.session_id, self._start)
            self._start = None
        self.writer.copy(raws)

    def publish(self) -> None:
        """Nothing to do: committed rows are the log."""

    def put_blob(self, data: bytes) -> str:
        """Store a blob once for this role."""
        for secret in self.pg.info.secrets:
            if secret.encode() in data:
                raise TransferError(
                    f"session {self.session_id}: a file its checkpoints keep contains the "
                    "database's password, which no row may hold; not copied"
                )
        return self.pg.put_blob(data)

    def put_checkpoint(self, record: CheckpointRecord) -> None:
        """Store a checkpoint record (its blobs are stored)."""
        self.pg.put_checkpoint(record)

    def needs_snapshot(self, snapshot: SessionState | None) -> bool:
        """Return True if the session has no snapshot, or not the source's."""
        row = self.pg.session(self.session_id)
        if row is None or row.snapshot_seq is None:
            return True
        return snapshot is not None and row.snapshot_seq != snapshot.last_seq

    def finish(self, snapshot: SessionState | None, events: Sequence[Raw]) -> None:
        """Store the snapshot (or one derived from the events), then the session's own times."""
        state = snapshot.model_copy() if snapshot is not None else None
        if state is not None:
            state.log_offset = state.last_seq + 1  # a position here is a seq, not a byte
        else:  # the listing's title and turns come from the snapshot
            parsed = [EVENT_ADAPTER.validate_python(raw) for raw in events]
            state = state_from_events(self.session_id, parsed)
            if isinstance(parsed[0], SessionStartEvent):
                state.instance_id = parsed[0].data.instance_id
                state.workspace_root = parsed[0].data.workspace_root
        self._refuse_secrets(state.model_dump(mode="json"), "snapshot")
        self.pg.put_snapshot(state)
        with self.pg.connection() as conn:
            conn.execute(
                q(self.pg.schema, _TIMES),
                (min(state.created_at, _time(events[0])), _time(events[-1]), self.session_id),
            )
        # Indexed now, not by the first search after a large import (a minute at 1M events).
        catch_up(self.pg, self.session_id)


def _time(raw: Raw) -> datetime:
    return datetime.fromisoformat(str(raw["ts"]))


class ProjectSessions(Protocol):
    """What a transfer needs of a project's sessions in the database (`PgSessionStore`)."""

    @property
    def pg(self) -> PgStore:
        """Return the database."""
        ...

    @property
    def project(self) -> str:
        """Return the project's name there (`<name>_<hash8>`)."""
        ...

    @property
    def workspace_root(self) -> Path:
        """Return the project root."""
        ...

    def exists(self, session_id: str) -> bool:
        """Return True if the project has the session."""
        ...

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's bytes, if stored."""
        ...

    def read_snapshot(
        self, session_id: str, warnings: list[str] | None = None, *, keep: bool = False
    ) -> tuple[SessionState | None, str | None]:
        """Return the stored snapshot and why it is read-only, if it is."""
        ...


class PgTransferStore:
    """One project's sessions in a PostgreSQL store, to copy from or into."""

    def __init__(self, sessions: ProjectSessions) -> None:
        self.pg = sessions.pg
        self.sessions = sessions
        self.project = sessions.project

    @property
    def description(self) -> str:
        """Return host, database and schema (never the password)."""
        return database_label(self.pg.info, self.pg.schema)

    def session_ids(self) -> list[str]:
        """Return the ids of the project's sessions, sorted."""
        return sorted(row.session_id for row in self.pg.list_sessions(self.project))

    def exists(self, session_id: str) -> bool:
        """Return True if this role has the session."""
        return self.sessions.exists(session_id)

    @contextmanager
    def reading(self, session_id: str) -> Iterator[None]:
        """Hold the session's writer lock while it is read (`SessionLockedError` if in use)."""
        if self.pg.read_only_reason is not None:
            yield
            return
        with self.pg.acquire_writer(session_id):
            yield

    def raw_events(self, session_id: str) -> list[Raw]:
        """Return the session's events as stored, in seq order."""
        events: list[Raw] = []
        while True:
            page = self.pg.read_events(session_id, len(events), PAGE)
            events += page
            if len(page) < PAGE:
                return events

    def events_to_copy(self, session_id: str) -> tuple[list[Raw], str | None]:
        """Return the session's events; a database's rows are read whole, or not at all."""
        return self.raw_events(session_id), None

    def snapshot(self, session_id: str) -> SessionState | None:
        """Return the stored snapshot (migrated), or None."""
        return self.sessions.read_snapshot(session_id)[0]

    def checkpoints(self, session_id: str) -> list[CheckpointRecord]:
        """Return the session's checkpoint records, by number."""
        return self.pg.checkpoints(session_id)

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's bytes if intact."""
        return self.sessions.read_blob(digest)

    @contextmanager
    def importing(self, session_id: str, start: Raw) -> Iterator[PgSessionImport]:
        """Take the writer lock; create the session's row from its `session/start` if new."""
        with self.pg.acquire_writer(session_id) as writer:
            row = self.pg.session(session_id)
            if row is not None and row.project != self.project:
                raise TransferError(
                    f"session {session_id} is already in {self.description} as a session of "
                    f"project {row.project}, not {self.project}; not copied"
                )
            yield PgSessionImport(self, writer, start if row is None else None)

    def create_row(self, session_id: str, start: Raw) -> None:
        """Make a session's row from its `session/start` event."""
        data = start.get("data") if start.get("type") == "session/start" else None
        data = data if isinstance(data, dict) else {}
        self.pg.create_session(
            session_id,
            self.project,
            workspace_root=data.get("workspace_root"),
            instance_id=data.get("instance_id"),
            parent_session_id=data.get("parent_session_id"),
            fork_boundary=data.get("fork_boundary"),
            persistence="metadata" if data.get("persistence") == "metadata" else "full",
        )


def import_seed_session(
    store: ProjectSessions,
    seed: SeedSession,
    redactor: Redactor | None = None,
    *,
    dry_run: bool = False,
) -> ImportOutcome:
    """Copy a seed's session into the database, never over a session of its id.

    It is made ours in a scratch local store first (our session file, scrubbed as
    `local/seed_import.import_session` writes it, and its log begun by opening it), then copied and
    verified as `sessions migrate` copies; the scratch store is removed afterwards.
    `dry_run`: only say whether it would be.
    """
    from ..errors import SessionError
    from ..local.manager import SessionManager
    from ..local.seed_import import import_session
    from ..store.seed_store import ImportOutcome
    from ..transfer import copy_session

    sid = seed.session_id
    if store.exists(sid):
        why = "already there" if dry_run else "already in the database: not overwritten (skipped)"
        return ImportOutcome(sid, "already-imported", why)
    if dry_run:
        return ImportOutcome(sid, "would-import", "would be imported")
    target = PgTransferStore(store)
    with tempfile.TemporaryDirectory(prefix="agent-assist-import-") as scratch:
        staging = SessionManager(store.workspace_root, home=Path(scratch))
        try:
            import_session(staging.listing, seed, redactor=redactor)
            staging.open_session(sid, redactor=redactor).close()  # its log: `session/start`
            source = _SeedBegun(staging, seed.updated_at)
            result = copy_session(source, target, sid)
        except (SessionError, TransferError) as exc:
            return ImportOutcome(sid, "failed", f"{exc} (not imported)")
    if result.status != "copied":
        return ImportOutcome(sid, "failed", f"{result.message or result.status} (not imported)")
    return ImportOutcome(sid, "imported", f"imported into {target.description}")


class _SeedBegun(LocalTransferStore):
    """The scratch store of `import_seed_session`, its log's opening dated as the seed left it.

    The log it begins holds only `session/start`: dated at the seed's last save (not the
    import), so the session's last activity stays the seed's, as a local import's does.
    """

    def __init__(self, manager: SessionManager, began: datetime) -> None:
        super().__init__(manager)
        self.began = began

    def events_to_copy(self, session_id: str) -> tuple[list[Raw], str | None]:
        """Return the scratch log's events, its lone `session/start` dated `began`."""
        events, damaged = super().events_to_copy(session_id)
        if len(events) == 1 and events[0].get("type") == "session/start":
            ts = self.began.astimezone(UTC).isoformat().replace("+00:00", "Z")
            events = [{**events[0], "ts": ts}]
        return events, damaged
