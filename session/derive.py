"""Projections of the log: the model's message history, the transcript, a trimmed tail.

Messages are handled as pydantic-ai's JSON form (`{"kind": "request"|"response", "parts":
[...]}`) so that this module never imports pydantic-ai; `derive_messages()` converts at the
edge, lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from .models import (
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
)

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

Message = dict[str, Any]

COMPACTION_PREFIX = "Summary of the earlier conversation (older turns were compacted):\n"
_CALL_KINDS = frozenset({"tool-call", "builtin-tool-call"})
_ANSWER_KINDS = frozenset({"tool-return", "retry-prompt", "builtin-tool-return"})


class ReplayRequiredError(Exception):
    """A rewind reaches before the events this builder has seen."""


def _is_message(value: object) -> bool:
    if not isinstance(value, dict) or value.get("kind") not in ("request", "response"):
        return False
    parts = value.get("parts")
    return isinstance(parts, list) and all(
        isinstance(p, dict) and isinstance(p.get("part_kind"), str) for p in parts
    )


def text_message(text: str) -> Message:
    """Return a model response holding only `text`."""
    return {"kind": "response", "parts": [{"part_kind": "text", "content": text}]}


def summary_message(summary: str) -> Message:
    """Return the request that stands for compacted turns."""
    return {
        "kind": "request",
        "parts": [{"part_kind": "system-prompt", "content": COMPACTION_PREFIX + summary}],
    }


@dataclass
class HistoryItem:
    """One message of the history, with the seq it came from and cached facts about it."""

    seq: int
    message: Message
    tokens: int = 0
    starts_turn: bool = False
    has_system: bool = False
    plain: bool = False  # nothing `sanitize_messages` could drop, whatever its neighbours

    def __post_init__(self) -> None:
        parts = self.message["parts"]
        self.tokens = estimate_tokens(self.message)
        self.starts_turn = _starts_turn(self.message)
        self.has_system = self.message["kind"] == "request" and any(
            p["part_kind"] == "system-prompt" for p in parts
        )
        self.plain = bool(parts) and not any(
            _is_empty_text(p) or p["part_kind"] in _CALL_KINDS or _is_tool_answer(p) for p in parts
        )


@dataclass
class HistoryBuilder:
    """Folds events, one at a time, into the message history the model is sent."""

    items: list[HistoryItem] = field(default_factory=list)
    base_seq: int = -1
    open_turn: int | None = None
    skipped: int = 0
    _chunks: list[str] = field(default_factory=list)
    _step_answered: bool = False

    @classmethod
    def from_snapshot(cls, messages: Sequence[Message], last_seq: int) -> HistoryBuilder:
        """Start from a snapshot's messages, which cover the log up to `last_seq`."""
        builder = cls(base_seq=last_seq)
        for message in messages:
            builder._add(last_seq, message)
        return builder

    def _add(self, seq: int, message: object) -> None:
        if _is_message(message):
            assert isinstance(message, dict)
            self.items.append(HistoryItem(seq, message))
        else:
            self.skipped += 1

    def apply(self, event: Event) -> None:
        """Fold one event into the history."""
        if isinstance(event, TurnStartEvent):
            if self.open_turn is not None:
                self._close_turn("interrupted")
            self.open_turn = event.turn
            self._chunks = []
            self._step_answered = False
        elif isinstance(event, StepStartEvent):
            self._flush_partial()
            for message in event.data.messages:
                self._add(event.seq, message)
            self._step_answered = False
        elif isinstance(event, ChunkEvent):
            self._chunks.append(event.data.delta)
        elif isinstance(event, StepRetryEvent):
            # The failed attempt's text is dropped; the step's request stays, to be resent.
            self._chunks = []
            self._step_answered = False
        elif isinstance(event, AssistantMessageEvent):
            self._add(event.seq, event.data.message)
            self._chunks = []
            self._step_answered = True
        elif isinstance(event, TurnEndEvent):
            self._close_turn(event.data.reason)
        elif isinstance(event, CompactEvent):
            covers = event.data.covers_seq
            kept = [item for item in self.items if item.seq > covers]
            self.items = [HistoryItem(covers, summary_message(event.data.summary)), *kept]
        elif isinstance(event, RewindEvent):
            raise ReplayRequiredError(event.data.to_seq)

    def _flush_partial(self) -> None:
        # A step that streamed text but never completed: the user saw that text, so the
        # model is told it was said.
        if self._chunks and not self._step_answered:
            text = "".join(self._chunks)
            if text:
                self.items.append(
                    HistoryItem(self.items[-1].seq if self.items else -1, text_message(text))
                )
        self._chunks = []

    def _close_turn(self, reason: EndReason) -> None:
        if reason != "completed":
            self._flush_partial()
        self._chunks = []
        self.open_turn = None

    def request_messages(self, new: Sequence[Message]) -> list[Message]:
        """Return what a model call carrying `new` request messages was sent."""
        return sanitize_messages([item.message for item in self.items] + list(new))

    def messages(self, max_tokens: int | None = None) -> list[Message]:
        """Return the history, valid for a model request (pairs intact, empties dropped).

        With `max_tokens`, only the newest whole turns that fit are returned (see
        `reconstruct_history`); the cost then depends on the tail, not on the session.
        """
        return tail_of(self._pending(), max_tokens)

    def token_bound(self) -> int:
        """Return an upper bound of the estimated tokens of `messages()`, for any budget.

        Trimming and sanitizing only drop messages and parts, and carried system parts move
        between messages; the cached per-item estimates add up to at least as much, so a
        threshold check costs one addition per message instead of re-estimating each.
        """
        return sum(item.tokens for item in self._pending())

    def _pending(self) -> list[HistoryItem]:
        if self.open_turn is not None and self._chunks and not self._step_answered:
            return [*self.items, HistoryItem(-1, text_message("".join(self._chunks)))]
        return self.items


