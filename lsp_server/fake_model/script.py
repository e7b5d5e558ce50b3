"""What the fake model answers and records: the reply queues, the requests, held replies.

Thread-safe: the HTTP handler threads take replies and record requests while a test adds
replies and reads what was recorded.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .replies import (
    Reply,
    content_text,
    default_summary,
    echo_reply,
    is_summary_request,
    parse_reply,
)

DEFAULT_MODEL = "fake-model"
OVERFLOW_STYLES = ("openai", "llama-cpp", "vllm", "llama-server", "ollama", "ollama-legacy")
# Styles that answer a prompt over the window as if it fitted, having read only part of it.
SILENT_STYLES = ("ollama", "ollama-legacy")
NO_TOOLS_STYLES = ("ollama", "llama-server", "vllm")  # servers that refuse a request's tools
# Servers that refuse an assistant message whose content is null (a tool call without text).
NULL_CONTENT_STYLES = ("llama-cpp", "llama-server")
LLAMA_CPP_PYTHON_ENTRY = {"owned_by": "me", "permissions": []}  # its `/v1/models` entries


class ClientGoneError(Exception):
    """The client closed the connection before the reply was finished."""


@dataclass
class RecordedRequest:
    """A chat completion request as the server received it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)  # when it arrived


class ModelScript:
    """The scripted replies (chat and background summaries) and every request received."""

    def __init__(
        self,
        replies: list[Any] | None = None,
        *,
        label: str | None = None,
        context_window: int | None = None,
        overflow: str = "openai",
        slots: int | None = None,
        no_tools: str | None = None,
        null_content: str | None = None,
        tool_streams: bool = True,
        template_tools: bool | None = None,
    ) -> None:
        if overflow not in OVERFLOW_STYLES:
            raise ValueError(f"overflow must be one of {OVERFLOW_STYLES}")
        if no_tools is not None and no_tools not in NO_TOOLS_STYLES:
            raise ValueError(f"no_tools must be one of {NO_TOOLS_STYLES}")
        if null_content is not None and null_content not in NULL_CONTENT_STYLES:
            raise ValueError(f"null_content must be one of {NULL_CONTENT_STYLES}")
        self.no_tools = no_tools
        self.null_content = null_content
        self.tool_streams = tool_streams
        self.template_tools = template_tools
        # Fields added to the `/v1/models` entry: a window (`max_model_len`, `meta`), or
        # llama-cpp-python's (`LLAMA_CPP_PYTHON_ENTRY`).
        self.models_entry: dict[str, Any] = {}
        self.probes: list[dict[str, Any]] = []  # requests that forced a tool in one token
        self.model_id = f"agent-assist-{label}" if label else DEFAULT_MODEL
        self.context_window = context_window
        self.overflow = overflow
        self.disconnects = 0
        self._slots: threading.BoundedSemaphore | None = None
        self.slots = slots
        self._queue: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._summary_queue: deque[Reply] = deque()
        self._summary_requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._hangs: set[threading.Event] = set()
        self._hang_cond = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._counter = 0
        self.add(*(replies or []))

    # -- scripting ---------------------------------------------------------
    def add(self, *replies: str | dict[str, Any] | Reply) -> None:
        """Append replies (dict/str/`Reply`) to the script queue."""
        parsed = [parse_reply(r) for r in replies]
        with self._lock:
            self._queue.extend(parsed)

    def add_summary(self, *replies: str | dict[str, Any] | Reply) -> None:
        """Append replies for the server's background session-summary requests."""
        parsed = [parse_reply(r) for r in replies]
        with self._lock:
            self._summary_queue.extend(parsed)

    @property
    def summary_requests(self) -> list[RecordedRequest]:
        """Every background session-summary request received so far."""
        with self._lock:
            return list(self._summary_requests)

    @property
    def remaining(self) -> int:
        """Number of scripted replies not yet consumed."""
        with self._lock:
            return len(self._queue)

    def release(self) -> None:
        """Let every currently hanging reply finish."""
        with self._lock:
            for event in self._hangs:
                event.set()

    def wait_hanging(self, timeout: float = 5.0) -> bool:
        """Block until some reply is hanging (its first delta sent); False on timeout."""
        with self._hang_cond:
            return self._hang_cond.wait_for(lambda: bool(self._hangs), timeout)

    # -- recorded requests -------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every chat completion request received so far."""
        with self._lock:
            return list(self._requests)

    def last_request(self) -> RecordedRequest:
        """Return the most recent chat completion request."""
        return self.requests[-1]

    def messages(self, i: int = -1) -> list[dict[str, Any]]:
        """Return the `messages` list of request `i`."""
        return list(self.requests[i].body.get("messages", []))

    def system_text(self, i: int = -1) -> str:
        """Concatenated content of the system/developer messages of request `i`."""
        parts = [
            content_text(m.get("content"))
            for m in self.messages(i)
            if m.get("role") in ("system", "developer")
        ]
        return "\n".join(parts)

    # -- called from the handler threads -------------------------------------
    def probe_answer(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """Answer a one-token request that forces a tool call (the server's tools probed).

        None: not one. {}: refused as llama-cpp-python's function calling refuses it (its
        handler's assertion); else a one-token answer, as its plain chat template gives.
        """
        if body.get("max_tokens") != 1 or body.get("tool_choice") != "required":
            return None
        with self._lock:
            self.probes.append(body)
        if not self.tool_streams:
            return {}
        message = {"role": "assistant", "content": "OK"}
        choice = {"index": 0, "message": message, "finish_reason": "length"}
        usage = {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13}
        return {"id": "probe", "object": "chat.completion", "choices": [choice], "usage": usage}

    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> int:
        with self._lock:
            if is_summary_request(body):
                self._summary_requests.append(RecordedRequest(path, headers, body))
                return len(self._summary_requests)
            self._requests.append(RecordedRequest(path, headers, body))
            return len(self._requests)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        if is_summary_request(body):
            with self._lock:
                if self._summary_queue:
                    return self._summary_queue.popleft()
            return default_summary(body)
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return echo_reply(body)

    def _put_back(self, reply: Reply) -> None:
        """Make `reply` the next one again (a request refused after it was drawn)."""
        with self._lock:
            self._queue.appendleft(reply)

    def call_id(self) -> str:
        """Return a fresh tool call id (`call_<n>`)."""
        with self._lock:
            self._counter += 1
            return f"call_{self._counter}"

    @property
    def slots(self) -> int | None:
        """Requests answered at once (None: no limit); set before requests are in flight."""
        return self._slot_count

    @slots.setter
    def slots(self, count: int | None) -> None:
        # Like llama.cpp's `--parallel N`: the other requests wait; one whose client hangs up
        # frees its slot.
        self._slot_count = count
        self._slots = threading.BoundedSemaphore(count) if count else None

    def take_slot(self, client_gone: Callable[[], bool]) -> threading.BoundedSemaphore | None:
        """Wait for a free slot and return what to release; ClientGoneError if the client left."""
        slots = self._slots
        if slots is None:
            return None
        while not slots.acquire(timeout=0.05):
            if self._stopping.is_set():
                return None
            if client_gone():
                raise ClientGoneError
        return slots

    def count_disconnect(self) -> None:
        """Count a client that hung up during its request."""
        with self._lock:
            self.disconnects += 1

    def pause(self, delay: float, client_gone: Callable[[], bool]) -> None:
        """Sleep between chunks; ClientGoneError if the client hung up meanwhile."""
        end = time.monotonic() + delay
        while delay > 0 and (left := end - time.monotonic()) > 0:
            if self._stopping.wait(min(left, 0.05)):
                return
            if client_gone():
                raise ClientGoneError

    def hang(self, client_gone: Callable[[], bool]) -> None:
        """Wait until released or stopped; ClientGoneError if the client disconnects."""
        event = threading.Event()
        with self._hang_cond:
            self._hangs.add(event)
            self._hang_cond.notify_all()
        try:
            while not event.wait(0.05):
                if self._stopping.is_set():
                    return
                if client_gone():
                    raise ClientGoneError
        finally:
            with self._lock:
                self._hangs.discard(event)
