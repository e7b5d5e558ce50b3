"""What went wrong with a model request, in words a user can act on, and whether to retry.

`classify` maps whatever a model request raised (pydantic-ai's error categories, the HTTP
client's, our own stream checks) to a `ModelFault`: its kind, whether sending the request
again may succeed, how long the provider asked us to wait, and, for a prompt over the
context window, the window the server reported (or, for a prompt it cut without an error,
the tokens it read: `truncation`). The wording of overflow errors differs per
server (OpenAI, vLLM, llama.cpp's two servers, Ollama, LiteLLM, Anthropic- and
Mistral-compatible gateways); `OVERFLOW_PATTERNS` lists the ones known.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from session.redaction import Redactor

FaultKind = Literal[
    "rate-limit",
    "server",
    "unreachable",
    "connection",
    "cut",
    "corrupt",
    "stall",
    "empty",
    "overflow",
    "truncated",
    "no-tools",
    "null-content",
    "tool-misuse",
    "runaway",
    "rejected",
    "other",
]
NEVER_RETRIED = frozenset({400, 401, 403, 404, 422})
_HEALED = ("overflow", "no-tools", "null-content")  # changed requests fix these, not waiting
# A request's answer did not begin in time (a stream that stalls later says so itself).
NO_ANSWER_IN_TIME = (
    "the model sent nothing within the timeout (model.firstTokenTimeout; a local server "
    "reading a long prompt may need more)"
)
RETRY_AFTER_CAP = 60.0  # a provider asking for longer than this is reported, not waited on
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0

OVERFLOW_PATTERNS = (
    "context_length_exceeded",  # OpenAI's code, also Groq, DeepSeek, llama-cpp-python
    "maximum context length",  # OpenAI, vLLM, DeepSeek, LiteLLM
    "reduce the length of the messages",  # OpenAI, vLLM, Groq
    "exceed_context_size_error",  # llama.cpp's llama-server (type)
    "exceeds the available context size",  # llama-server
    "is larger than the max context size",  # llama-server with context shift on
    "exceeds the context length",  # Ollama
    "exceeds context length",
    "context window exceeded",
    "contextwindowexceeded",  # LiteLLM's ContextWindowExceededError
    "prompt is too long",  # Anthropic-compatible gateways
    "is too long and exceeds limit",  # vLLM's scheduler
    "longer than the maximum model length",  # vLLM
    "too large for model with",  # Mistral
    "maximum number of tokens allowed",  # Gemini's OpenAI-compatible endpoint
    "input is too long",
)
# A server (or the model it serves) that will not take the request's tools at all.
TOOLS_REFUSED_PATTERNS = (
    "does not support tools",  # Ollama, a model whose template has no tools (HTTP 400)
    "tools param requires --jinja",  # llama.cpp's llama-server without --jinja (HTTP 500)
    "tool choice requires --enable-auto-tool-choice",  # vLLM without tool calling (HTTP 400)
    "no endpoints found that support tool use",  # OpenRouter (HTTP 404)
)
# A server that refuses the null `content` of an assistant message that only calls tools
# (what the OpenAI API allows, and pydantic-ai sends); it takes an empty string.
NULL_CONTENT_REFUSED_PATTERNS = (
    "expected 'content' to be a string or an array",  # llama-server builds before 2025-05
    "expected a string, got null",  # OpenAI-style validators (Groq and others)
)
_LLAMA_CPP_PYTHON_NULL = re.compile(  # its pydantic validation of the request body
    r"chatcompletionrequestassistantmessage', 'content'\), 'msg': 'input should be a valid string'"
)
# pydantic-ai's words when a tool failed more often in a row than the agent's `retries`.
_TOOL_RETRIES = re.compile(r"Tool '([^']+)' exceeded max retries count of (\d+)")
_WINDOW_PATTERNS = (
    re.compile(r"maximum context length is (\d+)"),
    re.compile(r"""['"]?n_ctx['"]?\s*[:=]\s*(\d+)"""),
    re.compile(r"exceeds limit of (\d+)"),
    re.compile(r"maximum model length of (\d+)"),
    re.compile(r"(\d+) maximum context length"),
    re.compile(r"> (\d+) maximum"),
    re.compile(r"maximum number of tokens allowed \((\d+)\)"),
    re.compile(r"context (?:length|size|window) (?:of|is) (\d+)"),
    re.compile(r"(?:available|max) context size \((\d+) tokens\)"),  # llama-server's message
)


class RunawayTurnError(Exception):
    """The turn made as many model requests as a turn may (pydantic-ai's `request_limit`)."""

    def __init__(self, requests: int, calls: dict[str, int]) -> None:
        super().__init__(f"{requests} model requests in one turn")
        self.requests = requests
        self.calls = calls  # tool name -> times called in the turn


