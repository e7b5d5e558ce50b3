"""Session: an open session, whose every appended event is folded into its state and history."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock

from ..derive.history import HistoryBuilder, HistoryItem, ReplayRequiredError, build_history
from ..errors import ReadOnlySessionError, SessionError
from ..events import Event
from ..log.reader import scan_log
from ..log.writer import EventLog, LogError
from ..snapshot import SessionState, apply_event_to_state

# The history sent to the model and kept in a snapshot: the newest whole turns within this
# many (estimated) tokens. Older turns stay in the log; compaction summarises them.
DEFAULT_HISTORY_TOKENS = 64_000


@dataclass
class Session:
    """An open session: its snapshot projection, its log and the history derived from it."""

    state: SessionState
    log: EventLog
    history: HistoryBuilder
    lock: filelock.BaseFileLock | None = None
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
            self.history = _replay_history(self.log.path, self.state)
        if self.history.open_turn is None:
            self.mark_boundary()

    def mark_boundary(self) -> None:
        """Remember the current end of the log as a point no turn spans (for snapshots)."""
        self.boundary_offset = self.log.offset
        self.boundary_seq = self.state.last_seq
        self.boundary_items = list(self.history.items)  # references only: cheap

    def close(self) -> None:
        """Fsync and close the log and release the lock."""
        try:
            self.log.close()
        finally:
            if self.lock is not None:
                self.lock.release()
                self.lock = None


def _replay_history(path: Path, state: SessionState) -> HistoryBuilder:
    if state.persistence == "metadata":
        return HistoryBuilder()
    return build_history(scan_log(path).events)
