"""A turn, for every edge: queued behind the running one, attempted, recorded, followed up.

`TurnEngine.run` waits for the session's turn lock (turns run one at a time, in the order
they came), compacts first if the history passed the threshold, begins the turn in the
log, runs its attempts (`attempts.run_attempts`: retries, window healing, tool fallbacks),
ends it `completed` (fsynced before the edge answers), `aborted` when cancelled, or
`error`, and then, once the edge's answer is on its way, does what the answer need not
wait for (`after_turn`). The edge shows the turn as it runs through the `TurnSink` it
returns from `open_sink`, called once the turn has its number.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from session.errors import ReadOnlySessionError, SessionError
from session.lifecycle import SessionLifecycle
from session.storage import explain_write_error

from .attempts import EngineForAttempts, TurnFailedError, run_attempts
from .compaction import EngineForCompaction
from .errors import UserError
from .messages import CUT_ANSWERS, capitalized, cut_answer, options_named
from .model.runner import TurnSink
from .model_server import ModelServer
from .option_names import how_to_configure_model

logger = logging.getLogger(__name__)

OpenSink = Callable[[str, int], TurnSink]  # (session id, turn number) -> the turn's sink


@dataclass
class TurnOutcome:
    """A completed turn."""

    session_id: str
    turn: int
    text: str
    usage: dict[str, Any] = field(default_factory=dict)
    attempts: int = 1
    finish_reason: str | None = None  # of the last answer: "length" when it was cut short
    note: str | None = None  # why the reply was stopped here (`model.maxReplyBytes`)


@dataclass
class Kept:
    """What a turn that did not complete kept of its reply (set as it ends)."""

    text: str = ""


class EngineForTurns(EngineForAttempts, EngineForCompaction, Protocol):
    """What a turn reads besides: the model server, the lifecycle if open, the indexing."""

    model_server: ModelServer
    lifecycle_or_none: SessionLifecycle | None

    def index_in_background(self) -> None:
        """Index the current session in the background."""
        ...


class TurnEngine:
    """The session's turns: one at a time, the others waiting in order."""

    def __init__(self, engine: EngineForTurns) -> None:
        self.engine = engine
        self.running = False  # a turn is running
        self.waiting = 0  # turns queued behind it
        self.current: tuple[int, asyncio.Task[Any]] | None = None  # the running turn's task

    @property
    def busy(self) -> bool:
        """Return True if a turn (or a history operation) runs or waits: a new one queues."""
        return self.engine.turn_lock.locked() or self.waiting > 0

    def check_model(self) -> None:
        """Raise `UserError` (how to configure one) if no model is configured."""
        engine = self.engine
        if engine.runner is None or not engine.config.model.configured:
            raise UserError(how_to_configure_model(engine.config.option_names))

    async def run(
        self, text: str, open_sink: OpenSink, *, counted: bool = False, kept: Kept | None = None
    ) -> TurnOutcome:
        """Wait for the turn lock, then run one turn (`counted`: already in `waiting`).

        Raises `UserError` if the turn failed (recorded `error`); cancelling the task records
        the turn `aborted` and re-raises. `kept` gets what a turn that did not complete
        kept of its reply.
        """
        engine = self.engine
        self.check_model()
        with engine.summaries.giving_way():  # the model server may have one slot
            if not counted:
                self.waiting += 1
            try:
                await engine.turn_lock.acquire()
            finally:
                self.waiting -= 1
            try:
                self.running = True
                return await self._turn(text, open_sink, kept)
            finally:
                self.running = False
                self.current = None
                engine.turn_lock.release()

    async def cancel(self, turn: int | None = None) -> int | None:
        """Stop the running turn (if it is `turn`, when given); return its number once ended."""
        current = self.current
        if current is None or turn not in (None, current[0]):
            return None
        number, task = current
        task.cancel()
        await asyncio.wait({task})
        return number

    async def _turn(self, text: str, open_sink: OpenSink, kept: Kept | None) -> TurnOutcome:
        engine = self.engine
        lifecycle = engine.lifecycle
        await engine.model_server.before_turn()  # its window and tools, if it says
        runner = engine.runner
        assert runner is not None
        history = lifecycle.message_history()
        # The cached per-message estimates bound the history's tokens: the exact count (one
        # estimate per message) is only needed near the threshold.
        maybe_over = lifecycle.current.history.token_bound() > engine.config.compact_threshold
        if maybe_over and await engine.compaction.if_needed(history):
            history = lifecycle.message_history()
        try:
            recorder = lifecycle.begin_turn(text)
        except ReadOnlySessionError as exc:
            raise UserError(f"{exc}. Start a new session (reset) to chat.") from None
        if (task := asyncio.current_task()) is not None:
            self.current = (recorder.number, task)
        session_id = lifecycle.session_id
        sink = open_sink(session_id, recorder.number)
        note = lifecycle.take_drift_note()
        prompt: str | list[str] = [note, text] if note else text
        try:
            result = await run_attempts(engine, recorder, prompt, history, sink)
        except asyncio.CancelledError:
            recorder.end("aborted")  # with the streamed text it held back
            if kept is not None:
                kept.text = recorder.reply_so_far
            raise
        except SessionError as exc:  # the log refused a write (a full disk...): not the model
            message = explain_write_error(
                f"turn {recorder.number} could not be recorded: {exc}", exc.errno
            )
            logger.warning("%s", message)
            with contextlib.suppress(SessionError):
                recorder.end("error", error=message)
            if kept is not None:
                kept.text = recorder.reply_so_far
            raise UserError(message) from None
        except TurnFailedError as exc:
            message = str(exc)
            logger.warning("turn %d failed: %s", recorder.number, message)
            recorder.end("error", error=message)
            if kept is not None:
                kept.text = recorder.reply_so_far
            raise UserError(message) from None
        finally:
            sink.end_thinking()  # a reply of thinking only, or a turn that ended while thinking
        recorder.end("completed")  # fsynced: the turn is durable before its result is sent
        if result.note:
            note = options_named(engine, capitalized(result.note))
            engine.host.show(f"{note}. The reply is kept as far as it came.")
        elif result.finish_reason in CUT_ANSWERS:
            engine.host.show(cut_answer(engine, result.finish_reason))
        task = asyncio.current_task()
        if task is None:
            self.after_turn()
        else:  # runs once the edge's answer is on its way (its own callback was added first)
            task.add_done_callback(lambda _: self.after_turn())
        return TurnOutcome(
            session_id=session_id,
            turn=recorder.number,
            text=result.text,
            usage=result.usage,
            attempts=recorder.attempt,
            finish_reason=result.finish_reason,
            note=result.note,
        )

    def after_turn(self) -> None:
        """Work a turn needs done but its answer need not wait for.

        The search index is a projection, synced in a worker thread and brought up to date
        before every search anyway; the history's conversion for the next turn is a cache
        (`ModelMessageCache`) that only saves the next request from converting this turn's
        messages.
        """
        engine = self.engine
        engine.index_in_background()
        engine.summaries.schedule()
        runner = engine.runner
        if runner is not None and not runner.props_read:
            learn = engine.model_server.after_first_answer(runner)
            engine.host.spawn(learn, "llama-server's /props")
        lifecycle = engine.lifecycle_or_none
        if runner is not None and lifecycle is not None and lifecycle.session is not None:
            try:
                runner.prepare_history(lifecycle.message_history())
            except Exception as exc:  # a cache: the next turn converts what it needs itself
                logger.warning("history not prepared for the next turn: %s", exc)
