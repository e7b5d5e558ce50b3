"""The edge to pydantic-ai: JSON messages validated into `ModelMessage`s, lazily and cached.

pydantic-ai is imported only when a conversion runs, never when this module is imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..events import Event
from .history import derive_message_dicts
from .messages import Message

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage


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
