"""A session read from its store without opening it for writing: metadata, events, transcript."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .output import iso

if TYPE_CHECKING:
    from session.events import Event
    from session.snapshot import SessionState
    from session.store.backend import SessionStore


@dataclass
class SessionDump:
    """A session read from its store: metadata, events, transcript and what was wrong."""

    session_id: str
    state: SessionState
    events: list[Event]
    items: list[dict[str, Any]]
    problems: list[str] = field(default_factory=list)
    read_only: str | None = None


def load_session(store: SessionStore, session_id: str) -> SessionDump:
    """Read a session's events (and snapshot) without opening it for writing."""
    from session.derive.transcript import transcript
    from session.snapshot import state_from_events

    from ..protocol import transcript_items

    scan = store.read_events(session_id)
    warnings: list[str] = []
    state, snapshot_read_only = store.read_snapshot(session_id, warnings)
    if state is None:
        state = state_from_events(session_id, scan.events)
    problems = [p.message for p in scan.problems if p.kind != "recovered"] + warnings
    return SessionDump(
        session_id,
        state,
        scan.events,
        [item.wire() for item in transcript_items(transcript(scan.events))],
        problems,
        scan.read_only_reason or snapshot_read_only,
    )


def session_meta(dump: SessionDump, store: SessionStore) -> dict[str, Any]:
    """Return the session's metadata as `show --json` and `export` print it.

    `log` is the log file, or for PostgreSQL the database and the session id.
    """
    state = dump.state
    meta: dict[str, Any] = {
        "sessionId": dump.session_id,
        "title": state.title,
        "createdAt": iso(state.created_at),
        "updatedAt": iso(state.updated_at),
        "turns": state.turns,
        "events": len(dump.events),
        "parentSessionId": state.parent_session_id,
        "workspace": str(store.workspace_root),
        "log": store.log_location(dump.session_id),
        "persistence": state.persistence,
        "problems": dump.problems,
        "readOnly": dump.read_only,
    }
    return meta
