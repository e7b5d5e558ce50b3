"""`agentAssist/chat`: one turn at a time per session, streamed and fully recorded."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from session.manager import ReadOnlySessionError, SessionError
from session.storage import explain_write_error

from .. import protocol as proto
from ..agent import ToolDeps, TurnResult
from ..config import HOW_TO_CONFIGURE_MODEL
from ..server import AgentAssistServer, RequestFailedError, request_handler
from .history import compact_if_needed

logger = logging.getLogger(__name__)


class NotifyingSink:
    """Streams a turn's activity to the client as notifications."""

    def __init__(self, ls: AgentAssistServer, session_id: str, turn: int) -> None:
        self.ls = ls
        self.session_id = session_id
        self.turn = turn

    def delta(self, text: str) -> None:
        """Send `agentAssist/chatDelta`."""
        self.ls.notify(
            proto.CHAT_DELTA, {"sessionId": self.session_id, "turn": self.turn, "delta": text}
        )

    def tool(self, name: str, args: Any, status: str) -> None:
        """Send `agentAssist/toolCall`."""
        self.ls.notify(
            proto.TOOL_CALL,
            {
                "sessionId": self.session_id,
                "turn": self.turn,
                "tool": name,
                "args": args,
                "status": status,
            },
        )


def describe_model_error(exc: BaseException) -> str:
    """Turn a model/HTTP failure into one readable line."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    detail = ""
    if isinstance(body, dict):
        error = body.get("error", body)
        detail = str(error.get("message", "")) if isinstance(error, dict) else str(error)
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    if status is not None:
        return f"The model request failed (HTTP {status}): {detail or message}"
    return f"The model request failed: {message}"


async def run_chat(ls: AgentAssistServer, text: str) -> dict[str, Any]:
    """Queue behind any running turn, then run this one."""
    await ls.ready.wait()
    if ls.runner is None or not ls.config.model.configured:
        raise RequestFailedError(HOW_TO_CONFIGURE_MODEL)
    ls.waiting += 1
    try:
        await ls.turn_lock.acquire()
    finally:
        ls.waiting -= 1
    try:
        ls.running = True
        return await _turn(ls, text)
    finally:
        ls.running = False
        ls.turn_lock.release()


async def _turn(ls: AgentAssistServer, text: str) -> dict[str, Any]:
    lifecycle = ls.session
    assert ls.runner is not None
    history = lifecycle.message_history()
    # The cached per-message estimates bound the history's tokens: the exact count (one
    # estimate per message) is only needed near the threshold.
    maybe_over = lifecycle.current.history.token_bound() > ls.config.compact_threshold
    if maybe_over and await compact_if_needed(ls, history):
        history = lifecycle.message_history()
    try:
        recorder = lifecycle.begin_turn(text)
    except ReadOnlySessionError as exc:
        raise RequestFailedError(f"{exc}. Start a new session (reset) to chat.") from None
    note = lifecycle.take_drift_note()
    prompt: str | list[str] = [note, text] if note else text
    session_id = lifecycle.session_id
    sink = NotifyingSink(ls, session_id, recorder.number)
    deps = ToolDeps(lifecycle, ls)
    try:
        result: TurnResult = await ls.runner.run_turn(deps, recorder, prompt, history, sink)
    except asyncio.CancelledError:
        recorder.end("aborted")
        raise
    except SessionError as exc:  # the log refused a write (a full disk...): not the model
        message = explain_write_error(
            f"turn {recorder.number} could not be recorded: {exc}", exc.errno
        )
        logger.warning("%s", message)
        with contextlib.suppress(SessionError):
            recorder.end("error", error=message)
        raise RequestFailedError(message) from None
    except Exception as exc:
        message = describe_model_error(exc)
        logger.warning("turn %d failed: %s", recorder.number, message)
        recorder.end("error", error=message)
        raise RequestFailedError(message) from None
    recorder.end("completed")  # fsynced: the turn is durable before its result is sent
    task = asyncio.current_task()
    if task is None:
        _after_turn(ls)
    else:  # runs once the result is on its way (pygls' own callback was added first)
        task.add_done_callback(lambda _: _after_turn(ls))
    return {
        "sessionId": session_id,
        "turn": recorder.number,
        "text": result.text,
        "endReason": "completed",
        "usage": result.usage,
    }


def _after_turn(ls: AgentAssistServer) -> None:
    """Work a turn needs done but its result need not wait for.

    The search index is a projection, brought up to date before every search anyway; the
    history's conversion for the next turn is a cache (`ModelMessageCache`) that only saves
    the next request from converting this turn's messages.
    """
    ls.index_session()
    if ls.runner is not None and ls.lifecycle is not None and ls.lifecycle.session is not None:
        try:
            ls.runner.prepare_history(ls.lifecycle.message_history())
        except Exception as exc:  # a cache: the next turn converts what it needs itself
            logger.warning("history not prepared for the next turn: %s", exc)


def setup(server: AgentAssistServer) -> None:
    """Register `agentAssist/chat`."""

    @request_handler(server, proto.CHAT, proto.ChatParams)
    async def chat(ls: AgentAssistServer, params: proto.ChatParams) -> dict[str, Any]:
        return await run_chat(ls, params.text)
