"""`agentAssist/chat`: one turn at a time per session, streamed and fully recorded."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Literal

from session.errors import ReadOnlySessionError, SessionError
from session.lifecycle import TurnRecorder
from session.redaction import url_without_userinfo
from session.storage import explain_write_error

from .. import protocol as proto
from ..config import HOW_TO_CONFIGURE_MODEL
from ..model.faults import RETRY_AFTER_CAP, ModelFault, backoff, classify
from ..model.limits import CallBudget
from ..model.runner import ChatRunner, TurnResult
from ..model.tools import ToolDeps, read_limit
from ..server import AgentAssistServer, RequestFailedError
from .base import THROUGH_COMMAND, Feature, request
from .history import History
from .sink import NotifyingSink, ReplyProgress, reply_tail
from .summaries import RunningSummary

logger = logging.getLogger(__name__)


class TurnFailedError(Exception):
    """A turn's model requests failed for good; the message says what happened."""


async def run_attempts(
    ls: AgentAssistServer,
    history_ops: History,
    recorder: TurnRecorder,
    prompt: str | list[str],
    history: list[dict[str, Any]],
    sink: NotifyingSink,
) -> TurnResult:
    """Run a turn's attempts until one completes: retry what may succeed, heal an overflow.

    A retryable fault (a cut or stalled stream, a dropped connection, a corrupted chunk,
    429, 5xx) is retried after a backoff, at most `model.maxRetries` times; a stream that
    came back empty is asked again without streaming (which also gets a server's real
    error); a prompt over the context window compacts the session and is retried once; a
    server that refuses the tools, or the null text of a tool call, is asked again at once
    without them, or with an empty string (`ServerQuirks`). Every abandoned attempt is
    recorded (`step/retry`) and never enters the history.
    """
    assert ls.runner is not None
    runner = ls.runner
    lifecycle = ls.session
    deps = ToolDeps(
        lifecycle,
        ls.edits,
        read_limit(ls.config.context_window),
        budget=CallBudget(ls.config.tools),
    )
    runner.result_limit = deps.read_limit  # earlier results are sent cut to the same
    retries = 0
    healed = False
    stream = True
    attempt_prompt: str | list[str] | None = prompt
    while True:
        try:
            return await runner.run_attempt(
                deps, recorder, attempt_prompt, history, sink, stream=stream
            )
        except (asyncio.CancelledError, SessionError):
            raise
        except Exception as exc:
            fault = classify(exc)
            delay = 0.0
            if fault.kind == "empty" and stream:
                stream = False  # ask once in one piece: the answer, or the real error
            elif fault.kind == "no-tools" and runner.tools:
                runner.without_tools()
                ls.show(NO_TOOLS_WARNING.format(detail=fault.detail))
            elif fault.kind == "null-content" and not runner.quirks.blank_tool_text:
                runner.quirks.blank_tool_text = True  # asked again at once, with "" for null
            elif (
                fault.kind in ("overflow", "truncated")
                and not healed
                and await heal_overflow(ls, history_ops, fault)
            ):
                healed = True
                stream = True
                # The window may be smaller now: reads, and the results already in this turn.
                deps.read_limit = runner.result_limit = read_limit(ls.config.context_window)
            elif fault.retryable and retries < runner.model.max_retries:
                if fault.retry_after is not None and fault.retry_after > RETRY_AFTER_CAP:
                    raise TurnFailedError(
                        f"The model request failed: {fault.message}; the provider asks to "
                        f"wait {fault.retry_after:.0f} s. Try again later."
                    ) from None
                retries += 1
                delay = backoff(retries, fault.retry_after)
            else:
                reads = sum(deps.calls.values())  # the turn's reads: their results are sent
                raise TurnFailedError(final_message(ls, fault, recorder.attempt, reads)) from None
            logger.warning(
                "turn %d attempt %d failed (%s); retrying in %.1f s",
                recorder.number,
                recorder.attempt,
                fault.message,
                delay,
            )
            streamed = sink.streamed
            recorder.retry_step(fault.kind, fault.message, delay, streamed)
            if streamed:
                sink.retry(recorder.attempt, fault.message)
            await asyncio.sleep(delay)
            attempt_prompt = None if recorder.resending else prompt
            history = lifecycle.message_history() if recorder.resending else history


