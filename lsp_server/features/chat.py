"""`agentAssist/chat`: one turn at a time per session, streamed and fully recorded.

The turn itself is the engine's (`engine/turns.py`); this feature says it in LSP: the
request's answer, `turnStarted` / `turnEnded`, the deltas (`sink.NotifyingSink`) and the
reply as `$/progress` for clients that show nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Literal

from engine.errors import UserError
from engine.turns import Kept, TurnEngine, TurnOutcome

from .. import protocol as proto
from ..server import RequestFailedError
from .base import THROUGH_COMMAND, Feature, request
from .sink import NotifyingSink, ReplyProgress, reply_tail

logger = logging.getLogger(__name__)


class Chat(Feature):
    """`agentAssist/chat`: turns queue behind one another; each is streamed and recorded."""

    name = "chat"

    @property
    def turns(self) -> TurnEngine:
        """Return the engine's turns (the queue: `running`, `waiting`)."""
        return self.server.engine.turns

    @request(proto.CHAT)
    async def chat(self, params: proto.ChatParams) -> proto.ChatResult | proto.ChatStarted:
        """Run one turn (queued behind the running one); answer once it is durable.

        `async`: answer once the turn began (or at once if it is queued); its end comes as
        `agentAssist/turnEnded`. The reply is also reported as `$/progress` on the
        client's token, or on one of the server's through `workspace/executeCommand`.
        """
        ls = self.server
        try:
            self.turns.check_model()
        except UserError as exc:
            raise RequestFailedError(exc.message) from None
        # An async chat's reply shows (and is stopped) through progress on a token of ours.
        create = THROUGH_COMMAND.get() or params.async_
        progress = await ReplyProgress.open(ls, params.work_done_token, create=create)
        queued = self.turns.busy
        if progress is not None:
            progress.begin(queued)
        if not params.async_:
            return await self._queued(params.text, progress)
        began: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.turns.waiting += 1  # counted from now: a chat arriving next queues behind it
        task = ls.spawn(self._in_background(params.text, progress, began), "async chat turn")
        if queued:
            return proto.ChatStarted(session_id=ls.lifecycle.session_id, turn=None, status="queued")
        await asyncio.wait({began, task}, return_when=asyncio.FIRST_COMPLETED)
        if not began.done():  # it failed before it began (turnEnded says so too)
            raise RequestFailedError(task.result() or "the turn did not start")
        return proto.ChatStarted(
            session_id=ls.lifecycle.session_id, turn=began.result(), status="started"
        )

    @request(proto.CANCEL, ready=False)
    async def cancel(self, params: proto.CancelParams) -> proto.CancelResult:
        """Stop the running turn, as `$/cancelRequest` would; answer once it has ended.

        For a client that cannot cancel a request or a progress (an `async` chat without
        `window.workDoneProgress`). Chats queued behind it run as they would.
        """
        number = await self.turns.cancel(params.turn)
        return proto.CancelResult(stopped=number is not None, turn=number)

    async def _queued(
        self,
        text: str,
        progress: ReplyProgress | None,
        began: asyncio.Future[int] | None = None,
        *,
        counted: bool = False,
        kept: Kept | None = None,
    ) -> proto.ChatResult:
        """Run the turn once the ones before it ended (`counted`: already in `waiting`)."""
        ls = self.server
        if progress is not None:
            progress.cancel_with(asyncio.current_task())

        def open_sink(session_id: str, turn: int) -> NotifyingSink:
            """Say that the turn began, and show it as it runs."""
            ls.notify(proto.TurnStartedParams(session_id=session_id, turn=turn, text=text))
            if began is not None:
                began.set_result(turn)
            if progress is not None:
                progress.report(f"turn {turn}: waiting for the model")
            return NotifyingSink(ls, session_id, turn, progress)

        summary = "failed"
        try:
            try:
                outcome = await self.turns.run(text, open_sink, counted=counted, kept=kept)
            except UserError as exc:
                raise RequestFailedError(exc.message) from None
            words = len(outcome.text.split())
            summary = f"turn {outcome.turn} done ({words} word{'s' * (words != 1)})"
            return chat_result(outcome)
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
                session_id=ls.lifecycle.session_id,
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


def chat_result(outcome: TurnOutcome) -> proto.ChatResult:
    """Return the answer to a chat whose turn completed."""
    return proto.ChatResult(
        session_id=outcome.session_id,
        turn=outcome.turn,
        text=outcome.text,
        end_reason="completed",
        usage=outcome.usage,
        attempts=outcome.attempts,
    )
