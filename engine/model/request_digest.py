"""Every request proved: the digest of the HTTP body sent, and that request rebuilt from the log.

When the chat agent sends a request, its transport hands the body as it goes on the wire
(after `quirks`' changes) to the runner's `SentBodies`; the runner records its digest in the
step's `step/start` (`request_sha256`), with the few facts a rebuild needs that the messages
and the `request/header` do not hold (`request`: streamed or not, `max_tokens`, tools on or
off, the history budget and the cut of earlier tool results, `quirks.blank_tool_text`).

The digest is SHA-256 over canonical JSON (keys sorted, separators `,` `:`, UTF-8) of the
body with every string scrubbed by the session's redactor, the way the log scrubs what it
writes: a secret sent to the model is in neither the log nor the digest, and a rebuilt
request (from the redacted log) scrubs to the same text.

`request_rebuild.rebuild` derives from the log the pydantic-ai messages the request carried:
the history as the runner was given it (the log before the turn, or, for a retry that
resent a request, before its `step/retry`, trimmed to the recorded budget, earlier tool
results cut as recorded), then the attempt's own requests and responses up to the step;
then it runs the real agent (`build.build_agent`: our `OpenAIChatModel`, the same tools and
settings, the recorded instructions) on a transport that captures the body instead of sending it.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from session.lifecycle import SessionLifecycle
    from session.redaction import Redactor

    from ..config import ModelConfig
    from .quirks import ServerQuirks

REBUILD_BASE_URL = "http://rebuild.invalid/v1"  # never reached: the body is captured


class SentBodies:
    """The last request body the chat agent's transport sent (taken when it is recorded)."""

    def __init__(self) -> None:
        self.body: bytes | None = None

    def keep(self, body: bytes) -> None:
        """Keep `body` (the transport's `on_send`)."""
        self.body = body

    def take(self) -> bytes | None:
        """Return the body kept since the last take (None: nothing was sent)."""
        body, self.body = self.body, None
        return body


def canonical(body: bytes, redactor: Redactor | None = None) -> Any:
    """Return a request body as JSON data, every string scrubbed of secrets."""
    from session.redaction import Redactor

    scrubber = (redactor or Redactor()).with_mode(False)
    return scrubber.scrub(json.loads(body))


def digest(value: Any) -> str:
    """Return the SHA-256 of `value` as canonical JSON."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ProvedRunner(Protocol):
    """What `step_proof` reads of the runner (`ChatRunner`): the body sent, and how it asked."""

    sent: SentBodies
    tools: bool  # False: the model is asked without tools
    result_limit: int | None  # bytes an earlier tool result is cut to
    model: ModelConfig
    quirks: ServerQuirks


def step_proof(
    runner: ProvedRunner,
    lifecycle: SessionLifecycle,
    max_tokens: int | None,
    stream: bool,
    mcp: bool,
) -> dict[str, Any]:
    """Return what a step records to prove its request: the digest and how to rebuild it."""
    body = runner.sent.take()
    if body is None or lifecycle.redactor.metadata_only:  # not sent; content not kept
        return {}
    try:
        sha = digest(canonical(body, lifecycle.redactor))
    except ValueError:  # not JSON: nothing to prove it by
        return {}
    facts: dict[str, Any] = {"stream": stream, "history_tokens": lifecycle.config.history_tokens}
    if max_tokens is not None:
        facts["max_tokens"] = max_tokens
    if not runner.tools:
        facts["tools"] = False
    if runner.result_limit is not None:
        facts["result_limit"] = runner.result_limit
    if runner.model.base_url is None:
        facts["openai"] = True
    if runner.quirks.blank_tool_text:
        facts["blank_tool_text"] = True
    if mcp:
        facts["mcp"] = True
    return {"request_sha256": sha, "request": facts}


async def resumed(first: Any, rest: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """Yield `first` (unless None: there was none), then the rest of a stream.

    The runner reads a stream's first event before it records the step: pydantic-ai may
    open the HTTP request only then, and the step records the digest of what was sent.
    """
    if first is not None:
        yield first
    async for item in rest:
        yield item


def dump_message(message: Any) -> dict[str, Any]:
    """Return a pydantic-ai message in its JSON form."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    dumped: list[dict[str, Any]] = ModelMessagesTypeAdapter.dump_python([message], mode="json")
    return dumped[0]


def jsonable(value: Any) -> Any:
    """Return `value` if JSON holds it as it is, else its text."""
    if value is None or isinstance(value, str | int | float | bool | list | dict):
        return value
    return str(value)
