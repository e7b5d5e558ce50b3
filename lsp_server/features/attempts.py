"""A turn's model attempts: retry what may succeed, heal a full window, say why it failed.

`run_attempts` is what `Chat` runs for each turn; `final_message` words a failure for the
user, `heal_overflow` takes the window a server reports and compacts.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from engine.model.faults import RETRY_AFTER_CAP, ModelFault, backoff, classify
from engine.model.limits import CallBudget
from engine.model.runner import TurnResult
from engine.model.tools import ToolDeps, read_limit
from session.errors import SessionError
from session.lifecycle import TurnRecorder
from session.redaction import url_without_userinfo

from ..server import AgentAssistServer
from .history import History
from .sink import NotifyingSink

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
    "go on, or raise the limit (Ollama: num_predict; llama-server: --n-predict; here: {option}).",
    "content_filter": "The model provider's content filter stopped the reply short.",
}


def cut_answer(ls: AgentAssistServer, reason: str) -> str:
    """Say why an answer stopped short: our `maxOutputTokens`, or the server's own limit."""
    limit = ls.config.model.max_output_tokens
    option = ls.config.option("model.maxOutputTokens")
    if reason == "length" and limit is not None:
        return (
            f"The reply stopped at {option} ({limit:,} tokens): ask the model to go on, "
            "or raise it."
        )
    return CUT_ANSWERS[reason].format(option=option)


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
    "in a Modelfile) and set {window} to it"
)


def options_named(ls: AgentAssistServer, text: str) -> str:
    """Return `text` with each `(model.x)` / `(tools.x)` it names as the user set it."""
    return OPTION_IN_TEXT.sub(lambda m: f"({ls.config.option(m.group(1))})", text)


OPTION_IN_TEXT = re.compile(r"\(((?:model|tools)\.[A-Za-z]+)\)")


def capitalized(text: str) -> str:
    """Return `text` with its first letter in upper case (a sentence of a message)."""
    return text[:1].upper() + text[1:]


def final_message(ls: AgentAssistServer, fault: ModelFault, attempts: int, reads: int = 0) -> str:
    """Say why a turn failed, and what the user can do about it (`reads`: files read)."""
    window = ls.config.option("contextWindow")
    if fault.kind == "truncated":
        return (
            f"{capitalized(fault.message)}, even after compacting what could be. "
            f"{capitalized(RAISE_LENGTH.format(window=window))}, "
            f"or start a new session: a message this long does not fit {fault.window} tokens."
        )
    if fault.kind == "overflow" and reads:  # the turn's own reads filled the window
        return (
            f"The model refused the prompt as too long for its context window ({fault.detail})"
            f" after this turn's {reads} read{'s' * (reads != 1)} of files and directories. "
            f"The working window is {ls.config.context_window} tokens: ask about fewer "
            "files at a time, or give the model a larger window (the server's context size, "
            f"then {window})."
        )
    if fault.kind == "overflow":
        return (
            f"The model refused the prompt as too long for its context window ({fault.detail}),"
            f" even after compacting what could be. The working window is "
            f"{ls.config.context_window} tokens: set {window} to the model's real window, "
            "run /compact, or start a new session (a single message this long cannot be sent)."
        )
    if fault.kind == "runaway":
        return (
            f"{capitalized(fault.message)}, so the turn stopped. Ask again more precisely, or use "
            "a model better at calling tools; each call is in the transcript."
        )
    if fault.kind == "tool-misuse":
        last = f" (the last: {fault.detail})" if fault.detail else ""
        return (
            f"{capitalized(fault.message)}{last}, so the turn stopped. Ask again more precisely, "
            "or use a model better at calling tools; each call and its error is in the "
            "transcript."
        )
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if fault.kind == "unreachable":
        option = ls.config.option("model.baseUrl")
        if ls.config.model.base_url is None:
            return (
                f"{capitalized(fault.message)}{tries}: no base URL is set ({option}), so "
                "OpenAI's was asked; set it to your model server's (e.g. http://127.0.0.1:8080/v1)"
            )
        where = url_without_userinfo(ls.config.model.base_url)
        return (
            f"{capitalized(fault.message)}{tries}: is the server at {where} running, and is "
            f"{option} right?"
        )
    status = (
        f" (HTTP {fault.status})"
        if fault.status is not None and "HTTP" not in fault.message
        else ""
    )
    return options_named(ls, f"The model request failed{tries}{status}: {fault.message}")


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
    ls.config = ls.config.with_window(window, "overflow")
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
            f"{capitalized(fault.message)}. Compacting the conversation to fit "
            f"{ls.config.context_window} tokens, and asking again. To keep more of it, "
            f"{RAISE_LENGTH.format(window=ls.config.option('contextWindow'))}."
        )
    result = await history_ops.compact_now(open_turn=True)
    if not result.compacted:
        logger.warning("the prompt did not fit the context window and nothing could be compacted")
    return lowered or result.compacted
