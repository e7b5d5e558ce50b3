"""The running session summary, kept current in the background after each completed turn.

Debounced (a burst of turns gives one summary), incremental (the previous summary and the
turns since), never in the way: a reply, a save or an exit never waits for it (at exit the
task is cancelled with the rest of the background work), and a chat never queues behind it
at the model server: a summary being generated when a chat arrives is cancelled, its
connection closed, and asked again after the turn (`giving_way`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from session.compaction import SUMMARY_INSTRUCTIONS, CompactionSummary
from session.summary import SESSION_SUMMARY_INSTRUCTIONS, extractive_session_summary

from .model.faults import summary_failure
from .view import EngineView

logger = logging.getLogger(__name__)

# Seconds after a completed turn before the summary starts (more turns meanwhile: wait again).
SUMMARY_DELAY = float(os.environ.get("AGENT_ASSIST_SUMMARY_DELAY", "2"))


async def summarise_or_extract(
    engine: EngineView,
    transcript: Callable[[int], str],
    extract: Callable[[], CompactionSummary],
    failed: Callable[[str, Exception], None],
    *,
    instructions: str = SUMMARY_INSTRUCTIONS,
    asking: Callable[[], None] = lambda: None,
) -> tuple[CompactionSummary, bool]:
    """Return the model's summary, else the extractive one, and whether it is the extractive.

    The model is asked (after `asking()`) if one is configured and it has not failed to
    summarise lately, with `transcript(limit)`: at most half the window, since the summary
    request must fit too. Its failure is told to `failed` with the words for the user.
    """
    runner = engine.runner
    if runner is not None and engine.config.model.configured and runner.can_summarize:
        asking()
        try:
            text = transcript(engine.config.context_window * 2)
            return await runner.summarize(text, instructions), False
        except Exception as exc:  # the runner remembers; extractive for a while
            failed(summary_failure(exc), exc)
    return extract(), True


class RunningSummary:
    """Schedules and runs the background summary of the session (scheduled by each turn)."""

    def __init__(self, engine: EngineView) -> None:
        self.engine = engine
        self.dirty = False
        self.task: asyncio.Task[Any] | None = None

    def schedule(self) -> None:
        """Summarise soon (debounced): a turn completed."""
        self.dirty = True
        if self.task is None or self.task.done():
            self.task = self.engine.host.spawn(self._run(), "running-summary")

    def _cancel_pending(self) -> bool:
        """Cancel a pending summary (waiting, or being written); True if one was.

        Local model servers often generate one request at a time (llama.cpp's `--parallel 1`,
        llama-cpp-python, Ollama with `OLLAMA_NUM_PARALLEL=1`): the chat would wait until the
        summary is written. Its connection closed, a server that notices stops generating
        it (llama.cpp's `llama-server` polls the connection each second; llama-cpp-python
        goes on with a request answered in one piece). Nothing is lost: `giving_way`
        schedules it again after the turn, and it then covers that turn too.
        """
        if self.task is None or self.task.done():
            return False
        self.task.cancel()
        self.task = None  # it ends on its own; `schedule` starts a new one
        logger.debug("the session summary gives way")
        return True

    @contextmanager
    def giving_way(self) -> Iterator[None]:
        """Around model work a user waits for (a chat, a compaction): the summary comes after."""
        yielded = self._cancel_pending()
        try:
            yield
        finally:
            if yielded:  # whatever became of the work (a completed turn schedules it too)
                self.schedule()

    async def _run(self) -> None:
        while self.dirty:
            self.dirty = False
            await asyncio.sleep(SUMMARY_DELAY)
            if self.dirty:
                continue  # another turn ended meanwhile
            try:
                await self.summarize_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a projection: never let it fail anything else
                logger.warning("the session summary was not updated: %s", exc)

    async def summarize_once(self) -> bool:
        """Summarise what the running summary does not cover yet; True if recorded."""
        lifecycle = self.engine.lifecycle
        session = lifecycle.session
        plan = lifecycle.plan_summary()
        if session is None or plan is None:
            return False

        def failed(why: str, exc: Exception) -> None:
            logger.warning(
                "the model could not summarise the session: %s (%s); extractive", why, exc
            )

        summary, fallback = await summarise_or_extract(
            self.engine,
            lambda limit: plan.transcript(limit=limit),
            lambda: extractive_session_summary(plan, session.state.decisions),
            failed,
            instructions=SESSION_SUMMARY_INSTRUCTIONS,
        )
        if lifecycle.session is not session:
            return False  # reset, opened, forked or closed meanwhile
        lifecycle.record_summary(plan, summary, fallback=fallback)
        return True
