"""A PostgreSQL store opened while the database is away: sessions kept on this machine.

A server whose database does not answer when it starts (a laptop on a train, the VPN not
up yet) still gets a working session: `PgSessionStore.open(offline_ok=True)` returns the
store unconnected (`offline_reason` says why) and this is what it can do then:

- a new session gets a new random id (never one the database may hold for another
  machine: the sessions stay separate) and its events go to the spool (`spool.py`) from the
  first one, with the local log's durability; its row is made when they are sent;
- the previous session is offered from what the machine has: a session born in the spool
  (a server killed while offline) is resumed as it is; one of the database's, from the
  cache of its latest snapshots (`snapshot_cache.py`), is continued in a new session
  (`session/lifecycle/offline.py`): it cannot be written without its lock;
- the session's log tries the database again between turns (1 s doubling to 30 s): the
  first try that connects connects the store (`connect`), and the spool is sent in order.

Pointers moved while away are cached, and written to the database once the session they
name has its row. Everything else that needs the database (lists, search, other sessions)
answers that it cannot be reached, naming the host.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..derive.history import build_history
from ..errors import SessionError, SessionLockedError
from ..events import EVENT_ADAPTER, Event, Persistence
from ..log.reader import LogScan
from ..log.writer import LogError
from ..paths import host_name, is_valid_session_id
from ..redaction import Redactor
from ..snapshot import SessionState, state_from_events
from ..store.session import Session, settle_opened
from ..workspace.identity import ProjectIdentity
from .errors import DatabaseUnreachableError
from .log import PgEventLog, replay_spool
from .project import choose_project
from .snapshot_cache import KEEP, SnapshotCache
from .snapshots import parse_snapshot
from .spool import Spool, in_use, spooled_sessions

if TYPE_CHECKING:
    from .store import PgStore
    from .writer import SessionWriter

logger = logging.getLogger(__name__)


class OfflineStart:
    """What `PgSessionStore` does while the database has not answered since it started."""

    pg: PgStore
    project: str
    workspace_root: Path
    identity: ProjectIdentity
    spool_dir: Path
    cache: SnapshotCache
    offline_reason: str | None
    caching: bool  # a server's store keeps the snapshot cache fresh (the admin commands not)
    _pending_pointers: dict[str, str]
    _connecting: threading.Lock

    @property
    def online(self) -> bool:
        """Return False while the store has never reached its database."""
        return self.offline_reason is None

    def offline_notice(self) -> str | None:
        """Return what the user is told once when the server starts offline (else None)."""
        if self.offline_reason is None:
            return None
        return (
            f"PostgreSQL at {self.pg.info.where} is unreachable: working offline; this "
            "session is kept on this machine and sent when it answers "
            f"({self.offline_reason})"
        )

    def session_log(
        self,
        session_id: str,
        writer: SessionWriter | None,
        next_seq: int,
        redactor: Redactor,
        create_row: Callable[[], None] | None = None,
    ) -> PgEventLog:
        """Return the writing end of an open session, with its spool (`writer` None: read-only)."""
        spool = Spool(self.spool_dir, session_id, redactor)

        def reconnect() -> SessionWriter:
            self.connect()  # a store opened offline connects with its first session's try
            return self.pg.acquire_writer(session_id, redactor)

        return PgEventLog(
            self.pg,
            session_id,
            writer,
            next_seq,
            create_row=create_row,
            redactor=redactor,
            spool=spool,
            reconnect=reconnect,
            # a new session while the database has not answered yet: spooled from the start
            offline=self.offline_reason if writer is None and create_row is not None else None,
        )

    def connect(self) -> None:
        """Connect a store opened offline (`DatabaseUnreachableError` while still away)."""
        with self._connecting:
            if self.offline_reason is None:
                return
            self.pg.connect()
            self.project = choose_project(self.pg, self.identity, str(self.workspace_root))
            self.offline_reason = None
            logger.info("connected to %s", self.pg.info.where)
        self.flush_pointers()
        self.rebuild_cache()

    # -- rows and pointers made once the database answers --------------------------------

    def row_maker(
        self,
        session_id: str,
        instance_id: str | None,
        persistence: Persistence,
        parent_session_id: str | None = None,
        fork_boundary: int | None = None,
    ) -> Callable[[], None]:
        """Return what makes the session's row (with its first event, or when it is sent)."""

        def create_row() -> None:
            self.pg.create_session(
                session_id,
                self.project,  # the project chosen once connected
                workspace_root=str(self.workspace_root),
                instance_id=instance_id,
                parent_session_id=parent_session_id,
                fork_boundary=fork_boundary,
                persistence=persistence,
            )
            self.pg.set_host(session_id, host_name())
            self.flush_pointers()

        return create_row

    def point_later(self, instance_id: str, session_id: str) -> None:
        """Write this pointer once the session has its row."""
        self._pending_pointers.setdefault(instance_id, session_id)

    def flush_pointers(self) -> None:
        """Write the pointers moved while away whose sessions have their rows now."""
        for instance_id, session_id in list(self._pending_pointers.items()):
            try:
                if self.pg.session(session_id) is None:
                    continue
                self.pg.set_pointer(self.project, instance_id, session_id)
            except (DatabaseUnreachableError, SessionError) as exc:
                logger.info("pointer of %s not written yet: %s", instance_id, exc)
                return
            if self._pending_pointers.get(instance_id) == session_id:
                del self._pending_pointers[instance_id]

    # -- the cache ---------------------------------------------------------------------

    def cache_snapshot(self, session_id: str) -> None:
        """Cache the snapshot just stored (as stored: scrubbed), with its host and time."""
        if not self.caching:
            return
        try:
            raw = self.pg.snapshot(session_id)
            if raw is not None:
                host = self.pg.session(session_id)
                last = self.last_event_time(session_id)  # type: ignore[attr-defined]
                self.cache.put(session_id, raw, host.host if host else None, last)
        except (SessionError, OSError) as exc:
            logger.info("session %s not cached: %s", session_id, exc)

    def rebuild_cache(self) -> None:
        """Fill a missing cache with the project's newest sessions (a server's store only)."""
        if not self.caching or not self.cache.empty:
            return
        try:
            rows, _, _ = self.pg.list_sessions_page(self.project, 0, KEEP)  # with a turn
            for row in rows:
                self.cache_snapshot(row.session_id)
        except SessionError as exc:
            logger.info("the session cache was not rebuilt: %s", exc)

    # -- what the machine has ----------------------------------------------------------

    def spooled_from_start(self, session_id: str) -> list[dict[str, Any]] | None:
        """Return the events of a session born in the spool (from seq 0), else None."""
        if not is_valid_session_id(session_id):
            return None
        raws = Spool(self.spool_dir, session_id, Redactor()).read()
        return raws if raws and raws[0].get("seq") == 0 else None

    def spooled_events(self, session_id: str) -> list[Event]:
        """Return a spool-born session's events, validated ([] if it has none)."""
        raws = self.spooled_from_start(session_id) or []
        return [EVENT_ADAPTER.validate_python(raw) for raw in raws]

    def away_exists(self, session_id: str) -> bool:
        """Return True if the machine has the session (spooled from its start, or cached)."""
        return bool(self.spooled_from_start(session_id) or self.cache.get(session_id))

    def away_pointer(self, instance_id: str) -> str | None:
        """Return the session this instance last used, as the machine knows it."""
        session_id = self.cache.pointer(instance_id)
        return session_id if session_id and self.away_exists(session_id) else None

    def away_latest(self) -> tuple[str, str | None] | None:
        """Return the project's newest session the machine has with a turn, and its host."""
        found: list[tuple[str, str, str | None]] = []
        for session_id in spooled_sessions(self.spool_dir):
            events = self.spooled_events(session_id)
            if any(event.turn is not None for event in events):
                found.append((events[-1].ts.isoformat(), session_id, None))
        for session_id, entry in self.cache.sessions():
            if int(entry["snapshot"].get("turns") or 0) > 0:
                found.append((str(entry.get("last_active") or ""), session_id, entry.get("host")))
        if not found:
            return None
        _, session_id, host = max(found, key=lambda item: _instant(item[0]))
        return session_id, host

    def away_snapshot(
        self, session_id: str, warnings: list[str] | None
    ) -> tuple[SessionState | None, str | None]:
        """Return the cached snapshot (None for a spool-born session: its events say it)."""
        entry = None if self.spooled_from_start(session_id) else self.cache.get(session_id)
        return parse_snapshot(entry["snapshot"], session_id, warnings) if entry else (None, None)

    def away_last_time(self, session_id: str) -> datetime | None:
        """Return the time of the session's last event the machine knows of."""
        events = self.spooled_events(session_id)
        if events:
            return events[-1].ts
        entry = self.cache.get(session_id)
        return _instant(str(entry.get("last_active") or "")) if entry else None

    def away_events(self, session_id: str) -> LogScan:
        """Return a spool-born session's events (nothing for another)."""
        return LogScan(events=self.spooled_events(session_id))

    def open_spooled(self, session_id: str, redactor: Redactor | None) -> Session:
        """Open a session born in the spool for writing on: its events go on to the spool."""
        events = self.spooled_events(session_id)
        if events and in_use(self.spool_dir, session_id):
            raise SessionLockedError(
                f"session {session_id} is in use by another agent-assist on this machine"
            )
        if not events:
            raise SessionError(
                f"session {session_id} is kept in the database at {self.pg.info.where}, which "
                "cannot be reached now: it can be opened once it answers"
            )
        state = state_from_events(session_id, events)
        start = events[0].data
        state.instance_id = getattr(start, "instance_id", None)
        state.workspace_root = str(self.workspace_root)
        metadata = state.persistence == "metadata"
        scrubber = self.pg.scrubber((redactor or Redactor()).with_mode(metadata))
        create_row = self.row_maker(
            session_id, state.instance_id, state.persistence, state.parent_session_id
        )
        next_seq = events[-1].seq + 1
        log = self.session_log(session_id, None, next_seq, scrubber, create_row)
        session = Session(state, log, build_history(events))
        log.describe = lambda: session.state
        settle_opened(session, next_seq)
        return session

    def new_offline_id(self) -> str:
        """Return a fresh random id no spool of this machine uses (the database is away)."""
        while True:
            candidate = secrets.token_hex(6)
            if not Spool(self.spool_dir, candidate, Redactor()).exists:
                return candidate


