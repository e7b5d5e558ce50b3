"""A turn's model attempts: retry what may succeed, heal a full window, say why it failed.

`run_attempts` is what `TurnEngine` runs for each turn (`messages.final_message` words a
failure for the user); `heal_overflow` takes the window a server reports and compacts.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from session.errors import SessionError
from session.lifecycle import TurnRecorder

from .compaction import Compaction
from .messages import NO_TOOLS_WARNING, RAISE_LENGTH, capitalized, final_message
from .model.faults import RETRY_AFTER_CAP, ModelFault, backoff, classify
from .model.limits import CallBudget
from .model.runner import TurnResult, TurnSink
from .model.tools import ToolDeps, read_limit
from .view import EngineView

logger = logging.getLogger(__name__)


class TurnFailedError(Exception):
    """A turn's model requests failed for good; the message says what happened."""


class EngineForAttempts(EngineView, Protocol):
    """What the attempts read besides: compaction, to heal a prompt over the window."""

    compaction: Compaction


async def run_attempts(
    ls: EngineForAttempts,
    recorder: TurnRecorder,
    prompt: str | list[str],
    history: list[dict[str, Any]],
    sink: TurnSink,
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
    lifecycle = ls.lifecycle
    deps = ToolDeps(
        lifecycle,
        ls.host.edits,
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
                ls.host.show(NO_TOOLS_WARNING.format(detail=fault.detail))
            elif fault.kind == "null-content" and not runner.quirks.blank_tool_text:
                runner.quirks.blank_tool_text = True  # asked again at once, with "" for null
            elif (
                fault.kind in ("overflow", "truncated")
                and not healed
                and await heal_overflow(ls, fault)
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


def adopt_window(ls: EngineView, window: int, source: str) -> bool:
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
    ls.lifecycle.set_history_budget(ls.config.history_budget)
    return True


async def heal_overflow(ls: EngineForAttempts, fault: ModelFault) -> bool:
    """Heal a prompt over the window: take the window the server reported, and compact.

    Return False if neither changed anything (sending the same prompt again is pointless).
    """
    lowered = fault.window is not None and adopt_window(
        ls, fault.window, "the model reads" if fault.kind == "truncated" else "the model reports"
    )
    cuts = ls.runner.cuts if ls.runner is not None else None
    if fault.kind == "truncated" and cuts is not None and not cuts.told:  # else unheard of
        cuts.told = True
        ls.host.show(
            f"{capitalized(fault.message)}. Compacting the conversation to fit "
            f"{ls.config.context_window} tokens, and asking again. To keep more of it, "
            f"{RAISE_LENGTH.format(window=ls.config.option('contextWindow'))}."
        )
    result = await ls.compaction.compact_now(open_turn=True)
    if not result.compacted:
        logger.warning("the prompt did not fit the context window and nothing could be compacted")
    return lowered or result.compacted