def tail_of(items: Sequence[HistoryItem], max_tokens: int | None) -> list[Message]:
    """Return the messages of `items`, trimmed to `max_tokens` from the end if given.

    Uses the tokens and turn starts cached on the items: no message is re-estimated.
    """
    if max_tokens is None:
        return _sanitize_items(items, [])
    start = len(items)
    total = 0
    seen_start = False
    # Walk back with a margin, and at least to one turn start, then trim precisely.
    while start > 0 and (total <= 2 * max_tokens or not seen_start):
        start -= 1
        total += items[start].tokens
        seen_start = seen_start or items[start].starts_turn
    carried = _system_parts(item.message for item in items[:start] if item.has_system)
    window = items[start:]
    if not window:
        return []
    cut = _cut_at_turn_start(
        len(window),
        [i for i, item in enumerate(window) if item.starts_turn],
        lambda a, b: sum(item.tokens for item in window[a:b]),
        max_tokens,
    )
    head = _system_parts(item.message for item in window[:cut] if item.has_system)
    return _sanitize_items(window[cut:], [*carried, *head])


def _sanitize_items(
    items: Sequence[HistoryItem], system_parts: list[dict[str, Any]]
) -> list[Message]:
    """`_with_system_parts` for history items; skips the checks when every item is plain.

    A plain message (no empty text, no tool call, no tool result) is never changed by
    `sanitize_messages`, nor is its neighbour because of it; carried system-prompt parts
    keep a message plain. A chat without tools therefore costs one flag test per message.
    """
    kept = [item.message for item in items]
    if not all(item.plain for item in items):
        return _with_system_parts(kept, system_parts)
    return _carry(kept, system_parts)


def _cut_at_turn_start(
    count: int, starts: Sequence[int], span_tokens: Callable[[int, int], int], budget: int
) -> int:
    """Return where the kept tail of `count` messages begins (see `reconstruct_history`)."""
    cut = count
    total = 0
    for start in reversed(starts):
        total += span_tokens(start, cut)
        if total > budget and cut != count:
            break
        cut = start
    if cut == count:
        cut = starts[-1] if starts else 0
    elif starts and cut == starts[0]:
        cut = 0  # every turn fits: keep what precedes the first one too, as it is
    return cut


