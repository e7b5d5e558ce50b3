"""A session's log replayed as `session/update`s, in order (what `session/load` sends).

As the transcript (`session/derive/transcript.py`) shows it: user messages, the answers
(streamed text of an answer that never completed, too), tool calls with their final status,
turns undone by a rewind left out. What is held at a time is one answer's chunks and the
calls of one turn awaiting their results, whatever the session's length.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from acp.helpers import update_agent_message_text, update_user_message_text
from acp.schema import AgentMessageChunk, ToolCallStart, UserMessageChunk

from session.events import (
    AssistantMessageEvent,
    ChunkEvent,
    CompactEvent,
    Event,
    RewindEvent,
    StepRetryEvent,
    StepStartEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
)

from .updates import ToolStatus, tool_started

Update = UserMessageChunk | AgentMessageChunk | ToolCallStart

ENDINGS = {
    "interrupted": "interrupted (the agent stopped before its end)",
    "aborted": "cancelled",
    "error": "failed",
}


def rewinds(events: Iterable[Event]) -> list[tuple[int, int]]:
    """Return each rewind as (its seq, the seq it went back to)."""
    return [(e.seq, e.data.to_seq) for e in events if isinstance(e, RewindEvent)]


def undone(seq: int, found: list[tuple[int, int]]) -> bool:
    """Return True if a later rewind went back past `seq`."""
    return any(at > seq > to for at, to in found)


def _text(message: dict[str, Any]) -> str:
    parts = message.get("parts", [])
    return "".join(
        p.get("content", "")
        for p in parts
        if isinstance(p, dict)
        and p.get("part_kind") == "text"
        and isinstance(p.get("content"), str)
    )


def replay(events: Iterable[Event], root: Path, found: list[tuple[int, int]]) -> Iterator[Update]:
    """Yield the updates that redraw the conversation (`found`: the log's `rewinds`)."""
    chunks: list[str] = []
    calls: dict[str, ToolCallEvent] = {}
    for event in events:
        if isinstance(event, TurnStartEvent):
            chunks = []
            if not undone(event.seq, found):
                yield update_user_message_text(event.data.input)
        elif isinstance(event, ChunkEvent):
            chunks.append(event.data.delta)
        elif isinstance(event, StepStartEvent | StepRetryEvent):
            chunks = []
        elif isinstance(event, AssistantMessageEvent):
            text = _text(event.data.message) or "".join(chunks)
            chunks = []
            if text and not undone(event.seq, found):
                yield update_agent_message_text(text)
        elif isinstance(event, ToolCallEvent):
            calls[event.data.tool_call_id] = event
        elif isinstance(event, ToolResultEvent):
            call = calls.pop(event.data.tool_call_id, None)
            if call is not None and not undone(call.seq, found):
                status: ToolStatus = "failed" if event.data.is_error else "completed"
                yield tool_started(
                    root, call.data.tool_call_id, call.data.name, call.data.args, status
                )
        elif isinstance(event, TurnEndEvent):
            for call in calls.values():  # never answered: the turn ended first
                if not undone(call.seq, found):
                    yield tool_started(
                        root, call.data.tool_call_id, call.data.name, call.data.args, "failed"
                    )
            calls = {}
            if undone(event.seq, found):
                chunks = []
                continue
            if chunks:  # streamed, never completed: what the user saw
                yield update_agent_message_text("".join(chunks))
                chunks = []
            ending = ENDINGS.get(event.data.reason)
            if ending:
                yield update_agent_message_text(f"\n\n_(turn {event.turn} was {ending})_")
        elif isinstance(event, CompactEvent) and not undone(event.seq, found):
            yield update_agent_message_text("_(older turns were compacted)_\n\n")
