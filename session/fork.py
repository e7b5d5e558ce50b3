"""Fork a session at a closed-turn boundary: a new session whose log starts as a copy."""

from __future__ import annotations

from dataclasses import dataclass

from .derive.history import build_history
from .errors import SessionError
from .events import Event, SessionStartEvent, TurnEndEvent, TurnStartEvent, utcnow
from .log.writer import LogError
from .paths import is_valid_session_id
from .snapshot import state_from_events
from .store.backend import SessionStore
from .store.session import Session


class ForkError(SessionError):
    """The requested fork boundary is not allowed; the message says why and what is."""


@dataclass(frozen=True)
class ForkResult:
    """The child session and where it was cut from its parent."""

    session: Session
    parent_session_id: str
    boundary: int


def check_boundary(events: list[Event], boundary: int | None) -> int:
    """Return a valid boundary seq or raise ForkError.

    The default is the last event outside a turn: the end of the session, or, while a turn
    is open (streaming, or its end could not be recorded), the point just before it.
    """
    if not events:
        raise ForkError("the session has no events to fork")
    last = events[-1].seq
    if boundary is None:
        boundary = _last_closed(events)
    if boundary < 0 or boundary > last:
        raise ForkError(f"boundary {boundary} is out of range: this session has seqs 0..{last}")
    open_turn: int | None = None
    turn_start = -1
    previous_end = 0
    for event in events[: boundary + 1]:
        if isinstance(event, TurnStartEvent):
            open_turn, turn_start = event.turn, event.seq
        elif isinstance(event, TurnEndEvent):
            open_turn = None
            previous_end = event.seq
    if open_turn is not None:
        closing = next((e.seq for e in events[boundary + 1 :] if isinstance(e, TurnEndEvent)), None)
        hint = f"seq {max(previous_end, turn_start - 1)}"
        if closing is not None:
            hint += f" or seq {closing}"
        raise ForkError(
            f"seq {boundary} is inside turn {open_turn}, which is still open there; "
            f"fork at a closed turn boundary, e.g. {hint}"
        )
    return boundary


def boundary_before_turn(events: list[Event], turn: int) -> int:
    """Return the boundary just before turn `turn` began (the child has the turns before it)."""
    starts = [e for e in events if isinstance(e, TurnStartEvent)]
    start = next((e for e in starts if e.turn == turn), None)
    if start is None:
        numbers = sorted({e.turn for e in starts if e.turn is not None})
        have = f"turns {numbers[0]}–{numbers[-1]}" if numbers else "no turns"
        raise ForkError(f"this session has no turn {turn} ({have})")
    return start.seq - 1


def _last_closed(events: list[Event]) -> int:
    closed, open_turn = 0, False
    for event in events:
        if isinstance(event, TurnStartEvent):
            open_turn = True
        elif isinstance(event, TurnEndEvent):
            open_turn = False
        if not open_turn:
            closed = event.seq
    return closed


def fork_session(
    store: SessionStore,
    parent_id: str,
    boundary: int | None = None,
    *,
    instance_id: str | None = None,
    child_session_id: str | None = None,
    before_turn: int | None = None,
) -> ForkResult:
    """Create a child session from `parent_id`'s log up to `boundary` (inclusive).

    `child_session_id`: the child's id (the seed's `fork(source, boundary?, childSessionId?)`),
    else a random one; an invalid or taken id is a SessionError naming it. `before_turn`
    (instead of `boundary`): just before that turn began, e.g. the turn a file's timeline
    names, to take another route from there.

    The parent is only read. The child's log is its own `session/start` (with the lineage)
    followed by the parent's events 1..boundary (locally byte for byte), so seqs line up.
    """
    events, lines = store.fork_source(parent_id)
    if before_turn is not None:
        if boundary is not None:
            raise ForkError("give a boundary or a turn to fork before, not both")
        boundary = boundary_before_turn(events, before_turn)
    boundary = check_boundary(events, boundary)
    if child_session_id is not None and not is_valid_session_id(child_session_id):
        raise SessionError(f"invalid child session id {child_session_id!r} (12 hex digits)")
    if child_session_id is not None and store.exists(child_session_id):
        raise SessionError(f"session {child_session_id} already exists: choose another id")
    parent_state, _ = store.read_snapshot(parent_id)
    first = events[0]
    persistence = (
        parent_state.persistence
        if parent_state is not None
        else first.data.persistence
        if isinstance(first, SessionStartEvent)
        else "full"
    )
    child = store.create_session(
        instance_id=instance_id,
        persistence=persistence,
        parent_session_id=parent_id,
        fork_boundary=boundary,
        write_start=False,
        session_id=child_session_id,
    )
    try:
        if parent_state is not None:
            child.state.file_manifest = parent_state.file_manifest  # never changed in place
            child.state.agent_spec_path = parent_state.agent_spec_path
        store.start_log(child)  # seq 0: the child's own session/start, with its lineage
        prefix = b"".join(line + b"\n" for line in lines[1 : boundary + 1]) if lines else None
        try:
            child.log.copy(events[1 : boundary + 1], prefix)
        except LogError as exc:
            raise SessionError(str(exc), errno=exc.errno) from None
        child.sync()
        child_events = store.read_events(child.session_id).events
        state = state_from_events(child.session_id, child_events)
        state.created_at = utcnow()
        state.instance_id = instance_id
        state.workspace_root = child.state.workspace_root
        state.file_manifest = child.state.file_manifest or state.file_manifest
        state.agent_spec_path = child.state.agent_spec_path
        if parent_state is not None and state.summary is None:
            state.summary = parent_state.summary
        child.state = state
        child.history = build_history(child_events)
        child.mark_boundary()
        store.write_snapshot(child)  # durable, with the new names (locally: the folder too)
    except BaseException:
        child.close()
        store.delete_session(child.session_id)
        raise
    return ForkResult(child, parent_id, boundary)
