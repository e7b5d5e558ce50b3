"""Opening a PostgreSQL session: its snapshot and the events after it, or all its events.

The same restore as a local open (`store/restore.py`): the snapshot's state with the
events after `last_seq` folded in, the history from the snapshot's recent messages (or
both rebuilt from every event when that cannot be done), a turn left open by a writer that
died closed as interrupted. What the database cannot tell apart from the local files (a
torn line, a damaged tail) does not arise: a row is written whole or not at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..errors import SessionError
from ..events import EVENT_ADAPTER, Event
from ..redaction import Redactor
from ..store.restore import continue_snapshot, rebuild, without_content
from ..store.session import Session, settle_opened
from .records import SessionRow
from .writer import SessionWriter

if TYPE_CHECKING:
    from ..snapshot import SessionState
    from .log import PgEventLog
    from .store import PgStore


class Opener(Protocol):
    """What opening reads of the store (`PgSessionStore`)."""

    pg: PgStore

    def read_snapshot(
        self, session_id: str, warnings: list[str] | None = None, *, keep: bool = False
    ) -> tuple[SessionState | None, str | None]:
        """Return the stored snapshot (migrated) or None, and why it is read-only."""
        ...

    def session_log(
        self, session_id: str, writer: SessionWriter | None, next_seq: int, redactor: Redactor
    ) -> PgEventLog:
        """Return the session's writing end (read-only without `writer`)."""
        ...


def open_from_rows(
    store: Opener,
    row: SessionRow,
    writer: SessionWriter | None,
    redactor: Redactor | None,
    read_only: bool,
) -> Session:
    """Build the open session of `row` (locked by `writer`, or read-only without one)."""
    session_id = row.session_id
    warnings: list[str] = []
    state, read_only_reason = store.read_snapshot(session_id, warnings)
    events = _events(store, session_id, state.last_seq + 1 if state is not None else 0)
    builder = None if state is None else continue_snapshot(state, events)
    if state is None or builder is None:
        state, builder = rebuild(session_id, _events(store, session_id, 0), state)
        state.instance_id = row.instance_id
        state.workspace_root = row.workspace_root
    if state.last_seq + 1 != row.next_seq:
        raise SessionError(
            f"session {session_id}: its events end at seq {state.last_seq}, but the store "
            f"numbers the next one {row.next_seq}"
        )
    metadata = state.persistence == "metadata"
    builder = without_content(state, builder)
    if writer is not None:
        writer.redactor = writer.redactor.with_mode(metadata)  # the same secrets
    if read_only_reason is not None:
        warnings.append(f"session {session_id} opened read-only: {read_only_reason}")
    elif read_only or writer is None:
        read_only_reason = "opened read-only"
    if read_only_reason is not None and writer is not None:
        writer.release()
        writer = None
    scrubber = (redactor or Redactor()).with_mode(metadata)
    log = store.session_log(session_id, writer, row.next_seq, scrubber)
    session = Session(state, log, builder, None, read_only_reason, warnings)
    log.describe = lambda: session.state
    settle_opened(session, row.next_seq)
    return session


def _events(store: Opener, session_id: str, from_seq: int) -> list[Event]:
    raws = store.pg.read_events(session_id, from_seq)
    return [EVENT_ADAPTER.validate_python(raw) for raw in raws]
