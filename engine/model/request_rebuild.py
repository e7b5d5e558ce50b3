"""A step's request rebuilt from the log: its messages, then its body from the real agent.

The body is made by the agent the chat uses (`build.build_agent`) and captured by a
transport that never sends it (`request_digest` says what is rebuilt, and how).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from session.derive.history import build_history
from session.derive.messages import cut_tool_results
from session.events import (
    AssistantMessageEvent,
    Event,
    RequestHeaderEvent,
    StepRetryEvent,
    StepStartEvent,
    TurnStartEvent,
)

from .request_digest import REBUILD_BASE_URL, canonical, digest


@dataclass
class Header:
    """The `request/header` of a step: the model and the instructions it was sent."""

    model: str
    instructions: str


def _header(events: Sequence[Event], index: int) -> Header:
    """Return the header recorded right after the `step/start` at `index`."""
    for event in events[index + 1 :]:
        if isinstance(event, StepStartEvent):
            break
        if isinstance(event, RequestHeaderEvent):
            data = event.data
            text = getattr(data, "system_prompt", None)
            sha = getattr(data, "system_prompt_sha256", None)
            if text is None:  # recorded once: found in an earlier header of the same text
                for earlier in reversed(events[:index]):
                    if (
                        isinstance(earlier, RequestHeaderEvent)
                        and getattr(earlier.data, "system_prompt_sha256", None) == sha
                        and getattr(earlier.data, "system_prompt", None) is not None
                    ):
                        text = earlier.data.system_prompt
                        break
            if text is None:
                raise ValueError("the instructions it was sent are not in the log")
            return Header(str(getattr(data, "model", "") or ""), str(text))
    raise ValueError("its request/header is missing")


def request_messages(
    events: Sequence[Event], index: int, facts: dict[str, Any]
) -> tuple[list[dict[str, Any]], Header]:
    """Return the messages (pydantic-ai JSON) the step at `index` sent, and its header."""
    target = events[index]
    turn_start = None
    for i in range(index - 1, -1, -1):
        event = events[i]
        if isinstance(event, TurnStartEvent) and event.turn == target.turn:
            turn_start = i
            break
    if turn_start is None:
        raise ValueError("its turn/start is missing")
    retry = None
    for i in range(index - 1, turn_start, -1):
        if isinstance(events[i], StepRetryEvent):
            retry = i
            break
    # A retry after a request was sent resends it: the history then is the log up to the
    # retry (the turn's requests in it). Else the attempt sent the prompt afresh, with the
    # history the turn began with.
    resent = retry is not None and any(
        isinstance(e, StepStartEvent) for e in events[turn_start + 1 : retry]
    )
    base = events[: retry + 1] if resent and retry is not None else events[:turn_start]
    history = build_history(base).messages(facts.get("history_tokens"))
    limit = facts.get("result_limit")
    if limit is not None:
        history, _ = cut_tool_results(history, limit)
    attempt: list[dict[str, Any]] = []
    first = (retry if retry is not None else turn_start) + 1
    for event in events[first : index + 1]:
        if isinstance(event, StepStartEvent):
            attempt.extend(event.data.messages)
        elif isinstance(event, AssistantMessageEvent):
            attempt.append(event.data.message)
    messages = [*history, *attempt]
    if not messages or messages[-1].get("kind") != "request":
        raise ValueError("the messages derived from the log do not end with a request")
    return messages, _header(events, index)


async def send_captured(
    messages: list[dict[str, Any]], header: Header, facts: dict[str, Any]
) -> bytes:
    """Return the body the chat's agent sends for `messages`, captured instead of sent."""
    import httpx2
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_ai.settings import ModelSettings

    from ..config import ModelConfig
    from .build import Wire, build_agent
    from .quirks import ServerQuirks

    captured: list[bytes] = []

    class _Refused(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            raise httpx2.ConnectError("a rebuilt request is never sent")

    config = ModelConfig(
        name=header.model,
        base_url=None if facts.get("openai") else REBUILD_BASE_URL,
        api_key="none",
        max_retries=0,
    )
    quirks = ServerQuirks(blank_tool_text=bool(facts.get("blank_tool_text")))
    wire = Wire(on_send=captured.append, inner=_Refused(), instructions=header.instructions)
    agent = build_agent(config, tools=facts.get("tools", True), quirks=quirks, wire=wire)
    history = ModelMessagesTypeAdapter.validate_python(messages)
    settings = ModelSettings()
    if facts.get("max_tokens") is not None:
        settings["max_tokens"] = facts["max_tokens"]
    stream = facts.get("stream", True)
    failure = "no request was made"
    try:
        async with agent.iter(None, message_history=history, model_settings=settings) as run:
            async for node in run:
                if stream and Agent.is_model_request_node(node):
                    async with node.stream(run.ctx) as events:
                        async for _ in events:
                            pass
                if captured:
                    break
    except Exception as exc:  # the refused send, after the body was captured
        failure = str(exc)
    if not captured:
        raise ValueError(f"the agent sent no request for these messages ({failure})")
    return captured[0]


@dataclass
class Rebuilt:
    """One step's request, rebuilt from the log, and how it compares with what was sent."""

    turn: int
    step: int
    recorded: str | None  # the digest recorded when it was sent (None: none recorded)
    body: Any = None  # the rebuilt request body (scrubbed)
    sha256: str | None = None
    problem: str | None = None  # why it could not be rebuilt
    unchecked: bool = False  # not rebuildable by design (MCP tools): not a mismatch

    @property
    def matches(self) -> bool:
        """True if the rebuilt request's digest is the one recorded."""
        return self.recorded is not None and self.sha256 == self.recorded


def proved_steps(events: Sequence[Event]) -> list[int]:
    """Return the indexes of the `step/start` events that recorded a request digest."""
    return [
        i
        for i, e in enumerate(events)
        if isinstance(e, StepStartEvent) and e.data.request_sha256 is not None
    ]


def find_step(events: Sequence[Event], turn: int, step: int) -> int | None:
    """Return the index of turn `turn`'s `step/start` number `step` (None: there is none)."""
    for i, e in enumerate(events):
        if isinstance(e, StepStartEvent) and e.turn == turn and e.step == step:
            return i
    return None


async def rebuild(events: Sequence[Event], index: int) -> Rebuilt:
    """Rebuild the request of the `step/start` at `events[index]` (see the module doc)."""
    start = events[index]
    data = start.data
    result = Rebuilt(start.turn or 0, start.step or 0, getattr(data, "request_sha256", None))
    facts = getattr(data, "request", None) or {}
    if result.recorded is None:
        result.problem = "no digest was recorded for this request"
        return result
    if facts.get("mcp"):
        result.problem = "not checked: it offered MCP servers' tools, which the log does not hold"
        result.unchecked = True
        return result
    try:
        messages, header = request_messages(events, index, facts)
        body = await send_captured(messages, header, facts)
    except ValueError as exc:
        result.problem = str(exc)
        return result
    result.body = canonical(body)
    result.sha256 = digest(result.body)
    return result
