"""A session read from its store without opening it for writing: metadata, events, transcript."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .output import iso

if TYPE_CHECKING:
    from session.events import Event
    from session.snapshot import SessionState

    from .targets import AnyStore


@dataclass
class SessionDump:
    """A session read from its store: metadata, events, transcript and what was wrong."""

    session_id: str
    state: SessionState
    events: list[Event]
    items: list[dict[str, Any]]
    problems: list[str] = field(default_factory=list)
    read_only: str | None = None


def load_session(manager: AnyStore, session_id: str) -> SessionDump:
    """Read a session's events (and snapshot) without opening it for writing."""
    from session.derive.transcript import transcript
    from session.snapshot import state_from_events

    from ..protocol import transcript_items

    scan = manager.read_events(session_id)
    warnings: list[str] = []
    state, snapshot_read_only = manager.read_snapshot(session_id, warnings)
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


def session_meta(dump: SessionDump, manager: AnyStore) -> dict[str, Any]:
    """Return the session's metadata as `show --json` and `export` print it.

    `log` is the log file, or for PostgreSQL the database and the session id.
    """
    from .targets import database_of, local_of

    database = database_of(manager)
    if database is not None:
        log = f"{database.label} (session {dump.session_id})"
    else:
        log = str(local_of(manager).layout.log_path(dump.session_id))
    state = dump.state
    meta: dict[str, Any] = {
        "sessionId": dump.session_id,
        "title": state.title,
        "createdAt": iso(state.created_at),
        "updatedAt": iso(state.updated_at),
        "turns": state.turns,
        "events": len(dump.events),
        "parentSessionId": state.parent_session_id,
        "workspace": str(manager.workspace_root),
        "log": log,
        "persistence": state.persistence,
        "problems": dump.problems,
        "readOnly": dump.read_only,
    }
    return meta
