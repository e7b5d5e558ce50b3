"""What a turn shows the client as it runs: streamed text, tool activity, retries, thinking."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from .. import protocol as proto
from ..progress import Progress, can_show
from ..server import AgentAssistServer

REPLY_TAIL = 160  # characters of the reply a progress report shows (a status line's worth)


class ThinkingProgress:
    """`$/progress` while a reasoning model thinks: its thinking streams before any answer.

    Begun at the first piece of thinking (once the client accepted the token), ended at
    the first text, tool call or retry, or when the turn ends, with how long it took. No
    reports in between: a terminal prints each on a line of its own.
    """

    def __init__(self, ls: AgentAssistServer) -> None:
        self.ls = ls
        self.asked = False  # a token was asked for
        self.progress: Progress | None = None  # once begun
        self.ended = False
        self.started = 0.0

    def update(self) -> None:
        """Begin the progress, if this is the first piece of thinking."""
        if self.asked or self.ended:
            return
        self.asked = True
        if not can_show(self.ls):
            self.ended = True  # nothing to show it with
            return
        self.started = time.monotonic()
        self.ls.spawn(self._begin(), "thinking progress")

    async def _begin(self) -> None:
        progress = await Progress.create(self.ls)
        if not self.ended:
            progress.begin("The model is thinking")
            self.progress = progress

    def end(self) -> None:
        """End the progress (if it was begun), saying how long the thinking took."""
        if self.ended:
            return
        self.ended = True
        if self.progress is not None:
            took = time.monotonic() - self.started
            self.progress.end(f"thought for {took:.0f} s")


def reply_tail(text: str, limit: int = REPLY_TAIL) -> str:
    """Return the reply's last non-empty line, its end only if longer than `limit`."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return last if len(last) <= limit else "…" + last[-(limit - 1) :]


class ReplyProgress:
    """A chat's reply as standard `$/progress`, for clients that show nothing else of it.

    Begun when the chat arrives (title "Agent Assist"), reported as the reply streams
    (its last line, bounded), ended with a short summary; cancellable from the client,
    which cancels the turn as `$/cancelRequest` does.
    """

    def __init__(self, ls: AgentAssistServer, token: int | str) -> None:
        self.ls = ls
        self.token = token
        self.bar = Progress(ls, token)
        self.text = ""

    @classmethod
    async def open(
        cls, ls: AgentAssistServer, token: int | str | None, *, create: bool
    ) -> ReplyProgress | None:
        """Return the progress on the client's token (or a new one if `create`), if it can."""
        if not can_show(ls):
            return None
        if token is None:
            if not create:
                return None
            token = (await Progress.create(ls)).token
            if token is None:  # the chat goes on without it
                return None
        return cls(ls, token)

    def begin(self, queued: bool) -> None:
        """Send the begin report."""
        message = "waiting for the running turn" if queued else "waiting for the model"
        self.bar.begin("Agent Assist", message=message, cancellable=True)

    def cancel_with(self, task: asyncio.Task[Any] | None) -> None:
        """Cancel `task` (the turn) when the client cancels this progress."""
        future = self.ls.work_done_progress.tokens.get(self.token)
        if task is None or future is None or future.done():  # a reused token's old future
            return
        future.add_done_callback(lambda f: task.cancel() if f.cancelled() else None)

    def report(self, message: str) -> None:
        """Send a report, unless the progress ended."""
        self.bar.report(message)

    def delta(self, text: str) -> None:
        """Report the reply's last line."""
        self.text += text
        self.report(reply_tail(self.text))

    def end(self, message: str) -> None:
        """Send the end report (once)."""
        self.bar.end(message)


class NotifyingSink:
    """Streams a turn's activity to the client as notifications."""

    def __init__(
        self,
        ls: AgentAssistServer,
        session_id: str,
        turn: int,
        progress: ReplyProgress | None = None,
    ) -> None:
        self.ls = ls
        self.progress = progress
        self.session_id = session_id
        self.turn = turn
        self.streamed = False  # text of the current attempt reached the client
        self.thoughts = ThinkingProgress(ls)

    def thinking(self) -> None:
        """Show that the model is thinking (its reasoning is recorded, never shown as text)."""
        self.thoughts.update()

    def end_thinking(self) -> None:
        """End the thinking progress, if it was shown (the turn ended)."""
        self.thoughts.end()

    def delta(self, text: str) -> None:
        """Send `agentAssist/chatDelta`."""
        self.thoughts.end()
        self.streamed = True
        if self.progress is not None:
            self.progress.delta(text)
        self.ls.notify(
            proto.ChatDeltaParams(session_id=self.session_id, turn=self.turn, delta=text)
        )

    def retry(self, attempt: int, reason: str) -> None:
        """Send `agentAssist/chatRetry`: the partial reply shown is dropped, deltas restart."""
        self.thoughts.end()
        self.streamed = False
        if self.progress is not None:
            self.progress.text = ""
            self.progress.report(f"retrying (attempt {attempt}): {reason}")
        self.ls.notify(
            proto.ChatRetryParams(
                session_id=self.session_id, turn=self.turn, attempt=attempt, reason=reason
            )
        )

    def tool(self, name: str, args: Any, status: str, call_id: str) -> None:
        """Send `agentAssist/toolCall`."""
        self.thoughts.end()
        if self.progress is not None and status == "started":
            self.progress.report(f"{name}…")
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
