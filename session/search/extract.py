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
)
from .schema import _SEQ_LIMIT, PART_EVENT, PART_STREAM, STREAM_TYPE, SearchError, _Progress, _rowid
from .text import clean, stored_norm

_PLACEHOLDER = re.compile(r"\[not persisted: sha256:[0-9a-f]{16}, \d+ chars\]")

Row = tuple[int, int | None, str, str, str | None]  # rowid, turn, type, text, norm


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()


def _joined(pieces: Iterable[str | None]) -> str:
    """Join the non-empty pieces that are real content (not metadata-mode placeholders)."""
    return "\n".join(p for p in pieces if p and not _PLACEHOLDER.fullmatch(p))


def _response_text(message: dict[str, Any]) -> str:
    parts = message.get("parts")
    if not isinstance(parts, list):
        return ""
    return "".join(
        p["content"]
        for p in parts
        if isinstance(p, dict)
        and p.get("part_kind") == "text"
        and isinstance(p.get("content"), str)
    )


class _Extractor:
    """Turns events into text rows; carries an unfinished stream from one sync to the next."""

    def __init__(self, session_id: str, progress: _Progress) -> None:
        self.session_id = session_id
        self.num = progress.num
        self.stream: list[str] = [progress.stream_text] if progress.stream_text else []
        self.stream_seq = progress.stream_seq
        self.stream_turn = progress.stream_turn
        self.rows: list[Row] = []

    def add(self, seq: int, part: int, turn: int | None, type_: str, text: str) -> None:
        if seq >= _SEQ_LIMIT:
            raise SearchError(f"seq {seq} is too large for the search index")
        if text and not _PLACEHOLDER.fullmatch(text):
            text = clean(text)
            self.rows.append((_rowid(self.num, seq, part), turn, type_, text, stored_norm(text)))

    def _flush_stream(self, seq: int | None = None) -> None:
        """Index streamed text that no `assistant/message` holds (at `seq` or its last chunk)."""
        if self.stream and self.stream_seq is not None:
            at = self.stream_seq if seq is None else seq
            self.add(at, PART_STREAM, self.stream_turn, STREAM_TYPE, "".join(self.stream))
        self.stream = []
        self.stream_seq = None
        self.stream_turn = None

    def feed(self, event: Event) -> None:
        """Add the rows of one event (events must come in log order)."""
        seq, turn = event.seq, event.turn
        if isinstance(event, ChunkEvent):
            self.stream.append(event.data.delta)
            self.stream_seq = seq
            self.stream_turn = turn
        elif isinstance(event, AssistantMessageEvent):
            text = _response_text(event.data.message) or "".join(self.stream)
            self.stream = []
            self.stream_seq = None
            self.add(seq, PART_EVENT, turn, event.type, text)
        elif isinstance(event, TurnStartEvent):
            self._flush_stream()
            self.add(seq, PART_EVENT, turn, event.type, event.data.input)
        elif isinstance(event, StepStartEvent):
            self._flush_stream()
        elif isinstance(event, TurnEndEvent):
            self._flush_stream(seq)
            self.add(seq, PART_EVENT, turn, event.type, event.data.error or "")
        elif isinstance(event, ToolCallEvent):
            args = _joined([_as_text(event.data.args)])
            text = f"{event.data.name} {args}" if args else event.data.name
            self.add(seq, PART_EVENT, turn, event.type, text)
        elif isinstance(event, ToolResultEvent):
            self.add(seq, PART_EVENT, turn, event.type, _as_text(event.data.content))
        elif isinstance(event, CompactEvent):
            text = _joined([event.data.summary, *event.data.decisions])
            self.add(seq, PART_EVENT, turn, event.type, text)
        elif isinstance(event, DecisionEvent):
            self.add(seq, PART_EVENT, turn, event.type, event.data.text)
        elif isinstance(event, DriftEvent):
            data = event.data
            paths = _joined([*data.modified, *data.deleted, *data.created])
            self.add(seq, PART_EVENT, turn, event.type, paths)
        elif isinstance(event, PhaseEvent):
            self.add(seq, PART_EVENT, turn, event.type, event.data.phase or "")

    def open_stream(self) -> tuple[str | None, int | None, int | None]:
        """Return the stream still open after the last event (text, last chunk seq, turn)."""
        if not self.stream or self.stream_seq is None:
            return None, None, None
        return "".join(self.stream), self.stream_seq, self.stream_turn
