"""`agentAssist/chat`: one turn at a time per session, streamed and fully recorded."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any, Literal

from engine.option_names import how_to_configure_model
from session.errors import ReadOnlySessionError, SessionError
from session.storage import explain_write_error

from .. import protocol as proto
from ..server import AgentAssistServer, RequestFailedError
from .attempts import (
    CUT_ANSWERS,
    TurnFailedError,
    capitalized,
    cut_answer,
    options_named,
    run_attempts,
)
from .base import THROUGH_COMMAND, Feature, request
from .history import History
from .model_server import ModelServer
from .sink import NotifyingSink, ReplyProgress, reply_tail
from .summaries import RunningSummary

logger = logging.getLogger(__name__)


@dataclass
class Kept:
    """What a turn that did not complete kept of its reply (set as it ends)."""

    text: str = ""


class Chat(Feature):
    """`agentAssist/chat`: turns queue behind one another; each is streamed and recorded."""

    name = "chat"
    needs = (History, RunningSummary, ModelServer)

    def __init__(self, server: AgentAssistServer) -> None:
        super().__init__(server)
        self.running = False  # a turn is running (status.state)
        self.waiting = 0  # chats queued behind it (status.waiting)
        self.current: tuple[int, asyncio.Task[Any]] | None = None  # the running turn's task

    @request(proto.CHAT)
    async def chat(self, params: proto.ChatParams) -> proto.ChatResult | proto.ChatStarted:
        """Run one turn (queued behind the running one); answer once it is durable.

        `async`: answer once the turn began (or at once if it is queued); its end comes as
        `agentAssist/turnEnded`. The reply is also reported as `$/progress` on the
        client's token, or on one of the server's through `workspace/executeCommand`.
        """
        ls = self.server
        if ls.runner is None or not ls.config.model.configured:
            raise RequestFailedError(how_to_configure_model(ls.config.option_names))
        # An async chat's reply shows (and is stopped) through progress on a token of ours.
        create = THROUGH_COMMAND.get() or params.async_
        progress = await ReplyProgress.open(ls, params.work_done_token, create=create)
        queued = ls.turn_lock.locked() or self.waiting > 0
        if progress is not None:
            progress.begin(queued)
        if not params.async_:
            return await self._queued(params.text, progress)
        began: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.waiting += 1  # counted from now: a chat arriving next queues behind it
        task = ls.spawn(self._in_background(params.text, progress, began), "async chat turn")
        if queued:
            return proto.ChatStarted(session_id=ls.session.session_id, turn=None, status="queued")
        await asyncio.wait({began, task}, return_when=asyncio.FIRST_COMPLETED)
        if not began.done():  # it failed before it began (turnEnded says so too)
            raise RequestFailedError(task.result() or "the turn did not start")
        return proto.ChatStarted(
            session_id=ls.session.session_id, turn=began.result(), status="started"
        )

    @request(proto.CANCEL, ready=False)
    async def cancel(self, params: proto.CancelParams) -> proto.CancelResult:
        """Stop the running turn, as `$/cancelRequest` would; answer once it has ended.

        For a client that cannot cancel a request or a progress (an `async` chat without
        `window.workDoneProgress`). Chats queued behind it run as they would.
        """
        current = self.current
        if current is None or params.turn not in (None, current[0]):
            return proto.CancelResult(stopped=False, turn=None)
        number, task = current
        task.cancel()
        await asyncio.wait({task})
        return proto.CancelResult(stopped=True, turn=number)

    async def _queued(
        self,
        text: str,
        progress: ReplyProgress | None,
        began: asyncio.Future[int] | None = None,
        *,
        counted: bool = False,
        kept: Kept | None = None,
    ) -> proto.ChatResult:
        """Wait for the turn lock (`counted`: already in `waiting`), then run the turn."""
        ls = self.server
        if progress is not None:
            progress.cancel_with(asyncio.current_task())
        summary = "failed"
        try:
            with self.need(RunningSummary).giving_way():  # the model server may have one slot
                if not counted:
                    self.waiting += 1
                try:
                    await ls.turn_lock.acquire()
                finally:
                    self.waiting -= 1
                try:
                    self.running = True
                    result = await self._turn(text, progress, began, kept)
                finally:
                    self.running = False
                    self.current = None
                    ls.turn_lock.release()
            words = len(result.text.split())
            summary = f"turn {result.turn} done ({words} word{'s' * (words != 1)})"
            return result
        except asyncio.CancelledError:
            summary = "stopped"
            raise
        except RequestFailedError as exc:
            summary = f"failed: {reply_tail(exc.message)}"
            raise
        finally:
            if progress is not None:
                progress.end(summary)

    async def _in_background(
        self, text: str, progress: ReplyProgress | None, began: asyncio.Future[int]
    ) -> str | None:
        """Run an `async` chat's turn; say how it ended (`agentAssist/turnEnded`).

        Return the error message if it failed, else None.
        """
        ls = self.server
        kept = Kept()

        def ended(reason: Literal["error", "aborted"], error: str | None = None) -> None:
            turn = began.result() if began.done() else None
            params = proto.TurnEndedParams(
                session_id=ls.session.session_id,
                turn=turn,
                text=kept.text,
                end_reason=reason,
                usage=None,
                error=error,
            )
            with contextlib.suppress(Exception):  # the client may be gone (the process ends)
                ls.notify(params)

        try:
            result = await self._queued(text, progress, began, counted=True, kept=kept)
        except asyncio.CancelledError:
            ended("aborted")
            raise
        except RequestFailedError as exc:
            message = ls.log_redactor.scrub_text(exc.message)
            ended("error", message)
            return message
        except Exception as exc:
            logger.exception("%s failed", proto.CHAT)
            ls.save_after_error()
            message = ls.log_redactor.scrub_text(f"{proto.CHAT}: internal error: {exc}")
            ended("error", message)
            return message
        ls.notify(
            proto.TurnEndedParams(
                session_id=result.session_id,
                turn=result.turn,
                text=result.text,
                end_reason="completed",
                usage=result.usage,
                error=None,
            )
        )
        return None

    async def _turn(
        self,
        text: str,
        progress: ReplyProgress | None,
        began: asyncio.Future[int] | None,
        kept: Kept | None = None,
    ) -> proto.ChatResult:
        ls = self.server
        history_ops = self.need(History)
        lifecycle = ls.session
        await self.need(ModelServer).before_turn()  # its window and tools, if it says
        assert ls.runner is not None
        history = lifecycle.message_history()
        # The cached per-message estimates bound the history's tokens: the exact count (one
        # estimate per message) is only needed near the threshold.
        maybe_over = lifecycle.current.history.token_bound() > ls.config.compact_threshold
        if maybe_over and await history_ops.compact_if_needed(history):
            history = lifecycle.message_history()
        try:
            recorder = lifecycle.begin_turn(text)
        except ReadOnlySessionError as exc:
            raise RequestFailedError(f"{exc}. Start a new session (reset) to chat.") from None
        ls.notify(
            proto.TurnStartedParams(
                session_id=lifecycle.session_id, turn=recorder.number, text=text
            )
        )
        if (task := asyncio.current_task()) is not None:
            self.current = (recorder.number, task)
        if began is not None:
            began.set_result(recorder.number)
        if progress is not None:
            progress.report(f"turn {recorder.number}: waiting for the model")
        note = lifecycle.take_drift_note()
        prompt: str | list[str] = [note, text] if note else text
        session_id = lifecycle.session_id
        sink = NotifyingSink(ls, session_id, recorder.number, progress)
        try:
            result = await run_attempts(ls, history_ops, recorder, prompt, history, sink)
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
            raise RequestFailedError(message) from None
        except TurnFailedError as exc:
            message = str(exc)
            logger.warning("turn %d failed: %s", recorder.number, message)
            recorder.end("error", error=message)
            if kept is not None:
                kept.text = recorder.reply_so_far
            raise RequestFailedError(message) from None
        finally:
            sink.thoughts.end()  # a reply of thinking only, or a turn that ended while thinking
        recorder.end("completed")  # fsynced: the turn is durable before its result is sent
        if result.note:
            note = options_named(ls, capitalized(result.note))
            ls.show(f"{note}. The reply is kept as far as it came.")
        elif result.finish_reason in CUT_ANSWERS:
            ls.show(cut_answer(ls, result.finish_reason))
        task = asyncio.current_task()
        if task is None:
            self._after_turn()
        else:  # runs once the result is on its way (pygls' own callback was added first)
            task.add_done_callback(lambda _: self._after_turn())
        return proto.ChatResult(
            session_id=session_id,
            turn=recorder.number,
            text=result.text,
            end_reason="completed",
            usage=result.usage,
            attempts=recorder.attempt,
        )

    def _after_turn(self) -> None:
        """Work a turn needs done but its result need not wait for.

        The search index is a projection, synced in a worker thread and brought up to date
        before every search anyway; the history's conversion for the next turn is a cache
        (`ModelMessageCache`) that only saves the next request from converting this turn's
        messages.
        """
        ls = self.server
        ls.index_in_background()
        self.need(RunningSummary).schedule()
        if ls.runner is not None and not ls.runner.props_read:
            learn = self.need(ModelServer).after_first_answer(ls.runner)
            ls.spawn(learn, "llama-server's /props")
        if ls.runner is not None and ls.lifecycle is not None and ls.lifecycle.session is not None:
            try:
                ls.runner.prepare_history(ls.lifecycle.message_history())
            except Exception as exc:  # a cache: the next turn converts what it needs itself
                logger.warning("history not prepared for the next turn: %s", exc)
