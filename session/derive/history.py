"""HistoryBuilder: the message history the model is sent, folded from the log one event at a time.

A turn that did not complete keeps the text the user saw; `session/compact` replaces the
history up to its seq by the summary; `session/rewind` needs a replay (`build_history`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..events import (
    AssistantMessageEvent,
    ChunkEvent,
    CompactEvent,
    EndReason,
    Event,
    RewindEvent,
    StepRetryEvent,
    StepStartEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from .messages import (
    _CALL_KINDS,
    Message,
    _carry,
    _cut_at_turn_start,
    _is_empty_text,
    _is_message,
    _is_tool_answer,
    _starts_turn,
    _system_parts,
    _with_system_parts,
    estimate_tokens,
    sanitize_messages,
    summary_message,
    text_message,
)


class ReplayRequiredError(Exception):
    """A rewind reaches before the events this builder has seen."""


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