def _system_parts(messages: Iterable[Message]) -> list[dict[str, Any]]:
    return [
        p
        for m in messages
        if m["kind"] == "request"
        for p in m["parts"]
        if p["part_kind"] == "system-prompt"
    ]


def _with_system_parts(kept: list[Message], system_parts: list[dict[str, Any]]) -> list[Message]:
    """Carry `system_parts` into the kept messages (`_carry`), then sanitize."""
    return sanitize_messages(_carry(kept, system_parts))


def _carry(kept: list[Message], system_parts: list[dict[str, Any]]) -> list[Message]:
    """Put `system_parts` first in the first kept message, a request (copied).

    When the kept tail starts with a response, they go in a request of their own before
    it: system-prompt parts in a response are not a valid message.
    """
    if system_parts and kept:
        first = kept[0]
        if first["kind"] == "request":
            kept[0] = {**first, "parts": [*system_parts, *first["parts"]]}
        else:
            kept.insert(0, {"kind": "request", "parts": list(system_parts)})
    return kept


def sanitize_messages(messages: Sequence[Message]) -> list[Message]:
    """Drop empty responses, dangling tool calls and orphan tool results.

    A message that loses nothing is returned as is (the very dict, never copied), so the
    history hands out the same objects turn after turn and conversions cached by identity
    (`ModelMessageCache`) stay valid. Messages are never mutated in place, here or by callers.
    """
    cleaned: list[Message] = []
    for message in messages:
        parts = message["parts"]
        if any(_is_empty_text(p) for p in parts):
            parts = [p for p in parts if not _is_empty_text(p)]
            if parts:
                cleaned.append({**message, "parts": parts})
        elif parts:
            cleaned.append(message)
    result: list[Message] = []
    last = len(cleaned) - 1
    for index, message in enumerate(cleaned):
        parts = message["parts"]
        if message["kind"] == "response":
            if any(p["part_kind"] in _CALL_KINDS for p in parts):
                answered = _answered_ids(cleaned[index + 1] if index < last else None)
                parts = [
                    p for p in parts if p["part_kind"] not in _CALL_KINDS or _call_id(p) in answered
                ]
        elif any(_is_tool_answer(p) for p in parts):
            previous = result[-1] if result and result[-1]["kind"] == "response" else None
            calls = _call_ids(previous)
            parts = [p for p in parts if not _is_tool_answer(p) or _call_id(p) in calls]
        if len(parts) == len(message["parts"]):
            result.append(message)
        elif parts:
            result.append({**message, "parts": parts})
    # Removing a whole message can orphan a neighbour; one more pass settles it.
    return result if len(result) == len(cleaned) else sanitize_messages(result)


def _is_empty_text(part: dict[str, Any]) -> bool:
    return part["part_kind"] in ("text", "thinking") and not part.get("content")


def _is_tool_answer(part: dict[str, Any]) -> bool:
    kind = part["part_kind"]
    if kind == "retry-prompt":
        return part.get("tool_name") is not None
    return kind in _ANSWER_KINDS


def _call_id(part: dict[str, Any]) -> str:
    return str(part.get("tool_call_id", ""))


def _answered_ids(message: Message | None) -> set[str]:
    if message is None or message["kind"] != "request":
        return set()
    return {_call_id(p) for p in message["parts"] if _is_tool_answer(p)}


def _call_ids(message: Message | None) -> set[str]:
    if message is None:
        return set()
    return {_call_id(p) for p in message["parts"] if p["part_kind"] in _CALL_KINDS}


def derive_message_dicts(events: Sequence[Event]) -> list[Message]:
    """Project a full log (from seq 0) into the message history, as pydantic-ai JSON."""
    return build_history(events).messages()


