"""TurnRecorder: the events of one turn (steps, chunks, tool calls, its end) as they happen."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from ..derive.messages import Message
from ..errors import SessionError
from ..events import EndReason, Event, response_text
from ..file_changes import PendingChange
from ..redaction import StreamScrubber
from ..store.session import Session
from .changes import Keep, recording


class TurnRecorder:
    """Writes the events of one turn, in order, as they happen."""

    def __init__(
        self,
        current: Callable[[], Session],
        number: int,
        *,
        headers_sent: set[str],
        on_completed: Callable[[], None],
        keep: Keep | None = None,
    ) -> None:
        self._current = current  # the session the turn goes to (reopened after a store fault)
        self._headers_sent = headers_sent  # system prompts already recorded in full
        self._on_completed = on_completed
        self._keep = keep  # keeps file contents as blobs, the event appended inside
        # tool call id -> the files that call changed, attached to its `tool/result`
        self._changes: dict[str, list[PendingChange]] = {}
        self.number = number
        self.step = 0
        self.closed = False
        self.attempt = 1  # of the current model request
        self.resending = False
        # The step's streamed text is redacted as a whole: a chunk is written once the text
        # around it cannot be part of a secret still arriving (its tail is held until then).
        self._stream: StreamScrubber | None = None
        # The current step's streamed text as recorded (redacted), and the text of the
        # turn's last whole answer: what a turn stopped or failed keeps of its reply.
        self._partial = ""
        self._answered = ""

    @property
    def _session(self) -> Session:
        return self._current()

    def _append(self, type_: str, data: dict[str, Any]) -> Event:
        self.flush()
        return self._write(type_, data)

    def _write(self, type_: str, data: dict[str, Any]) -> Event:
        return self._session.append(type_, data, turn=self.number, step=self.step or None)

    def start_step(self, messages: list[Message], proof: dict[str, Any] | None = None) -> Event:
        """Start a model request; `messages` are the new request messages it carries.

        After `retry_step` the first step resends the request already in the history, so
        it records no new messages. `proof`: the request's digest and what rebuilds it
        (`request_sha256`, `request`), added to the event's data.
        """
        self.flush()  # the previous step's held text belongs to that step
        self.step += 1
        self._partial = ""
        if self.resending:
            self.resending = False
            data: dict[str, Any] = {"messages": [], "attempt": self.attempt}
        else:
            data = {"messages": messages}
        return self._append("step/start", {**data, **(proof or {})})

    def retry_step(self, kind: str, reason: str, delay: float, streamed: bool) -> Event:
        """Abandon the current step's answer; the next step resends its request."""
        event = self._append(
            "step/retry",
            {
                "attempt": self.attempt,
                "kind": kind,
                "reason": reason,
                "delay": round(delay, 3),
                "streamed": streamed,
            },
        )
        self.attempt += 1
        self._partial = ""  # the failed attempt's text is dropped
        self.resending = self.step > 0  # else nothing was sent: the prompt goes out afresh
        return event

    def request_header(self, model: str, settings: dict[str, Any], system_prompt: str) -> Event:
        """Record the request's model, settings and system prompt (text once, then hash)."""
        digest = hashlib.sha256(system_prompt.encode()).hexdigest()
        seen = self._headers_sent
        data: dict[str, Any] = {
            "model": model,
            "settings": settings,
            "system_prompt_sha256": digest,
        }
        if digest not in seen:
            data["system_prompt"] = system_prompt
            seen.add(digest)
        return self._append("request/header", data)

    def chunk(self, delta: str) -> Event | None:
        """Record a streamed text delta, up to where it is known to hold no secret."""
        if self._stream is None:
            # Cut where it is safe; the log redacts each piece as it writes it.
            self._stream = StreamScrubber(self._session.log.redactor, redact=False)
        safe = self._stream.feed(delta)
        return self._chunk(safe) if safe else None

    def flush(self) -> Event | None:
        """Record the streamed text held back (the step ended, or the turn stops here)."""
        stream, self._stream = self._stream, None
        rest = stream.flush() if stream is not None else ""
        return self._chunk(rest) if rest else None

    def _chunk(self, text: str) -> Event:
        event = self._write("assistant/chunk", {"delta": text})
        delta = getattr(event.data, "delta", text)
        self._partial += delta if isinstance(delta, str) else text
        return event

    @property
    def reply_so_far(self) -> str:
        """Return the reply as the session keeps it for a turn that ends now, not completed.

        The step's streamed text if it has any (kept as a partial answer), else the text of
        the turn's last whole answer (one before a tool call): the transcript's last reply.
        """
        return self._partial or self._answered

    def assistant_message(self, message: Message) -> Event:
        """Record the complete model response (even if empty)."""
        event = self._append("assistant/message", {"message": message})
        self._partial = ""  # the step's answer is whole: nothing of it is partial
        text = response_text(getattr(event.data, "message", message))
        self._answered = text or self._answered
        return event

    def tool_call(self, tool_call_id: str, name: str, args: Any) -> Event:
        """Record a tool call."""
        return self._append("tool/call", {"tool_call_id": tool_call_id, "name": name, "args": args})

    def note_change(self, tool_call_id: str, change: PendingChange) -> None:
        """Hold a file the tool call changed until its result is recorded."""
        self._changes.setdefault(tool_call_id, []).append(change)

    def note_unchanged(self, tool_call_id: str) -> None:
        """Note that the tool call wrote a file as it was: its result says `files: []`."""
        self._changes.setdefault(tool_call_id, [])

    def tool_result(
        self, tool_call_id: str, name: str, content: Any, is_error: bool = False
    ) -> Event:
        """Record a tool's result, with the files it changed (`files`) if any."""
        data: dict[str, Any] = {
            "tool_call_id": tool_call_id,
            "name": name,
            "content": content,
            "is_error": is_error,
        }
        changes = self._changes.pop(tool_call_id, None)
        if changes == []:  # it wrote the file as it was
            return self._append("tool/result", {**data, "files": []})
        if changes is None or self._keep is None:
            return self._append("tool/result", data)
        with recording(self._keep, changes) as files:
            return self._append("tool/result", {**data, "files": files})

    def end_step(self, usage: dict[str, Any] | None = None) -> Event:
        """Record the end of a model call."""
        return self._append("step/end", {"usage": usage or {}})

    def end(self, reason: EndReason, error: str | None = None) -> Event:
        """Close the turn (fsynced)."""
        if self.closed:
            raise SessionError(f"turn {self.number} is already closed")
        try:
            self.flush()
            event = self._session.append(
                "turn/end", {"reason": reason, "error": error}, turn=self.number
            )
        finally:
            # Closed once its end is in the log; if the disk refused, the next turn closes it.
            self.closed = self._session.open_turn != self.number
        if reason == "completed":
            self._on_completed()
        return event
