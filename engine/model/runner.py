"""One streamed, fully recorded attempt at a turn with the pydantic-ai agent; summaries.

pydantic-ai is imported when the first chat builds the agent, never at start-up.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from session.compaction import SUMMARY_INSTRUCTIONS, CompactionSummary, history_tokens
from session.derive.messages import cut_tool_results, estimate_tokens
from session.derive.model_messages import ModelMessageCache
from session.lifecycle import TurnRecorder

from ..config import ModelConfig
from .limits import content_bytes, reply_too_large
from .mcp import McpServers
from .quirks import ServerQuirks, loosen_tool_args
from .request_digest import SentBodies, resumed, step_proof
from .request_digest import dump_message as _dump
from .request_digest import jsonable as _jsonable
from .tools import ToolDeps
from .truncation import CutWatch
from .usage import UsageTally

if TYPE_CHECKING:
    from pydantic_ai import Agent
    from pydantic_ai.settings import ModelSettings

    from .props import ServerProps
    from .server_facts import ServerFacts

SUMMARY_RETRY_AFTER = 600.0  # seconds before a model that failed to summarise is asked again


@dataclass
class TurnResult:
    """How a turn (or one attempt at it) ended."""

    text: str
    usage: dict[str, Any]
    finish_reason: str | None = None  # of the last answer: "length" when the server cut it
    note: str | None = None  # why the reply was stopped here (`model.maxReplyBytes`)


class TurnSink(Protocol):
    """Where live turn activity is shown (an edge's notifications)."""

    streamed: bool  # text of the current attempt reached the client (a retry must say so)

    def delta(self, text: str) -> None:
        """Stream a text delta."""
        ...

    def tool(self, name: str, args: Any, status: str, call_id: str) -> None:
        """Show tool activity (`call_id` ties a call's start to its end)."""
        ...

    def retry(self, attempt: int, reason: str) -> None:
        """Say that the text shown of this turn is dropped: attempt `attempt` starts over."""
        ...

    def thinking(self) -> None:
        """Show that the model is thinking (a reasoning model, before its answer)."""
        ...

    def end_thinking(self) -> None:
        """Stop showing that the model thinks: the turn ended (perhaps while it thought)."""
        ...


class ChatRunner:
    """Builds the agent once per model config and runs turns with it."""

    def __init__(self, model: ModelConfig, mcp: McpServers | None = None) -> None:
        self.model = model
        # The MCP servers whose tools are offered with ours (shared with a runner made
        # after this one for new settings: they outlive it, `McpServers.aclose` ends them).
        self.mcp = mcp or McpServers()
        self._agent: Agent[ToolDeps, str] | None = None
        self.summary_failed_at: float | None = None
        # The history as pydantic-ai objects: each turn converts only its new messages.
        self._history = ModelMessageCache()
        self.cuts = CutWatch()  # a server that cuts prompts silently (Ollama)
        self.tools = True  # False once the server refused the tools for this model
        self.props_read = False  # llama-server was asked what it is (`read_server_props`)
        self.quirks = ServerQuirks()  # what else it refused, shared by every agent built
        self.sent = SentBodies()  # the chat agent's last request body, for its digest
        # Bytes of an earlier tool result the model is sent at most (None: all of it).
        self.result_limit: int | None = None
        self._summary_tools = True  # the same, found by a summary
        self._summarizers: dict[tuple[str, bool], Agent[None, CompactionSummary]] = {}

    async def aclose(self) -> None:
        """Stop the MCP servers this runner started (idempotent)."""
        await self.mcp.aclose()

    def without_tools(self) -> None:
        """Chat without tools from now on: the server refused them for this model."""
        self.tools = False
        self._agent = None

    async def read_server_props(self) -> ServerProps | None:
        """Read llama-server's `/props` once, after the first answer (None: not llama-server).

        Only a server that said it is llama.cpp (its `Server` header) is asked (`props`).
        """
        from .props import LLAMA_SERVER, read_props

        if self.props_read:
            return None
        self.props_read = True  # after the first answer: the server has said what it is
        url = self.model.base_url
        if self.quirks.server != LLAMA_SERVER or url is None:
            return None
        return await read_props(url, self.model.api_key)

    async def learn_server(self) -> ServerFacts:
        """Ask the model server its window and tools (`server_facts`; once per runner).

        Not asked: OpenAI itself (no base URL), which states no window.
        """
        from .server_facts import ServerFacts, learn_server

        url = self.model.base_url
        if url is None:
            return ServerFacts()
        facts = await learn_server(url, self.model.api_key, self.model.name, probe_tools=self.tools)
        if facts.kind == "llama-server":
            self.props_read = True  # its /props were read: not again after the first answer
        return facts

    def _build(self) -> Agent[ToolDeps, str]:
        from .build import Wire, build_agent

        wire = Wire(on_send=self.sent.keep)
        return build_agent(self.model, tools=self.tools, quirks=self.quirks, wire=wire)

    @property
    def can_summarize(self) -> bool:
        """Return False for a while after the model failed to summarise.

        It may not produce structured output at all (small local models): callers then use
        the extractive summary at once instead of waiting for another failure.
        """
        failed = self.summary_failed_at
        return failed is None or time.monotonic() - failed > SUMMARY_RETRY_AFTER

    async def summarize(
        self, transcript: str, instructions: str = SUMMARY_INSTRUCTIONS
    ) -> CompactionSummary:
        """Summarise turns with the configured model (structured output), streamed.

        Streamed, so that cancelling it (a chat giving a one-slot server's slot back) closes
        a stream, which stops the generation: llama-cpp-python finishes a request answered
        in one piece even after its client left. The first token may wait for a long
        transcript to be read, so it gets the timeout of an answer in one piece.
        """
        from .build import build_summarizer
        from .faults import classify

        prompt = f"Conversation to summarise:\n\n{transcript}"
        while True:
            tools = self.tools and self._summary_tools
            summarizer = self._summarizers.get((instructions, tools))
            if summarizer is None:  # one per kind, with its HTTP client's connections
                summarizer = build_summarizer(
                    self.model, instructions, tools=tools, quirks=self.quirks
                )
                self._summarizers[(instructions, tools)] = summarizer
            try:
                settings: ModelSettings = {"timeout": self.non_streamed_timeout}
                async with summarizer.run_stream(prompt, model_settings=settings) as result:
                    output = await result.get_output()
            except Exception as exc:
                kind = classify(exc).kind
                if tools and kind in _SUMMARY_AS_TEXT:
                    # "no-tools": the chat finds out (and says so) itself. The others: the
                    # server or the model may manage the summary as JSON text instead.
                    self._summary_tools = False
                    continue
                self.summary_failed_at = time.monotonic()
                raise
            self.summary_failed_at = None
            return output

    @property
    def non_streamed_timeout(self) -> float:
        """Seconds a request answered in one piece may take (no data flows until it ends)."""
        return max(self.model.first_token_timeout, 5 * self.model.stream_timeout)

    def prepare_history(self, history: list[dict[str, Any]]) -> None:
        """Convert `history` ahead of the next turn (idle time), which then reuses it."""
        self._history.convert(history)

    @property
    def agent(self) -> Agent[ToolDeps, str]:
        """Return the agent, building it (and importing pydantic-ai) on first use."""
        if self._agent is None:
            self._agent = self._build()
        return self._agent

    async def run_attempt(
        self,
        deps: ToolDeps,
        recorder: TurnRecorder,
        prompt: str | Sequence[str] | None,
        history: list[dict[str, Any]],
        sink: TurnSink,
        *,
        stream: bool = True,
    ) -> TurnResult:
        """Run one attempt at a turn, recording every step as it happens.

        `prompt` None continues from `history`, whose last message is the request to send
        again (after `TurnRecorder.retry_step`). With `stream` False every request of the
        attempt is answered in one piece, each sent to `sink` as one delta: a server whose
        stream came back empty is asked again that way, which also gets its real error, and
        it may be one that cannot stream a tool call at all (llama-cpp-python's
        chatml-function-calling), so the requests after the tool results are too.
        """
        from pydantic_ai import Agent
        from pydantic_ai.exceptions import UsageLimitExceeded
        from pydantic_ai.messages import (
            FunctionToolCallEvent,
            FunctionToolResultEvent,
            PartDeltaEvent,
            PartStartEvent,
            TextPart,
            TextPartDelta,
            ThinkingPart,
            ThinkingPartDelta,
        )
        from pydantic_ai.settings import ModelSettings
        from pydantic_ai.usage import UsageLimits

        from .build import REQUEST_LIMIT
        from .faults import RunawayTurnError
        from .transport import ReplyTooLargeError

        agent = self.agent
        toolsets = self.mcp.toolsets() if self.tools else []  # no tools for the model: none
        mcp = bool(toolsets)
        self.sent.take()  # what an earlier attempt sent is not this one's
        text_parts: list[str] = []
        finish: str | None = None
        model_name = self.model.name or ""
        cut = 0
        if self.result_limit is not None:
            history, cut = cut_tool_results(history, self.result_limit)
        settings_recorded = {"tool_results_cut_to": self.result_limit} if cut else {}
        messages = self._history.convert(history)
        tally = UsageTally()
        sent_tokens = 0  # this attempt's messages; the history is added only if needed
        settings = ModelSettings() if stream else ModelSettings(timeout=self.non_streamed_timeout)
        if self.model.max_output_tokens is not None:  # else the server's own limit
            settings["max_tokens"] = self.model.max_output_tokens
        instructions = ""

        @functools.cache
        def history_size() -> int:  # the same for every request of the attempt
            return history_tokens(history)

        def sum_tokens(sent: int) -> int:
            return history_size() + sent

        def record_request(request: Any) -> None:
            nonlocal sent_tokens, instructions
            message = _dump(request)
            instructions = message.pop("instructions", None) or ""
            proof = step_proof(self, deps.lifecycle, self.model.max_output_tokens, stream, mcp)
            recorded = recorder.start_step([message], proof)
            sent_tokens += history_tokens(getattr(recorded.data, "messages", []))
            sent_tokens += len(instructions) // 4
            recorder.request_header(model_name, settings_recorded, instructions)

        in_one_piece = not stream
        cap = self.model.max_reply_bytes
        step_text: list[str] = []  # this request's streamed text, kept if the reply is stopped
        called: dict[str, int] = {}  # tool name -> calls in this attempt
        unanswered: Any = None  # a request asked in one piece, not yet answered
        try:
            async with agent.iter(
                prompt,
                message_history=messages,
                deps=deps,
                model_settings=settings,
                usage_limits=UsageLimits(request_limit=REQUEST_LIMIT),
                toolsets=toolsets or None,
            ) as run:
                async for node in run:
                    if Agent.is_model_request_node(node):
                        if in_one_piece:
                            unanswered = node  # sent when the run moves on
                            continue
                        async with node.stream(run.ctx) as model_stream:
                            events = aiter(model_stream)
                            try:  # its first event (or failure): the request was sent
                                first = await anext(events, None)
                            finally:
                                record_request(node.request)  # prepared now: instructions set
                            step_text = []
                            size = 0
                            async for event in resumed(first, events):
                                size += content_bytes(event)
                                if size > cap:  # the rest is not read: the stream is closed
                                    raise ReplyTooLargeError(cap)
                                delta = ""
                                if isinstance(event, PartStartEvent) and isinstance(
                                    event.part, TextPart
                                ):
                                    delta = event.part.content
                                elif isinstance(event, PartDeltaEvent) and isinstance(
                                    event.delta, TextPartDelta
                                ):
                                    delta = event.delta.content_delta
                                elif isinstance(event, PartStartEvent) and isinstance(
                                    event.part, ThinkingPart
                                ):
                                    sink.thinking()  # the thinking is recorded with the message
                                elif isinstance(event, PartDeltaEvent) and isinstance(
                                    event.delta, ThinkingPartDelta
                                ):
                                    sink.thinking()
                                if delta:
                                    step_text.append(delta)
                                    recorder.chunk(delta)
                                    sink.delta(delta)
                    elif Agent.is_call_tools_node(node):
                        response = node.model_response
                        # Raw newlines in a string: repaired here, not in pydantic-ai's
                        # before_tool_validate hook, which runs after the message below is
                        # recorded (the log would keep the arguments no parser reads).
                        loosen_tool_args(response.parts)
                        if deps.budget is not None:  # before anything runs or is recorded
                            parts = list(response.parts)
                            deps.budget.review(parts)
                            response.parts = parts
                        dumped = _dump(response)
                        text_parts = [p.content for p in response.parts if isinstance(p, TextPart)]
                        finish = response.finish_reason
                        if in_one_piece:
                            unanswered = None
                            record_request(run.all_messages()[-2])
                            if "".join(text_parts):
                                sink.delta("".join(text_parts))
                        step_usage = tally.add(
                            response.usage, functools.partial(sum_tokens, sent_tokens), dumped
                        )
                        if not step_usage.get("estimated"):  # raises before any tool runs
                            self.cuts.check(sum_tokens(sent_tokens), step_usage["input_tokens"])
                        recorder.assistant_message(dumped)
                        sent_tokens -= len(instructions) // 4
                        sent_tokens += estimate_tokens(dumped)
                        calls: dict[str, tuple[str, Any]] = {}
                        async with node.stream(run.ctx) as tool_stream:
                            async for event in tool_stream:
                                if isinstance(event, FunctionToolCallEvent):
                                    part = event.part
                                    args = part.args_as_dict()
                                    calls[part.tool_call_id] = (part.tool_name, args)
                                    called[part.tool_name] = called.get(part.tool_name, 0) + 1
                                    recorder.tool_call(part.tool_call_id, part.tool_name, args)
                                    sink.tool(part.tool_name, args, "started", part.tool_call_id)
                                elif isinstance(event, FunctionToolResultEvent):
                                    result = event.part
                                    failed = getattr(result, "part_kind", "") == "retry-prompt" or (
                                        getattr(result, "outcome", "success") != "success"
                                    )
                                    name, args = calls.get(
                                        result.tool_call_id, (result.tool_name, {})
                                    )
                                    recorder.tool_result(
                                        result.tool_call_id,
                                        name or "",
                                        _jsonable(getattr(result, "content", None)),
                                        is_error=failed,
                                    )
                                    sink.tool(
                                        name or "",
                                        args,
                                        "failed" if failed else "done",
                                        result.tool_call_id,
                                    )
                        recorder.end_step(step_usage)  # a step brackets its tool calls and results
        except UsageLimitExceeded as exc:  # checked before a request is sent: none was
            raise RunawayTurnError(REQUEST_LIMIT, called) from exc
        except BaseException as exc:
            if unanswered is not None:  # it failed: the log still says what was sent
                record_request(unanswered.request)
            stopped = reply_too_large(exc)
            if stopped is None:
                raise
            # Kept as far as it came, as a reply the server cut at its length limit.
            from pydantic_ai.messages import ModelResponse

            text = "".join(step_text) if not in_one_piece else ""
            response = ModelResponse(
                parts=[TextPart(content=text)] if text else [],
                model_name=model_name,
                finish_reason="length",
            )
            dumped = _dump(response)
            step_usage = tally.add(None, functools.partial(sum_tokens, sent_tokens), dumped)
            recorder.assistant_message(dumped)
            recorder.end_step(step_usage)
            return TurnResult(text, tally.result(), "length", note=str(stopped))
        return TurnResult("".join(text_parts), tally.result(), finish)


# Faults after which a summary asked for as a tool call is asked for as JSON text: the server
# takes no tools; it broke off (llama-cpp-python's function calling asserts on the forced
# tool choice of structured output: an empty stream); or the model answered without the
# tool call (small models). Not a stall, a rate limit, a server error or no server at all.
_SUMMARY_AS_TEXT = frozenset({"no-tools", "connection", "cut", "empty", "other"})