def build_history(events: Sequence[Event]) -> HistoryBuilder:
    """Fold a full log (from seq 0) into a builder, resolving rewinds by replaying prefixes."""
    builder = HistoryBuilder()
    for index, event in enumerate(events):
        if isinstance(event, RewindEvent):
            prefix = [e for e in events[:index] if e.seq <= event.data.to_seq]
            builder = build_history(prefix)
            builder._close_turn("interrupted")  # a rewind always lands between turns
        else:
            builder.apply(event)
    return builder


def derive_messages(events: Sequence[Event]) -> list[ModelMessage]:
    """Project a full log into pydantic-ai `ModelMessage`s (imports pydantic-ai lazily)."""
    return to_model_messages(derive_message_dicts(events))


def to_model_messages(messages: Sequence[Message]) -> list[ModelMessage]:
    """Validate JSON messages into pydantic-ai objects."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter.validate_python(list(messages))


class ModelMessageCache:
    """Converts the history to pydantic-ai objects, validating only messages not seen last time.

    Keyed by identity: history messages are never mutated, and the history hands out the
    same dict for a message turn after turn (`sanitize_messages` copies only what it
    changes), so a turn validates just the messages added since the previous one.
    Compaction, rewind, fork, reset and resume produce new dicts, which simply miss. Only
    the last call's messages are kept (each with a reference, so an id is never reused
    while it is a key). pydantic-ai treats the history it is given as read-only: it copies
    the list and only ever changes the run's own new request.
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Message, ModelMessage]] = {}

    def convert(self, messages: Sequence[Message]) -> list[ModelMessage]:
        """Return `messages` as pydantic-ai objects (the same as `to_model_messages`)."""
        hits = [self._seen.get(id(m)) for m in messages]
        missing = [
            m for m, hit in zip(messages, hits, strict=True) if hit is None or hit[0] is not m
        ]
        fresh = iter(to_model_messages(missing) if missing else [])
        result = [
            hit[1] if hit is not None and hit[0] is m else next(fresh)
            for m, hit in zip(messages, hits, strict=True)
        ]
        self._seen = {id(m): (m, c) for m, c in zip(messages, result, strict=True)}
        return result


def estimate_tokens(message: Message) -> int:
    """Estimate tokens (about 4 bytes each) without a tokenizer: no downloads, no network."""
    size = 0
    for part in message.get("parts", ()):
        for key in ("content", "args", "tool_name"):
            value = part.get(key)
            if isinstance(value, str):
                size += len(value.encode("utf-8", "surrogatepass"))
            elif value is not None:
                size += len(orjson.dumps(value, default=str))
        size += 16  # role and framing overhead per part
    return size // 4 + 1


def reconstruct_history(
    messages: Sequence[Message],
    max_tokens: int,
    carried: Sequence[dict[str, Any]] = (),
) -> list[Message]:
    """Keep the newest turns that fit in `max_tokens`, cut only at turn starts.

    A cut never separates a tool call from its result, the last turn is always kept, and
    system-prompt parts from the dropped head are carried into the first kept request.
    """
    if not messages:
        return []
    cut = _cut_at_turn_start(
        len(messages),
        [i for i, m in enumerate(messages) if _starts_turn(m)],
        lambda a, b: sum(estimate_tokens(m) for m in messages[a:b]),
        max_tokens,
    )
    return _with_system_parts(list(messages[cut:]), [*carried, *_system_parts(messages[:cut])])


def _starts_turn(message: Message) -> bool:
    if message["kind"] != "request":
        return False
    parts = message["parts"]
    return any(p["part_kind"] == "user-prompt" for p in parts) and not any(
        _is_tool_answer(p) for p in parts
    )


# ---------------------------------------------------------------------------
# Transcript for editors.


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


def _response_text(message: dict[str, Any]) -> str:
    parts = message.get("parts", [])
    return "".join(
        p.get("content", "")
        for p in parts
        if isinstance(p, dict)
        and p.get("part_kind") == "text"
        and isinstance(p.get("content"), str)
    )


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
            text = _response_text(event.data.message) or "".join(chunks)
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