def _runaway(exc: RunawayTurnError) -> ModelFault:
    called = ", ".join(
        f"{name} {count} time{'s' * (count != 1)}"
        for name, count in sorted(exc.calls.items(), key=lambda item: -item[1])[:3]
    )
    return ModelFault(
        "runaway",
        f"the model made {exc.requests} requests in this turn without answering"
        + (f" (it called {called})" if called else ""),
        False,
    )


@dataclass(frozen=True)
class ModelFault:
    """One failed model request, classified."""

    kind: FaultKind
    message: str  # one line for the user
    retryable: bool
    retry_after: float | None = None
    window: int | None = None  # the window the server reported (or, cut: the tokens it read)
    status: int | None = None
    detail: str = ""  # what the server said, verbatim


def _chain(exc: BaseException) -> list[BaseException]:
    """Return `exc` and its causes and contexts, outermost first."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and not any(current is s for s in seen) and len(seen) < 12:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _body_text(body: Any) -> str:
    if body is None:
        return ""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return " ".join(f"{k}={v}" for k, v in error.items() if v is not None)
        return str(error)
    return str(body)


def _detail(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    message = getattr(exc, "message", None)
    return str(message or exc or type(exc).__name__)


def overflow_window(text: str) -> int | None:
    """Return the context window an overflow error names, if it names one."""
    for pattern in _WINDOW_PATTERNS:
        if match := pattern.search(text):
            value = int(match.group(1))
            if 256 <= value <= 100_000_000:
                return value
    return None


def _says(text: str, patterns: tuple[str, ...]) -> bool:
    lowered = text.lower()
    return any(pattern in lowered for pattern in patterns)


def is_overflow_text(text: str) -> bool:
    """Return True if an error text says the prompt does not fit the context window."""
    return _says(text, OVERFLOW_PATTERNS)


def is_tools_refused(text: str) -> bool:
    """Return True if an error text says the server takes no tools for this model."""
    return _says(text, TOOLS_REFUSED_PATTERNS)


def is_null_content_refused(text: str) -> bool:
    """Return True if an error text says an assistant message's null content is refused."""
    return _says(text, NULL_CONTENT_REFUSED_PATTERNS) or bool(
        _LLAMA_CPP_PYTHON_NULL.search(text.lower())
    )


def summary_failure(exc: BaseException) -> str:
    """Say why the model's summary failed, in words for the user (and the log).

    pydantic-ai's text for a summary cut off at the length limit tells the user to raise a
    `max_tokens` setting they do not have: it is said plainly instead.
    """
    from pydantic_ai import exceptions as pe

    if any(isinstance(item, pe.OutputTokenLimitExceeded) for item in _chain(exc)):
        return (
            "its summary reached the server's length limit before it was complete (a full "
            "context window, or a model that kept writing)"
        )
    return classify(exc).message


_SCRUB = Redactor()


def classify(exc: BaseException) -> ModelFault:
    """Classify what a model request raised; a server's `x-should-retry` has the last word.

    OpenAI (and gateways that copy it) send `x-should-retry: true|false` to say whether
    the same request may succeed again, whatever the status: it is followed.
    """
    fault = _classify(exc)
    # Its words reach the log, the editor and stderr: a URL's password, a token a 401 body
    # quotes, never do.
    fault = replace(
        fault, message=_SCRUB.scrub_text(fault.message), detail=_SCRUB.scrub_text(fault.detail)
    )
    headers = getattr(exc, "headers", None)
    said = headers.get("x-should-retry", "").strip().lower() if isinstance(headers, dict) else ""
    if said == "false" and fault.retryable:
        return replace(
            fault, retryable=False, message=f"{fault.message} (not retried: the server said so)"
        )
    if said == "true" and not fault.retryable and fault.kind not in _HEALED:
        return replace(fault, retryable=True)
    return fault


