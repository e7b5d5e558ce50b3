"""Opening a PostgreSQL session: its snapshot and the events after it, or all its events.

The same projection as a local open (`store/opening.py`): the snapshot's state with the
events after `last_seq` folded in, the history from the snapshot's recent messages (or
rebuilt from every event when that cannot be done), a turn left open by a writer that
died closed as interrupted. What the database cannot tell apart from the local files (a
torn line, a damaged tail) does not arise: a row is written whole or not at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..derive.history import HistoryBuilder, ReplayRequiredError, build_history
from ..errors import SessionError
from ..events import EVENT_ADAPTER, Event
from ..redaction import Redactor
from ..snapshot import apply_event_to_state, state_from_events
from ..store.session import Session, settle_opened
from .records import SessionRow
from .writer import SessionWriter

if TYPE_CHECKING:
    from .backend import PgSessionStore


def open_from_rows(
    store: PgSessionStore,
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
    builder: HistoryBuilder | None = None
    if state is not None:
        builder = HistoryBuilder.from_snapshot(
            [] if state.persistence == "metadata" else state.recent_messages, state.last_seq
        )
        try:
            for event in events:
                builder.apply(event)
        except ReplayRequiredError:
            builder = None
        for event in events:
            apply_event_to_state(state, event)
    if state is None or builder is None:
        every = _events(store, session_id, 0)
        rebuilt = state_from_events(session_id, every)
        if state is not None:  # keep what only the snapshot knows
            for name in (
                "file_manifest",
                "file_stats",
                "stat_cache",
                "dir_stats",
                "tracked_patterns",
                "manifest_recorded_ns",
                "agent_spec_path",
            ):
                setattr(rebuilt, name, getattr(state, name))
        rebuilt.instance_id = row.instance_id
        rebuilt.workspace_root = row.workspace_root
        state, builder = rebuilt, build_history(every)
    if state.last_seq + 1 != row.next_seq:
        raise SessionError(
            f"session {session_id}: its events end at seq {state.last_seq}, but the store "
            f"numbers the next one {row.next_seq}"
        )
    metadata = state.persistence == "metadata"
    if metadata:  # its events hold placeholders, never conversation: nothing to send
        builder = HistoryBuilder(base_seq=state.last_seq, open_turn=builder.open_turn)
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


def _events(store: PgSessionStore, session_id: str, from_seq: int) -> list[Event]:
    raws = store.pg.read_events(session_id, from_seq)
    return [EVENT_ADAPTER.validate_python(raw) for raw in raws]
