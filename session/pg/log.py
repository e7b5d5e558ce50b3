"""PgEventLog: an open session's writing end in PostgreSQL (a `SessionLog`).

It holds the session's `SessionWriter` (the advisory lock on a connection of its own),
numbers events itself (it is the only writer) and sends them on that connection. Streamed
`assistant/chunk` events are batched: they are committed with the next other event, or
once `CHUNK_BATCH` of them or `CHUNK_DELAY` seconds have gathered (checked as each
arrives), in one transaction. Everything else is committed as it is appended, with
`synchronous_commit = off` unless it is a durable point, so a completed turn costs one
flush of the WAL, as the local log costs one `fsync`. If the writer's process dies, what
it had not committed yet (at most a batch of chunks) is lost; locally those chunks would
be in the file. A batch's age is checked only as a chunk arrives: a stream that stalls
keeps its last chunks until the next event.

An event the database did not take stays queued, in order, and goes with the next commit;
the append raises `LogError` with `written` set (the session keeps it, as the local log
keeps an event whose fsync failed).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import psycopg

from ..errors import SessionError, SessionLockedError
from ..events import EVENT_ADAPTER, Event, utcnow
from ..log.writer import LogError
from ..redaction import Redactor
from ..snapshot import SessionState
from ..snapshot_meta import TITLE_CHARS
from ..store.backend import DURABLE_TYPES
from .errors import DatabaseUnreachableError, PgStoreError
from .spool import Spool, in_use
from .store import PgStore
from .writer import SessionWriter

# Events after which the session row's listing columns (title, turns, phase) are updated.
_LISTED_TYPES = frozenset({"turn/start", "turn/end", "session/phase"})
logger = logging.getLogger(__name__)
CHUNK_BATCH = 64
CHUNK_DELAY = 0.2  # seconds a streamed chunk may wait for the batch it goes out with
_BATCHED_TYPES = frozenset({"assistant/chunk"})
_FAILURES = (psycopg.Error, PgStoreError, SessionError)
RETRY_FIRST, RETRY_MAX = 1.0, 30.0  # seconds between tries of a lost database
REPLAY_BATCH = 500


F = TypeVar("F", bound=Callable[..., Any])


def _locked(method: F) -> F:
    """Run `method` holding the log's lock: the store watch retries from another thread."""

    @functools.wraps(method)
    def run(self: PgEventLog, *args: Any, **kwargs: Any) -> Any:
        with self._mutex:
            return method(self, *args, **kwargs)

    return run  # type: ignore[return-value]