def _classify(exc: BaseException) -> ModelFault:  # noqa: C901 - one decision table
    from pydantic_ai import exceptions as pe

    # The HTTP client (~3 MB) is loaded with the model, at the first chat, not at start-up.
    from .transport import CorruptChunkError, EmptyStreamError, StreamCutError, StreamStallError
    from .truncation import PromptCutError

    chain = _chain(exc)
    for item in chain:
        if isinstance(item, RunawayTurnError):
            return _runaway(item)
        if isinstance(item, PromptCutError):
            return ModelFault("truncated", str(item), False, window=item.counted, detail=str(item))
        if isinstance(item, StreamStallError):
            return ModelFault("stall", str(item), True)
        if isinstance(item, CorruptChunkError):
            return ModelFault("corrupt", str(item), True)
        if isinstance(item, EmptyStreamError):
            return ModelFault("empty", "the model's stream ended without sending anything", True)
        if isinstance(item, StreamCutError):
            return ModelFault(
                "cut", "the answer was incomplete: the model's stream was cut short", True
            )
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    text = f"{_detail(exc)} {_body_text(getattr(exc, 'body', None))}"
    if status in (None, 400, 404, 422, 500) and is_tools_refused(text):
        return ModelFault(
            "no-tools",
            f"the model server does not take tools for this model ({_detail(exc)})",
            False,
            status=status,
            detail=_detail(exc),
        )
    if status in (None, 400, 422, 500) and is_null_content_refused(text):
        return ModelFault(
            "null-content",
            "the model server refuses a tool call without text in the history "
            f"({_detail(exc)[:200]})",
            False,
            status=status,
            detail=_detail(exc),
        )
    overflow = isinstance(exc, pe.ModelContextWindowExceededError) or (
        status in (None, 400, 413, 422, 500) and is_overflow_text(text)
    )
    if overflow:
        return ModelFault(
            "overflow",
            f"the conversation no longer fits the model's context window ({_detail(exc)})",
            False,
            window=overflow_window(text),
            status=status,
            detail=_detail(exc),
        )
    if isinstance(exc, pe.UnexpectedModelBehavior) and (misuse := _TOOL_RETRIES.search(str(exc))):
        # The same request would go the same way: a turn for the user to rephrase, or another
        # model. The tool's last error is the exception's cause.
        cause = exc.__cause__
        return ModelFault(
            "tool-misuse",
            f"the model called {misuse.group(1)} {int(misuse.group(2)) + 1} times with "
            "arguments that did not work",
            False,
            detail=" ".join(str(cause).split())[:300] if cause is not None else "",
        )
    if isinstance(exc, pe.UnexpectedModelBehavior) and "ended without content" in str(exc):
        return ModelFault("empty", "the model's stream ended without content", True)
    retry_after = getattr(exc, "retry_after", None)
    retry_after = float(retry_after) if isinstance(retry_after, int | float) else None
    if status is not None:
        detail = _detail(exc)
        if status in NEVER_RETRIED or isinstance(exc, pe.ModelQuotaExceededError):
            return ModelFault("rejected", f"HTTP {status}: {detail}", False, status=status)
        if status == 429:
            return ModelFault(
                "rate-limit", f"rate limited (HTTP 429): {detail}", True, retry_after, status=status
            )
        if status >= 500 or status == 408:
            return ModelFault(
                "server",
                f"server error (HTTP {status}): {detail}",
                True,
                retry_after,
                status=status,
            )
        return ModelFault("rejected", f"HTTP {status}: {detail}", False, status=status)
    if any(isinstance(item, TimeoutError) for item in chain) or isinstance(
        exc, pe.ModelTimeoutError | pe.ModelRequestTimeout
    ):
        return ModelFault("stall", NO_ANSWER_IN_TIME, True)
    if any(type(item).__name__ in ("ConnectError", "ConnectTimeout") for item in chain):
        cause = next((item for item in reversed(chain) if isinstance(item, OSError)), None)
        reason = str(cause or _detail(exc))
        if isinstance(cause, ConnectionError) and cause.errno:  # "Connect call failed": refused
            reason = os.strerror(cause.errno)
        return ModelFault("unreachable", f"could not connect to the model server ({reason})", True)
    if isinstance(exc, pe.ModelConnectionError) or any(
        type(item).__name__ in ("ReadTimeout", "ReadError", "RemoteProtocolError") for item in chain
    ):
        if any("Timeout" in type(item).__name__ for item in chain):
            return ModelFault("stall", NO_ANSWER_IN_TIME, True)
        return ModelFault(
            "connection", f"the connection to the model was lost ({_detail(exc)})", True
        )
    if isinstance(exc, pe.ModelAPIError) and "decode" in str(exc).lower():
        return ModelFault("corrupt", f"the model sent a malformed chunk ({_detail(exc)})", True)
    if isinstance(exc, pe.ModelAPIError):
        return ModelFault("other", _detail(exc), False)
    return ModelFault("other", str(exc) or type(exc).__name__, False)


def backoff(attempt: int, retry_after: float | None, rng: random.Random | None = None) -> float:
    """Seconds to wait before attempt `attempt + 1`: Retry-After if given, else jittered 2^n."""
    if retry_after is not None:
        return max(0.0, retry_after)
    base = min(BACKOFF_CAP, BACKOFF_BASE * 2.0 ** (attempt - 1))
    draw = rng.random() if rng is not None else random.random()  # noqa: S311 - jitter
    return base * (0.75 + 0.5 * draw)
