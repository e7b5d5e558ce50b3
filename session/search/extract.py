"""Which text of which event is indexed: events turned into rows, in log order.

Streamed text (`assistant/chunk`) is indexed only where no `assistant/message` holds it: a
step that was aborted or cut off is indexed as one `assistant/chunk` row at the seq of the
`turn/end` that closed it (or of its last chunk when something else closed it). A step still
streaming when the index is synced keeps its text in `stream_*` and gets a provisional row
at its last chunk, replaced at the next sync. Metadata-mode placeholders are never indexed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import orjson

from ..events import (
    AssistantMessageEvent,
    ChunkEvent,
    CompactEvent,
    DecisionEvent,
    DriftEvent,
    Event,
    PhaseEvent,
    StepStartEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    response_text,
)
from .filters import joined_paths, tool_paths
from .schema import (
    _SEQ_LIMIT,
    PART_EVENT,
    PART_STREAM,
    STREAM_TYPE,
    SearchError,
    SyncProgress,
    _rowid,
)
from .text import clean, stored_norm

_PLACEHOLDER = re.compile(r"\[not persisted: sha256:[0-9a-f]{16}, \d+ chars\]")

# rowid, turn, step, ts, type, text, norm, tool, paths
Row = tuple[int, int | None, int | None, datetime, str, str, str | None, str | None, str | None]


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()


def _joined(pieces: Iterable[str | None]) -> str:
    """Join the non-empty pieces that are real content (not metadata-mode placeholders)."""
    return "\n".join(p for p in pieces if p and not _PLACEHOLDER.fullmatch(p))


class Extractor:
    """Turns events into text rows; carries an unfinished stream from one sync to the next."""

    def __init__(self, session_id: str, progress: SyncProgress) -> None:
        self.session_id = session_id
        self.num = progress.num
        self.stream: list[str] = [progress.stream_text] if progress.stream_text else []
        self.stream_seq = progress.stream_seq
        self.stream_turn = progress.stream_turn
        self.stream_step = progress.stream_step
        self.stream_ts = progress.stream_ts
        self.rows: list[Row] = []

    def add(
        self,
        at: tuple[int, int, int | None, int | None, datetime],  # seq, part, turn, step, ts
        type_: str,
        text: str,
        tool: str | None = None,
        paths: str | None = None,
    ) -> None:
        """Add one row (unless its text is empty or a metadata-mode placeholder)."""
        seq, part, turn, step, ts = at
        if seq >= _SEQ_LIMIT:
            raise SearchError(f"seq {seq} is too large for the search index")
        if text and not _PLACEHOLDER.fullmatch(text):
            text = clean(text)
            rowid = _rowid(self.num, seq, part)
            self.rows.append((rowid, turn, step, ts, type_, text, stored_norm(text), tool, paths))

    def add_stream(self, now: datetime, seq: int | None = None) -> None:
        """Add the open stream's row: at `seq` (time `now`), else at its last chunk's.

        `now` is also the time of a stream whose last chunk's is unknown (an index of an
        older version kept it open).
        """
        if self.stream and self.stream_seq is not None:
            at = self.stream_seq if seq is None else seq
            when = self.stream_ts if seq is None and self.stream_ts is not None else now
            where = (at, PART_STREAM, self.stream_turn, self.stream_step, when)
            self.add(where, STREAM_TYPE, "".join(self.stream))

    def _flush_stream(self, now: datetime, seq: int | None = None) -> None:
        """Index streamed text that no `assistant/message` holds (at `seq` or its last chunk)."""
        self.add_stream(now, seq)
        self.stream = []
        self.stream_seq = self.stream_turn = self.stream_step = None
        self.stream_ts = None

    def feed(self, event: Event) -> None:
        """Add the rows of one event (events must come in log order)."""
        at = (event.seq, PART_EVENT, event.turn, event.step, event.ts)
        if isinstance(event, ChunkEvent):
            self.stream.append(event.data.delta)
            self.stream_seq, self.stream_turn = event.seq, event.turn
            self.stream_step, self.stream_ts = event.step, event.ts
        elif isinstance(event, AssistantMessageEvent):
            text = response_text(event.data.message) or "".join(self.stream)
            self.stream = []
            self.stream_seq = None
            self.add(at, event.type, text)
        elif isinstance(event, TurnStartEvent):
            self._flush_stream(event.ts)
            self.add(at, event.type, event.data.input)
        elif isinstance(event, StepStartEvent):
            self._flush_stream(event.ts)
        elif isinstance(event, TurnEndEvent):
            self._flush_stream(event.ts, event.seq)
            self.add(at, event.type, event.data.error or "")
        elif isinstance(event, ToolCallEvent):
            args = _joined([_as_text(event.data.args)])
            text = f"{event.data.name} {args}" if args else event.data.name
            paths = joined_paths(tool_paths(event.data.args))
            self.add(at, event.type, text, event.data.name, paths)
        elif isinstance(event, ToolResultEvent):
            self.add(at, event.type, _as_text(event.data.content), event.data.name)
        elif isinstance(event, CompactEvent):
            self.add(at, event.type, _joined([event.data.summary, *event.data.decisions]))
        elif isinstance(event, DecisionEvent):
            self.add(at, event.type, event.data.text)
        elif isinstance(event, DriftEvent):
            listed = [*event.data.modified, *event.data.deleted, *event.data.created]
            self.add(at, event.type, _joined(listed), paths=joined_paths(listed))
        elif isinstance(event, PhaseEvent):
            self.add(at, event.type, event.data.phase or "")

    def open_stream(self) -> tuple[str | None, int | None, int | None]:
        """Return the stream still open after the last event (text, last chunk seq, turn).

        Its step and time are `stream_step` and `stream_ts`.
        """
        if not self.stream or self.stream_seq is None:
            return None, None, None
        return "".join(self.stream), self.stream_seq, self.stream_turn
