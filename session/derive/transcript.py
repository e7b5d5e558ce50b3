"""The transcript: the log projected into the chat as the user saw it, for redrawing a view."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import orjson

from ..events import (
    AssistantMessageEvent,
    ChunkEvent,
    CompactEvent,
    EndReason,
    Event,
    RewindEvent,
    StepRetryEvent,
    StepStartEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    response_text,
)


@dataclass
class TranscriptItem:
    """One line of the chat as a user saw it."""

    turn: int | None
    role: str  # user | assistant | tool | notice
    text: str
    seq: int
    end_reason: EndReason | None = None
    status: str | None = None
    partial: bool = False  # an answer cut short (stopped, failed): only what was streamed


def transcript(events: Iterable[Event]) -> list[TranscriptItem]:
    """Project the log into the chat transcript; turns undone by a rewind disappear."""
    items: list[TranscriptItem] = []
    chunks: list[str] = []
    tools: dict[str, TranscriptItem] = {}
    for event in events:
        if isinstance(event, TurnStartEvent):
            chunks = []
            items.append(TranscriptItem(event.turn, "user", event.data.input, event.seq))
        elif isinstance(event, ChunkEvent):
            chunks.append(event.data.delta)
        elif isinstance(event, StepStartEvent | StepRetryEvent):
            chunks = []
        elif isinstance(event, AssistantMessageEvent):
            text = response_text(event.data.message) or "".join(chunks)
            chunks = []
            if text:
                items.append(TranscriptItem(event.turn, "assistant", text, event.seq))
        elif isinstance(event, ToolCallEvent):
            args = orjson.dumps(event.data.args, default=str).decode()
            item = TranscriptItem(event.turn, "tool", f"{event.data.name} {args}", event.seq)
            item.status = "started"
            tools[event.data.tool_call_id] = item
            items.append(item)
        elif isinstance(event, ToolResultEvent):
            if (call := tools.get(event.data.tool_call_id)) is not None:
                call.status = "failed" if event.data.is_error else "done"
        elif isinstance(event, TurnEndEvent):
            if chunks:  # streamed, never completed: shown as a partial reply
                item = TranscriptItem(event.turn, "assistant", "".join(chunks), event.seq)
                item.partial = True
                items.append(item)
                chunks = []
            last = items[-1] if items else None
            if last is None or last.role != "assistant" or last.turn != event.turn:
                last = TranscriptItem(event.turn, "assistant", "", event.seq)
                items.append(last)
            last.end_reason = event.data.reason
        elif isinstance(event, RewindEvent):
            items = [item for item in items if item.seq <= event.data.to_seq]
        elif isinstance(event, CompactEvent):
            items.append(TranscriptItem(None, "notice", "Older turns were compacted.", event.seq))
    return items
