"""`session/prompt`: a turn run by the engine, its activity streamed as `session/update`s.

The engine's sink is called synchronously; the updates are queued and sent in order by one
task, and all of them are sent before the prompt is answered.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from acp.helpers import update_agent_message_text
from acp.schema import PromptResponse, SessionInfoUpdate, Usage, UsageUpdate

from .checks import failed
from .client import ClientLink
from .host import AcpHost
from .modes import mode_changed
from .sessions import Held
from .updates import STATUSES, edit_diff, stop_reason, tool_ended, tool_started

logger = logging.getLogger(__name__)

SEND_WAIT = 5.0  # seconds a question waits for the updates before it


class AcpSink:
    """The engine's `TurnSink` for one ACP turn: each event one queued `session/update`."""

    def __init__(self, link: ClientLink, session_id: str, root: Path) -> None:
        self.link = link
        self.session_id = session_id
        self.root = root
        self.streamed = False
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._sender = asyncio.ensure_future(self._send())
        self._started: set[str] = set()

    def delta(self, text: str) -> None:
        """Stream a text delta as an `agent_message_chunk`."""
        if text:
            self.streamed = True
            self._queue.put_nowait(update_agent_message_text(text))

    def tool(self, name: str, args: Any, status: str, call_id: str) -> None:
        """Announce a tool call (`tool_call`) or its end (`tool_call_update`)."""
        state = STATUSES.get(status, "in_progress")
        if call_id not in self._started:
            self._started.add(call_id)
            diff = edit_diff(self.root, name, args)
            self._queue.put_nowait(tool_started(self.root, call_id, name, args, state, diff))
        elif state != "in_progress":
            self._queue.put_nowait(tool_ended(call_id, state))

    def retry(self, attempt: int, reason: str) -> None:
        """Say that the answer starts over (ACP cannot take back the text already sent)."""
        if self.streamed:
            note = f"\n\n_(attempt {attempt}: {reason}; the answer starts over)_\n\n"
            self._queue.put_nowait(update_agent_message_text(note))
        self.streamed = False

    def thinking(self) -> None:
        """Nothing to send: the client shows the turn as running."""

    def end_thinking(self) -> None:
        """Nothing to send."""

    async def _send(self) -> None:
        while (update := await self._queue.get()) is not None:
            try:
                await self.link.update(self.session_id, update)
            except Exception as exc:  # the client is gone: the turn still completes and is kept
                logger.warning("session/update not sent: %s", exc)
            finally:
                self._queue.task_done()

    async def sent(self) -> None:
        """Return once what is queued has been sent (a question names a call sent before it)."""
        if self._sender.done():
            return
        try:
            await asyncio.wait_for(self._queue.join(), SEND_WAIT)
        except TimeoutError:  # the client reads slowly: ask anyway (it may show the call late)
            logger.warning("session/update still queued after %s s; asking anyway", SEND_WAIT)

    async def flush(self) -> None:
        """Send what is queued, then stop the sender."""
        self._queue.put_nowait(None)
        await asyncio.wait({self._sender}, timeout=5)
        if not self._sender.done():
            self._sender.cancel()


def usage_of(counts: dict[str, Any]) -> Usage | None:
    """Return ACP's usage of a turn's token counts (None if the model said none)."""
    inputs = counts.get("input_tokens") or counts.get("inputTokens")
    outputs = counts.get("output_tokens") or counts.get("outputTokens")
    if not isinstance(inputs, int) or not isinstance(outputs, int):
        return None
    return Usage(input_tokens=inputs, output_tokens=outputs, total_tokens=inputs + outputs)


async def after_turn(link: ClientLink, held: Held, titled: str | None, phase: str | None) -> None:
    """Tell the client the new title (a first turn), mode (the model's), and the window's use."""
    engine = held.engine
    state = engine.lifecycle.current.state
    if state.phase != phase:
        await link.update(held.session_id, mode_changed(state.phase))
    if state.title and state.title != titled:
        info = SessionInfoUpdate(
            session_update="session_info_update",
            title=state.title,
            updated_at=state.updated_at.isoformat().replace("+00:00", "Z"),
        )
        await link.update(held.session_id, info)
    # The history's estimated size (the cached bound the engine compacts by), not the
    # turn's input tokens: those add up every model call of the turn.
    used = engine.lifecycle.current.history.token_bound()
    window = UsageUpdate(
        session_update="usage_update", used=used, size=engine.config.context_window
    )
    await link.update(held.session_id, window)


async def run_prompt(link: ClientLink, held: Held, text: str) -> PromptResponse:
    """Run one turn of `held` and answer with its stop reason (a failed turn: an error)."""
    from engine.errors import UserError

    if held.turn is not None and not held.turn.done():
        raise failed(f"session {held.session_id} is already answering a prompt")
    sinks: list[AcpSink] = []
    host = held.engine.host

    def open_sink(session_id: str, turn: int) -> AcpSink:
        sink = AcpSink(link, held.session_id, held.root)
        sinks.append(sink)
        if isinstance(host, AcpHost):  # its questions name the calls this sink announced
            host.sink = sink
        return sink

    state = held.engine.lifecycle.current.state
    titled, phase = state.title, state.phase
    turn = asyncio.ensure_future(held.engine.turns.run(text, open_sink))
    held.turn = turn
    try:
        await asyncio.wait({turn})
    except asyncio.CancelledError:  # the request itself went (the connection closes)
        turn.cancel()
        raise
    finally:
        for sink in sinks:
            await sink.flush()
        if isinstance(host, AcpHost) and host.sink in sinks:
            host.sink = None
        if held.turn is turn:
            held.turn = None
    if turn.cancelled():
        return PromptResponse(stop_reason="cancelled")
    error = turn.exception()
    if isinstance(error, UserError):
        raise failed(str(error))
    if error is not None:
        raise error
    outcome = turn.result()
    await after_turn(link, held, titled, phase)
    log = held.engine.lifecycle.current.log
    if not log.online:  # kept on this machine while the database is away: tried between turns
        held.engine.host.spawn(asyncio.to_thread(log.retry), "store retry")
    return PromptResponse(
        stop_reason=stop_reason(outcome.finish_reason), usage=usage_of(outcome.usage)
    )
