"""Fork a session at a closed-turn boundary: a new session whose log starts as a copy."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from .derive.history import build_history
from .errors import SessionError
from .events import Event, SessionStartEvent, TurnEndEvent, TurnStartEvent, utcnow
from .log.reader import readable_events
from .snapshot import state_from_events
from .storage import fsync_dir
from .store.manager import SessionManager
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
    manager: SessionManager,
    parent_id: str,
    boundary: int | None = None,
    *,
    instance_id: str | None = None,
) -> ForkResult:
    """Create a child session from `parent_id`'s log up to `boundary` (inclusive).

    The parent's files are only read. The child's log is its own `session/start` (with the
    lineage) followed by the parent's events 1..boundary byte for byte, so seqs line up.
    """
    parent_log = manager.log_path(parent_id)
    manager.check_store_dirs()
    try:
        fd = os.open(parent_log, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise SessionError(f"{parent_log.name} is not a regular file")
            raw = fh.read()
    except FileNotFoundError:
        raise SessionError(f"no session {parent_id} in this project") from None
    except OSError as exc:  # a symlink (ELOOP) is never followed
        raise SessionError(f"cannot read {parent_log.name}: {exc.strerror or exc}") from None
    # What a reader sees: torn writes a crash left and recovery acknowledged are skipped.
    readable = readable_events(raw)
    events: list[Event] = [event for event, _ in readable]
    lines = [line for _, line in readable]
    boundary = check_boundary(events, boundary)
    parent_state, _ = manager.read_snapshot(parent_id)
    first = events[0]
    persistence = (
        parent_state.persistence
        if parent_state is not None
        else first.data.persistence
        if isinstance(first, SessionStartEvent)
        else "full"
    )
    child = manager.create_session(
        instance_id=instance_id,
        persistence=persistence,
        parent_session_id=parent_id,
        fork_boundary=boundary,
        write_start=False,
    )
    try:
        if parent_state is not None:
            child.state.file_manifest = dict(parent_state.file_manifest)
            child.state.agent_spec_path = parent_state.agent_spec_path
        manager.start_log(child)  # seq 0: the child's own session/start, with its lineage
        child.log.append_raw(
            b"".join(line + b"\n" for line in lines[1 : boundary + 1]), boundary + 1
        )
        child.log.sync()
        child_events = manager.read_events(child.session_id).events
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
        manager.write_snapshot(child)
        fsync_dir(manager.sessions_dir)
    except BaseException:
        child.close()
        manager.delete_session(child.session_id)
        raise
    return ForkResult(child, parent_id, boundary)


def log_size(manager: SessionManager, session_id: str) -> int:
    """Return the byte size of a session's log (for tests that the parent is untouched)."""
    return os.stat(manager.log_path(session_id)).st_size
