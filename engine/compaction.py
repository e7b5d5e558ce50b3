"""Compaction: older turns replaced by a summary (the model's, else extractive).

Asked for (`/compact`), before a turn whose history passed the threshold, or around a
turn whose prompt did not fit the window. Only appends (`session/compact`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from session.compaction import extractive_summary, history_tokens, render_transcript

from .summaries import RunningSummary, summarise_or_extract
from .view import EngineView

logger = logging.getLogger(__name__)


@dataclass
class CompactOutcome:
    """What a compaction did (the fields of the LSP's `CompactResult`)."""

    session_id: str
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    compacted: bool
    fallback: bool | None = None
    reason: str | None = None  # why nothing was compacted


class EngineForCompaction(EngineView, Protocol):
    """What compaction reads besides: the running summary (it gives way) and the turn lock."""

    summaries: RunningSummary
    turn_lock: asyncio.Lock


class Compaction:
    """Compacts the engine's session."""

    def __init__(self, engine: EngineForCompaction) -> None:
        self.engine = engine

    async def compact_now(self, *, open_turn: bool = False, asked: bool = False) -> CompactOutcome:
        """Summarise older turns (model, else extractive) and keep the recent tail.

        `open_turn`: compact around the turn in progress (its prompt did not fit the window).
        `asked`: the user asked for it, so with two closed turns or more something is compacted.
        """
        engine = self.engine
        lifecycle = engine.lifecycle
        current = lifecycle.message_history()
        tokens = history_tokens(current)
        result = CompactOutcome(
            session_id=lifecycle.session_id,
            messages_before=len(current),
            messages_after=len(current),
            tokens_before=tokens,
            tokens_after=tokens,
            compacted=False,
        )
        plan = lifecycle.plan_compaction(
            engine.config.keep_tokens, open_turn=open_turn, force=asked
        )
        if plan is None:
            if asked:
                result.reason = (
                    "Nothing to compact: a turn is running."
                    if lifecycle.current.open_turn is not None
                    else "Nothing to compact: compaction keeps the newest turn, and there is "
                    "only one (or none) in the history."
                )
            return result
        async with engine.host.long_work("Compacting the conversation") as bar:

            def failed(why: str, exc: Exception) -> None:
                logger.warning("model summary failed: %s (%s)", why, exc)
                engine.host.show(
                    f"The model could not summarise: {why}. Used an extractive summary."
                )

            summary, fallback = await summarise_or_extract(
                engine,
                lambda limit: render_transcript(plan.old)[-limit:],
                lambda: extractive_summary(plan.old, lifecycle.current.state.decisions),
                failed,
                asking=lambda: bar.report("Summarising older turns with the model", 10),
            )
            bar.report("Recording the summary", 90)
            messages_after, tokens_after = lifecycle.compact(plan, summary, fallback=fallback)
        result.messages_after = messages_after
        result.tokens_after = tokens_after
        result.compacted = True
        result.fallback = fallback
        return result

    async def asked(self) -> CompactOutcome:
        """Compact now, as the user asked: after the running turn, the summary giving way."""
        with self.engine.summaries.giving_way():
            async with self.engine.turn_lock:
                return await self.compact_now(asked=True)

    async def if_needed(self, history: list[dict[str, Any]]) -> bool:
        """Compact before a turn when the history passed the configured threshold."""
        if history_tokens(history) <= self.engine.config.compact_threshold:
            return False
        return (await self.compact_now()).compacted