def _instant(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return datetime.min.replace(tzinfo=datetime.now().astimezone().tzinfo)


def replay_left_spools(store: OfflineStart) -> list[str]:
    """Send what a process that died (or closed) while the database was away left in the spool.

    A session born in the spool gets its row first (and its instance's pointer, as it was
    that instance's session). Return the messages to show (one per session replayed, or
    kept because it could not be: in use by another process, or written meanwhile).
    """
    said = []
    store.flush_pointers()
    for session_id in spooled_sessions(store.spool_dir):
        if in_use(store.spool_dir, session_id):  # a server of this machine writes it now
            logger.info("session %s: its spool is being written by a server here", session_id)
            continue
        try:
            writer = store.pg.acquire_writer(session_id)
        except SessionError as exc:
            said.append(f"session {session_id}: its spooled events wait ({exc})")
            continue
        try:
            spool = Spool(store.spool_dir, session_id, writer.redactor)
            create_row = None
            born = store.spooled_from_start(session_id)
            if born is not None and store.pg.session(session_id) is None:
                state = state_from_events(session_id, store.spooled_events(session_id))
                instance = born[0].get("data", {}).get("instance_id")
                create_row = store.row_maker(session_id, instance, state.persistence)
                if isinstance(instance, str) and store.pg.pointer(store.project, instance) is None:
                    store.point_later(instance, session_id)  # its instance's last session
            sent = replay_spool(spool, writer, create_row)
            if create_row is not None:  # its listing columns, as its log would have kept them
                writer.set_listing(state.title, state.turns, state.phase)
            said.append(f"session {session_id}: {sent} spooled events sent to the database")
        except (SessionError, LogError) as exc:
            said.append(f"session {session_id}: its spooled events could not be sent ({exc})")
        finally:
            writer.release()
    return said