class PgEventLog:
    """The events of one open session, sent to PostgreSQL on the writer's connection."""

    def __init__(
        self,
        store: PgStore,
        session_id: str,
        writer: SessionWriter | None,
        next_seq: int,
        *,
        create_row: Callable[[], None] | None = None,
        redactor: Redactor | None = None,
        spool: Spool | None = None,
        reconnect: Callable[[], SessionWriter] | None = None,
        offline: str | None = None,
    ) -> None:
        self._store = store
        self.session_id = session_id
        self._writer = writer
        self.next_seq = next_seq
        self.redactor = writer.redactor if writer is not None else redactor or Redactor()
        self.read_only = writer is None
        self._create_row = create_row  # the session's row, made with its first event
        self._pending: list[dict[str, Any]] = []
        self._pending_since = 0.0
        # The session's state, for the listing columns (set by the store once the session is).
        self.describe: Callable[[], SessionState] | None = None
        self._undurable = False  # committed without waiting for the flush since the last one
        # While the database is away: events go to `_spool`; `retry` (the server's store watch calls
        # it between turns, in a thread) takes a new writer with `_reconnect`.
        self._spool = spool
        self._reconnect = reconnect
        self._spooled = 0
        self._retry_at = 0.0
        self._retry_delay = RETRY_FIRST
        self.offline_reason: str | None = None  # why events are being spooled, if they are
        self._mutex = threading.RLock()
        if offline is not None and spool is not None:  # started while the database was away
            self.read_only = False
            self._spooled = len(spool.read())  # a spool of this session left by an earlier start
            spool.hold()  # this process writes it now: no other sends it meanwhile
            self._go_offline(offline)

    @property
    def offset(self) -> int:
        """Return the seq after the last event (PostgreSQL has no byte offsets)."""
        return self.next_seq

    @property
    def online(self) -> bool:
        """Return False while events go to the spool (the database cannot be reached)."""
        return self.offline_reason is None

    def _live(self) -> SessionWriter:
        if self._writer is None or self.read_only:
            raise LogError(f"session {self.session_id} is open read-only")
        if self._writer.closed:
            raise LogError(
                f"session {self.session_id}: its writer's connection is closed (the lock with it)"
            )
        return self._writer

    @property
    def pending(self) -> int:
        """Return how many appended events the database has not taken yet (spooled too)."""
        return len(self._pending) + self._spooled

    @_locked
    def append(
        self,
        type_: str,
        data: Mapping[str, Any],
        *,
        turn: int | None = None,
        step: int | None = None,
        sync: bool | None = None,
    ) -> Event:
        """Append one event: numbered, validated, queued; committed now, or batched if a chunk."""
        if self.offline_reason is None:
            self._live()
        elif self.read_only:
            raise LogError(f"session {self.session_id} is open read-only")
        raw: dict[str, Any] = {
            "seq": self.next_seq,
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
        self.next_seq += 1
        durable = sync if sync is not None else type_ in DURABLE_TYPES
        if (
            durable
            or type_ not in _BATCHED_TYPES
            or len(self._pending) >= CHUNK_BATCH
            or time.monotonic() - self._pending_since >= CHUNK_DELAY
        ):
            try:
                self._flush(durable=durable)
            except LogError as exc:
                raise LogError(str(exc), errno=exc.errno, written=event) from None
        return event

    def _flush(self, *, durable: bool) -> None:
        if self.offline_reason is not None:
            # No reconnecting here: an unreachable host can take the connect timeout (5 s)
            # to say so, and this runs as a turn streams. `retry` is called between turns.
            self._to_spool(durable=durable)
            return
        if self._writer is not None and self._writer.closed and self._spool is not None:
            self._go_offline("the connection to the database was lost")
            self._to_spool(durable=durable)
            return
        writer = self._live()
        try:
            if self._create_row is not None:
                self._create_row()
                self._create_row = None
            if self._pending:
                # Kept until committed: a failed commit leaves them to be sent again.
                writer.write(self._pending, durable=durable)
                listed = [raw for raw in self._pending if raw["type"] in _LISTED_TYPES]
                self._pending = []
                self._undurable = not durable
                if listed and self.describe is not None:
                    writer.set_listing(*_listing(self.describe(), listed, self.redactor))
            elif durable and self._undurable:
                writer.sync()
                self._undurable = False
        except DatabaseUnreachableError as exc:
            if self._spool is None:
                raise LogError(f"session {self.session_id} was not stored: {exc}") from None
            self._go_offline(str(exc))
            self._to_spool(durable=durable)
        except _FAILURES as exc:
            raise LogError(f"session {self.session_id} was not stored: {exc}") from None

    # -- the spool ----------------------------------------------------------------------

    def _go_offline(self, reason: str) -> None:
        logger.warning("session %s: events go to the local spool: %s", self.session_id, reason)
        self.offline_reason = reason
        self._retry_delay = RETRY_FIRST
        self._retry_at = time.monotonic() + self._retry_delay
        if self._writer is not None:
            self._writer.release()  # its connection is gone, and the lock with it
            self._writer = None

    def _to_spool(self, *, durable: bool) -> None:
        assert self._spool is not None
        if self._pending:
            self._spool.write(self._pending, durable=durable)  # LogError if the disk refuses
            self._spooled += len(self._pending)
            self._pending = []

    @_locked
    def retry(self) -> bool:
        """If spooling and it is time, reconnect and send the spool; True once online."""
        if self.offline_reason is None:
            return True
        if self._reconnect is None or self._spool is None or time.monotonic() < self._retry_at:
            return False
        try:
            writer = self._reconnect()
        except (PgStoreError, SessionError) as exc:
            self._retry_delay = min(self._retry_delay * 2, RETRY_MAX)
            self._retry_at = time.monotonic() + self._retry_delay
            self.offline_reason = str(exc)
            return False
        try:
            sent = replay_spool(self._spool, writer, self._create_row)
        except (LogError, PgStoreError, SessionError, psycopg.Error) as exc:
            writer.release()
            self._retry_delay = min(self._retry_delay * 2, RETRY_MAX)
            self._retry_at = time.monotonic() + self._retry_delay
            self.offline_reason = f"the spool could not be sent: {exc}"
            logger.warning("session %s: %s", self.session_id, self.offline_reason)
            return False
        if sent:  # the row came with the first event (none yet: it comes with the next)
            self._create_row = None
        self._writer = writer
        self._spooled = 0
        self._undurable = False
        self.offline_reason = None
        logger.info("session %s: back online; the spooled events are stored", self.session_id)
        if self.describe is not None and self._create_row is None:
            state = self.describe()
            writer.set_listing(*_listing(state, [], self.redactor))
        return True

    @_locked
    def copy(self, events: Sequence[Event], lines: bytes | None = None) -> None:
        """Append already-written events verbatim (a fork's prefix); their seqs continue."""
        if not events:
            return
        self.sync()
        raws = [event.model_dump(mode="json") for event in events]
        try:
            self.next_seq = self._live().copy(raws)
        except _FAILURES as exc:
            raise LogError(f"session {self.session_id} was not stored: {exc}") from None

    @_locked
    def sync(self) -> None:
        """Commit what is queued and wait for the WAL flush."""
        self._flush(durable=True)

    @_locked
    def replay(self) -> list[Event]:
        """Return the session's events: those stored, then those spooled or still queued."""
        if self._pending and not self.read_only:
            try:
                self._flush(durable=False)
            except LogError:
                pass  # read what is stored, then what is queued
        stored: list[dict[str, Any]] = []
        if self._create_row is None:
            try:
                stored = self._store.read_events(self.session_id)
            except (PgStoreError, psycopg.Error):
                stored = []  # the database is away: what it holds cannot be read now
        spooled = self._spool.read() if self._spool is not None and self._spooled else []
        raws = [*stored, *spooled, *self._pending]
        return [EVENT_ADAPTER.validate_python(raw) for raw in raws]

    @_locked
    def close(self) -> None:
        """Commit durably (or spool), release the lock and its connection (safe to call twice)."""
        writer = self._writer
        try:
            if self.offline_reason is not None:
                # No reconnecting on the way out (an unreachable host takes the connect
                # timeout to say so): the spool is sent by the next open or start.
                self._to_spool(durable=True)
            elif writer is not None and not writer.closed and (self._pending or self._undurable):
                self._flush(durable=True)
        finally:
            if writer is not None:
                writer.release()
            if self._spool is not None:
                self._spool.close()
            self._writer = None
            self.read_only = True


def _listing(
    state: SessionState, raws: Sequence[Mapping[str, Any]], redactor: Redactor
) -> tuple[str | None, int, str | None]:
    """Return (title, turns, phase) once `raws` are folded (the last may not be yet)."""
    title, turns, phase = state.title, state.turns, state.phase
    for raw in raws:
        data = raw["data"]
        if raw["type"] == "turn/start":
            turns = max(turns, raw["turn"] or 0)
            text = " ".join(str(data.get("input", "")).split())
            title = title or text[:TITLE_CHARS] or None
        elif raw["type"] == "session/phase":
            phase = data.get("phase")
    scrubbed = redactor.scrub({"title": title})["title"] if title is not None else None
    return scrubbed, turns, phase


def replay_spool(
    spool: Spool, writer: SessionWriter, create_row: Callable[[], None] | None = None
) -> int:
    """Append the spooled events to the database (in order, under `writer`'s lock); delete it.

    Return how many were sent. The events must continue the session's log exactly: if
    another process wrote the session meanwhile, `SessionError` says so and the spool stays.
    """
    raws = spool.read()
    if create_row is not None and raws:
        create_row()
    for start in range(0, len(raws), REPLAY_BATCH):
        writer.copy(raws[start : start + REPLAY_BATCH])
    writer.sync()
    spool.remove()
    return len(raws)


def take_up_spool(spool_dir: Path, session_id: str, writer: SessionWriter) -> None:
    """Send the spool a process that died offline left of `session_id`, if one was left.

    `SessionLockedError` if a process on this machine writes that spool now.
    """
    spool = Spool(spool_dir, session_id, writer.redactor)
    if not spool.exists:
        return
    if in_use(spool_dir, session_id):
        raise SessionLockedError(
            f"session {session_id} is in use by another agent-assist on this machine"
        )
    replay_spool(spool, writer)