CUT_ANSWERS = {  # an answer the server stopped short, said (it is kept as it came)
    "length": "The reply stopped at the model server's limit on an answer's length: ask it to "
    "go on, or raise the limit (Ollama: num_predict; llama-server: --n-predict).",
    "content_filter": "The model provider's content filter stopped the reply short.",
}
WITHOUT_TOOLS = (
    "Chatting without them: the assistant cannot read or write workspace files, record "
    "decisions or set the phase."
)
NO_TOOLS_WARNING = (
    f"The model server takes no tools for this model ({{detail}}). {WITHOUT_TOOLS} For "
    'tools, pick a model that has them (Ollama lists them as "tools"), or start llama-server '
    "with --jinja, or vLLM with --enable-auto-tool-choice and --tool-call-parser."
)
TEMPLATE_WARNING = (
    "llama-server gives this model no tools: the model's chat template has none (its /props "
    f"say supports_tools: false), so they were dropped without an error. {WITHOUT_TOOLS} For "
    "tools, pick a model whose template has them, or start llama-server with "
    "--chat-template-file and a template that does (llama.cpp's models/templates)."
)
RAISE_LENGTH = (
    "raise the server's context length (Ollama: OLLAMA_CONTEXT_LENGTH, or PARAMETER num_ctx "
    "in a Modelfile) and set contextWindow to it"
)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def final_message(ls: AgentAssistServer, fault: ModelFault, attempts: int, reads: int = 0) -> str:
    """Say why a turn failed, and what the user can do about it (`reads`: files read)."""
    if fault.kind == "truncated":
        return (
            f"{_sentence(fault.message)}, even after compacting what could be. "
            f"{_sentence(RAISE_LENGTH)}, "
            f"or start a new session: a message this long does not fit {fault.window} tokens."
        )
    if fault.kind == "overflow" and reads:  # the turn's own reads filled the window
        return (
            f"The model refused the prompt as too long for its context window ({fault.detail})"
            f" after this turn's {reads} read{'s' * (reads != 1)} of files and directories. "
            f"The working contextWindow is {ls.config.context_window} tokens: ask about fewer "
            "files at a time, or give the model a larger window (the server's context size, "
            "then contextWindow)."
        )
    if fault.kind == "overflow":
        return (
            f"The model refused the prompt as too long for its context window ({fault.detail}),"
            f" even after compacting what could be. The working contextWindow is "
            f"{ls.config.context_window} tokens: set contextWindow to the model's real window, "
            "run /compact, or start a new session (a single message this long cannot be sent)."
        )
    if fault.kind == "runaway":
        return (
            f"{_sentence(fault.message)}, so the turn stopped. Ask again more precisely, or use "
            "a model better at calling tools; each call is in the transcript."
        )
    if fault.kind == "tool-misuse":
        last = f" (the last: {fault.detail})" if fault.detail else ""
        return (
            f"{_sentence(fault.message)}{last}, so the turn stopped. Ask again more precisely, "
            "or use a model better at calling tools; each call and its error is in the "
            "transcript."
        )
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if fault.kind == "unreachable":
        where = url_without_userinfo(ls.config.model.base_url or "api.openai.com")
        return (
            f"{_sentence(fault.message)}{tries}: is the server at {where} running, and is "
            "model.baseUrl right?"
        )
    status = (
        f" (HTTP {fault.status})"
        if fault.status is not None and "HTTP" not in fault.message
        else ""
    )
    return f"The model request failed{tries}{status}: {fault.message}"


def adopt_window(ls: AgentAssistServer, window: int, source: str) -> bool:
    """Work within `window` tokens if it is smaller than the working window; True if so."""
    if window >= ls.config.context_window:
        return False
    logger.warning(
        "%s a context window of %d tokens (configured: %d); using it",
        source,
        window,
        ls.config.context_window,
    )
    ls.config = ls.config.with_window(window)
    ls.session.set_history_budget(ls.config.history_budget)
    return True


