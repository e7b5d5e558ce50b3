"""What a turn shows the client as it runs: streamed text, tool activity, retries, thinking."""

from __future__ import annotations

import time
import uuid
from typing import Any

from lsprotocol import types

from .. import protocol as proto
from ..server import AgentAssistServer


class ThinkingProgress:
    """`$/progress` while a reasoning model thinks: its thinking streams before any answer.

    Begun at the first piece of thinking (once the client accepted the token), ended at
    the first text, tool call or retry, or when the turn ends, with how long it took. No
    reports in between: a terminal prints each on a line of its own.
    """

    def __init__(self, ls: AgentAssistServer) -> None:
        self.ls = ls
        self.token: str | None = None
        self.begun = False
        self.ended = False
        self.started = 0.0

    def update(self) -> None:
        """Begin the progress, if this is the first piece of thinking."""
        if self.token is not None or self.ended:
            return
        window = self.ls.client_capabilities.window
        if window is None or not window.work_done_progress:
            self.ended = True  # nothing to show it with
            return
        self.token = str(uuid.uuid4())
        self.started = time.monotonic()
        self.ls.spawn(self._begin(self.token), "thinking progress")

    async def _begin(self, token: str) -> None:
        await self.ls.work_done_progress.create_async(token)
        if not self.ended:
            self.ls.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title="The model is thinking")
            )
            self.begun = True

    def end(self) -> None:
        """End the progress (if it was begun), saying how long the thinking took."""
        if self.ended:
            return
        self.ended = True
        if self.begun and self.token is not None:
            took = time.monotonic() - self.started
            end = types.WorkDoneProgressEnd(message=f"thought for {took:.0f} s")
            self.ls.work_done_progress.end(self.token, end)


class NotifyingSink:
    """Streams a turn's activity to the client as notifications."""

    def __init__(self, ls: AgentAssistServer, session_id: str, turn: int) -> None:
        self.ls = ls
        self.session_id = session_id
        self.turn = turn
        self.streamed = False  # text of the current attempt reached the client
        self.thoughts = ThinkingProgress(ls)

    def thinking(self) -> None:
        """Show that the model is thinking (its reasoning is recorded, never shown as text)."""
        self.thoughts.update()

    def delta(self, text: str) -> None:
        """Send `agentAssist/chatDelta`."""
        self.thoughts.end()
        self.streamed = True
        self.ls.notify(
            proto.ChatDeltaParams(session_id=self.session_id, turn=self.turn, delta=text)
        )

    def retry(self, attempt: int, reason: str) -> None:
        """Send `agentAssist/chatRetry`: the partial reply shown is dropped, deltas restart."""
        self.thoughts.end()
        self.streamed = False
        self.ls.notify(
            proto.ChatRetryParams(
                session_id=self.session_id, turn=self.turn, attempt=attempt, reason=reason
            )
        )

    def tool(self, name: str, args: Any, status: str, call_id: str) -> None:
        """Send `agentAssist/toolCall`."""
        self.thoughts.end()
        self.ls.notify(
            proto.ToolCallParams(
                session_id=self.session_id,
                turn=self.turn,
                tool=name,
                args=args,
                status=status,
                call_id=call_id,
            )
        )
