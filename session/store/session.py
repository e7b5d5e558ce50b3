"""Session: an open session, whose every appended event is folded into its state and history."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..derive.history import (
    HistoryBuilder,
    HistoryItem,
    ReplayRequiredError,
    build_history,
    tail_of,
)
from ..errors import ReadOnlySessionError, SessionError
from ..events import Event
from ..log.writer import LogError
from ..snapshot import SessionState, apply_event_to_state
from ..workspace.manifest import plain_dict

if TYPE_CHECKING:
    from ..redaction import Redactor


class Lock(Protocol):
    """The writer lock a session holds (an `flock`, or nothing when the log holds it)."""

    def release(self) -> None:
        """Let go of the lock."""
        ...


class SessionLog(Protocol):
    """An open session's writing end: numbers, scrubs and stores its events, in order."""

    next_seq: int
    redactor: Redactor
    read_only: bool

    @property
    def offset(self) -> int:
        """Return the position after the last event (a byte offset locally, else a seq)."""
        ...

    @property
    def pending(self) -> int:
        """Return how many appended events the store has not taken yet (0 locally)."""
        ...

    @property
    def online(self) -> bool:
        """Return False while the store cannot be reached (events wait in a local spool)."""
        ...

    def retry(self) -> bool:
        """Try to hand what waits to the store now (if it is time); True if nothing waits."""
        ...

    def append(
        self,
        type_: str,
        data: Mapping[str, Any],
        *,
        turn: int | None = None,
        step: int | None = None,
        sync: bool | None = None,
    ) -> Event:
        """Validate, scrub and append one event (durable on return if `sync`, by default its type).

        The event returned is unscrubbed, for in-memory use. Raises `LogError` when the
        store refuses (with `written` set if the event is stored but not known durable).
        """
        ...

    def copy(self, events: Sequence[Event], lines: bytes | None = None) -> None:
        """Append already-written events verbatim (a fork's prefix): their seqs continue the log.

        `lines`, their serialized lines, are written byte for byte where the store keeps lines.
        """
        ...

    def sync(self) -> None:
        """Make everything appended so far durable."""
        ...

    def replay(self) -> list[Event]:
        """Return every readable event stored so far (to rebuild a projection)."""
        ...

    def close(self) -> None:
        """Make everything durable and stop writing (safe to call twice)."""
        ...


# The history sent to the model and kept in a snapshot: the newest whole turns within this
# many (estimated) tokens. Older turns stay in the log; compaction summarises them.
DEFAULT_HISTORY_TOKENS = 64_000


@dataclass
class Session:
    """An open session: its snapshot projection, its log and the history derived from it."""

    state: SessionState
    log: SessionLog
    history: HistoryBuilder
    lock: Lock | None = None
    read_only_reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    boundary_offset: int = 0
    boundary_seq: int = -1
    boundary_items: list[HistoryItem] = field(default_factory=list)
    history_tokens: int = DEFAULT_HISTORY_TOKENS

    @property
    def session_id(self) -> str:
        """Return the session id."""
        return self.state.session_id

    @property
    def read_only(self) -> bool:
        """Return True if this session must not be written."""
        return self.read_only_reason is not None

    @property
    def next_seq(self) -> int:
        """Return the seq the next appended event gets."""
        return self.log.next_seq

    @property
    def open_turn(self) -> int | None:
        """Return the number of the turn in progress, if any."""
        return self.history.open_turn

    def append(
        self,
        type_: str,
        data: Mapping[str, Any],
        *,
        turn: int | None = None,
        step: int | None = None,
        sync: bool | None = None,
    ) -> Event:
        """Append an event and fold it into the state and the history."""
        if self.read_only_reason is not None:
            raise ReadOnlySessionError(f"session is read-only: {self.read_only_reason}")
        try:
            event = self.log.append(type_, data, turn=turn, step=step, sync=sync)
        except LogError as exc:
            if exc.written is not None:  # in the file, not known durable: keep state in step
                self._fold(exc.written)
            raise SessionError(str(exc), errno=exc.errno) from None
        self._fold(event)
        return event

    def _fold(self, event: Event) -> None:
        apply_event_to_state(self.state, event)
        try:
            self.history.apply(event)
        except ReplayRequiredError:
            self.history = _replay_history(self.log.replay(), self.state)
        if self.history.open_turn is None:
            self.mark_boundary()

    def mark_boundary(self) -> None:
        """Remember the current end of the log as a point no turn spans (for snapshots)."""
        self.boundary_offset = self.log.offset
        self.boundary_seq = self.state.last_seq
        self.boundary_items = list(self.history.items)  # references only: cheap

    def sync(self) -> None:
        """Make everything appended so far durable."""
        try:
            self.log.sync()
        except LogError as exc:
            raise SessionError(str(exc), errno=exc.errno) from None

    def close(self) -> None:
        """Make the log durable, close it and release the lock."""
        try:
            self.log.close()
        finally:
            if self.lock is not None:
                self.lock.release()
                self.lock = None


def _replay_history(events: list[Event], state: SessionState) -> HistoryBuilder:
    if state.persistence == "metadata":
        return HistoryBuilder()
    return build_history(events)


def write_session_start(session: Session) -> None:
    """Append the session's `session/start` (seq 0, its lineage and drift baseline) if unwritten."""
    if session.log.next_seq == 0:
        state = session.state
        session.append(
            "session/start",
            {
                "session_id": state.session_id,
                "parent_session_id": state.parent_session_id,
                "fork_boundary": state.fork_boundary,
                "instance_id": state.instance_id,
                "workspace_root": state.workspace_root,
                "persistence": state.persistence,
                "manifest": plain_dict(state.file_manifest),
            },
        )


def boundary_state(session: Session) -> SessionState:
    """Return a copy of the state as a snapshot keeps it: at the last turn boundary."""
    state = session.state.model_copy()
    state.log_offset = session.boundary_offset
    state.last_seq = session.boundary_seq
    state.recent_messages = (
        []
        if state.persistence == "metadata"
        else tail_of(session.boundary_items, session.history_tokens)
    )
    return state


def settle_opened(session: Session, boundary_offset: int) -> None:
    """Finish opening a session: mark its last turn boundary; close a turn left open.

    `boundary_offset` is where the stored snapshot ends (used while a turn is open). A turn
    open at the end of the log was being written by a process that died: it is closed
    honestly, with a synthesized `turn/end {interrupted}`, unless the session is read-only.
    """
    open_turn = session.history.open_turn
    if open_turn is None:
        session.mark_boundary()
        return
    session.boundary_offset = boundary_offset
    session.boundary_seq = session.state.last_seq
    if not session.read_only:
        session.append("turn/end", {"reason": "interrupted", "synthesized": True}, turn=open_turn)
        session.warnings.append(f"turn {session.state.turns} was interrupted and is marked as such")