async def heal_overflow(ls: AgentAssistServer, history_ops: History, fault: ModelFault) -> bool:
    """Heal a prompt over the window: take the window the server reported, and compact.

    Return False if neither changed anything (sending the same prompt again is pointless).
    """
    lowered = fault.window is not None and adopt_window(
        ls, fault.window, "the model reads" if fault.kind == "truncated" else "the model reports"
    )
    cuts = ls.runner.cuts if ls.runner is not None else None
    if fault.kind == "truncated" and cuts is not None and not cuts.told:  # else unheard of
        cuts.told = True
        ls.show(
            f"{_sentence(fault.message)}. Compacting the conversation to fit "
            f"{ls.config.context_window} tokens, and asking again. To keep more of it, "
            f"{RAISE_LENGTH}."
        )
    result = await history_ops.compact_now(open_turn=True)
    if not result.compacted:
        logger.warning("the prompt did not fit the context window and nothing could be compacted")
    return lowered or result.compacted


class Chat(Feature):
    """`agentAssist/chat`: turns queue behind one another; each is streamed and recorded."""

    name = "chat"
    needs = (History, RunningSummary)

    def __init__(self, server: AgentAssistServer) -> None:
        super().__init__(server)
        self.running = False  # a turn is running (status.state)
        self.waiting = 0  # chats queued behind it (status.waiting)

    @request(proto.CHAT)
    async def chat(self, params: proto.ChatParams) -> proto.ChatResult | proto.ChatStarted:
        """Run one turn (queued behind the running one); answer once it is durable.

        `async`: answer once the turn began (or at once if it is queued); its end comes as
        `agentAssist/turnEnded`. The reply is also reported as `$/progress` on the
        client's token, or on one of the server's through `workspace/executeCommand`.
        """
        ls = self.server
        if ls.runner is None or not ls.config.model.configured:
            raise RequestFailedError(HOW_TO_CONFIGURE_MODEL)
        create = THROUGH_COMMAND.get()
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

    async def _queued(
        self,
        text: str,
        progress: ReplyProgress | None,
        began: asyncio.Future[int] | None = None,
        *,
        counted: bool = False,
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
                    result = await self._turn(text, progress, began)
                finally:
                    self.running = False
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

        def ended(reason: Literal["error", "aborted"], error: str | None = None) -> None:
            turn = began.result() if began.done() else None
            params = proto.TurnEndedParams(
                session_id=ls.session.session_id,
                turn=turn,
                text="",
                end_reason=reason,
                usage=None,
                error=error,
            )
            with contextlib.suppress(Exception):  # the client may be gone (the process ends)
                ls.notify(params)

        try:
            result = await self._queued(text, progress, began, counted=True)
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
        self, text: str, progress: ReplyProgress | None, began: asyncio.Future[int] | None
    ) -> proto.ChatResult:
        ls = self.server
        history_ops = self.need(History)
        lifecycle = ls.session
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
        except TurnFailedError as exc:
            message = str(exc)
            logger.warning("turn %d failed: %s", recorder.number, message)
            recorder.end("error", error=message)
            raise RequestFailedError(message) from None
        finally:
            sink.thoughts.end()  # a reply of thinking only, or a turn that ended while thinking
        recorder.end("completed")  # fsynced: the turn is durable before its result is sent
        if result.note:
            ls.show(f"{_sentence(result.note)}. The reply is kept as far as it came.")
        elif result.finish_reason in CUT_ANSWERS:
            ls.show(CUT_ANSWERS[result.finish_reason])
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

    async def _read_server_props(self, runner: ChatRunner) -> None:
        """After llama-server's first answer: its window, and no tools if it drops them."""
        props = await runner.read_server_props()
        if props is None:
            return
        ls = self.server
        if props.window is not None:
            adopt_window(ls, props.window, "llama-server's /props give")
        if props.takes_tools is False and runner.tools:
            runner.without_tools()
            logger.warning("llama-server's chat template takes no tools; chatting without them")
            ls.show(TEMPLATE_WARNING)

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
            ls.spawn(self._read_server_props(ls.runner), "llama-server's /props")
        if ls.runner is not None and ls.lifecycle is not None and ls.lifecycle.session is not None:
            try:
                ls.runner.prepare_history(ls.lifecycle.message_history())
            except Exception as exc:  # a cache: the next turn converts what it needs itself
                logger.warning("history not prepared for the next turn: %s", exc)
