"""Builds the pydantic-ai agent and its tools (imported lazily, on the first chat)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("PYDANTIC_AI_NO_BANNER", "1")

import httpx2  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from pydantic_ai import Agent, ModelRetry, PromptedOutput, RunContext  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.profiles.openai import OpenAIModelProfile  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from session.compaction import SUMMARY_INSTRUCTIONS, CompactionSummary  # noqa: E402

from ..config import ModelConfig  # noqa: E402
from .limits import with_note  # noqa: E402
from .quirks import ServerQuirks, loose_json  # noqa: E402
from .tools import (  # noqa: E402
    BASE_INSTRUCTIONS,
    NO_TOOLS_INSTRUCTIONS,
    ToolDeps,
    ToolError,
    list_files,
    read_file,
    write_file,
)
from .transport import build_http_client  # noqa: E402

# How often in a row a tool may fail (bad arguments, a missing file) before the turn stops:
# each failure goes back to the model with the error, and small local models often need
# two or three tries to get a path right.
TOOL_RETRIES = 3
REQUEST_LIMIT = 50  # model requests in one turn (pydantic-ai's default, set here to name it)


def _model(
    config: ModelConfig, quirks: ServerQuirks | None, wire: Wire | None = None
) -> OpenAIChatModel:
    # Our own HTTP client (read timeout, streams that must finish, the server's quirks) and
    # no SDK retries: the chat loop retries, so it can tell the client and keep the log honest.
    client = AsyncOpenAI(
        base_url=config.base_url,
        api_key=config.api_key or "none",
        http_client=build_http_client(
            config.stream_timeout,
            config.first_token_timeout,
            quirks,
            config.max_reply_bytes,
            inner=wire.inner if wire else None,
            on_send=wire.on_send if wire else None,
        ),
        max_retries=0,
    )
    # `max_tokens` as such to a server of our own (llama-cpp-python reads no other name);
    # OpenAI's own API takes only `max_completion_tokens` for its reasoning models.
    legacy = OpenAIModelProfile(openai_chat_supports_max_completion_tokens=False)
    return OpenAIChatModel(
        config.name or "",
        provider=OpenAIProvider(openai_client=client),
        profile=legacy if config.base_url else None,
    )


class LooseOutput(AbstractCapability[Any]):
    """Structured output whose JSON strings hold raw newlines is read (`quirks.loose_json`).

    A summary is the text most likely to span lines, and small local models write its line
    breaks into the JSON as they are; strict JSON refused it, and every such summary fell
    back to the extractive one.
    """

    async def before_output_validate(
        self, ctx: RunContext[Any], *, output_context: Any, output: Any
    ) -> Any:
        """Re-encode raw output that only raw control characters kept from being JSON."""
        if isinstance(output, str) and not ctx.partial_output:
            return loose_json(output) or output
        return output


class ToolLimits(AbstractCapability[ToolDeps]):
    """Answers the calls `limits.CallBudget.review` refused, without running them."""

    async def wrap_tool_validate(
        self,
        ctx: RunContext[ToolDeps],
        *,
        call: Any,
        tool_def: Any,
        args: Any,
        handler: Any,
    ) -> Any:
        """Skip validating a refused call's arguments (they were replaced by a note)."""
        budget = ctx.deps.budget
        if budget is not None and call.tool_call_id in budget.refused:
            return {}
        return await handler(args)

    async def wrap_tool_execute(
        self,
        ctx: RunContext[ToolDeps],
        *,
        call: Any,
        tool_def: Any,
        args: Any,
        handler: Any,
    ) -> Any:
        """Answer a refused call with its refusal; add the budget's note to a result."""
        budget = ctx.deps.budget
        if budget is None:
            return await handler(args)
        note = budget.notes.get(call.tool_call_id)
        refusal = budget.refused.get(call.tool_call_id)
        result = refusal if refusal is not None else await handler(args)
        return with_note(result, note) if note else result


def build_summarizer(
    config: ModelConfig,
    instructions: str = SUMMARY_INSTRUCTIONS,
    *,
    tools: bool = True,
    quirks: ServerQuirks | None = None,
) -> Agent[None, CompactionSummary]:
    """Return an agent that summarises turns with structured output.

    The output is a tool call; for a model the server takes no tools for, the schema is in
    the prompt and the answer's text is the JSON (pydantic-ai's prompted output).
    """
    output = CompactionSummary if tools else PromptedOutput(CompactionSummary)
    return Agent(
        _model(config, quirks),
        output_type=output,
        instructions=instructions,
        capabilities=[LooseOutput()],
    )


@dataclass(frozen=True)
class Wire:
    """How an agent's requests leave: `on_send` sees each body; `inner` replaces the network.

    A rebuilt request (`request_digest`) is captured by `inner` with `instructions` as they
    were recorded, instead of the ones the session has now.
    """

    on_send: Callable[[bytes], None] | None = None
    inner: httpx2.AsyncBaseTransport | None = None
    instructions: str | None = None


def build_agent(
    config: ModelConfig,
    *,
    tools: bool = True,
    quirks: ServerQuirks | None = None,
    wire: Wire | None = None,
) -> Agent[ToolDeps, str]:
    """Return an agent for an OpenAI-compatible model with the workspace tools (or none)."""
    model = _model(config, quirks, wire)
    base = BASE_INSTRUCTIONS if tools else NO_TOOLS_INSTRUCTIONS
    fixed = wire.instructions if wire else None

    def instructions(ctx: RunContext[ToolDeps]) -> str:
        if fixed is not None:
            return fixed
        # Re-evaluated on every run: the resume context reaches the model on every turn
        # after a resume and is gone after a reset.
        context = ctx.deps.lifecycle.resume_context
        return f"{base}\n\n{context}" if context else base

    agent: Agent[ToolDeps, str] = Agent(
        model,
        deps_type=ToolDeps,
        output_type=str,
        instructions=instructions,
        retries=TOOL_RETRIES,
        capabilities=[ToolLimits()],
    )
    if not tools:
        return agent

    @agent.tool(name="read_file")
    async def _read(ctx: RunContext[ToolDeps], path: str, start_line: int = 1) -> str:
        """Read a text file; `path` is relative to the workspace root.

        A long file comes a part at a time: `start_line` (1-based) reads on from that line.
        """
        try:
            return await read_file(ctx.deps, path, start_line)
        except ToolError as exc:
            raise ModelRetry(str(exc)) from None

    @agent.tool(name="list_files")
    def _list(ctx: RunContext[ToolDeps], directory: str = ".") -> list[str]:
        """List a directory of the workspace (directories end with '/')."""
        try:
            return list_files(ctx.deps, directory)
        except ToolError as exc:
            raise ModelRetry(str(exc)) from None

    @agent.tool(name="write_file")
    async def _write(ctx: RunContext[ToolDeps], path: str, content: str) -> str:
        """Create or replace a workspace file with `content`."""
        try:
            return await write_file(ctx.deps, path, content, ctx.tool_call_id)
        except ToolError as exc:
            raise ModelRetry(str(exc)) from None

    @agent.tool(name="record_decision")
    def _decide(ctx: RunContext[ToolDeps], decision: str) -> str:
        """Record a key decision so it survives into later sessions."""
        ctx.deps.lifecycle.record_decision(decision)
        return "recorded"

    @agent.tool(name="set_phase")
    def _phase(ctx: RunContext[ToolDeps], phase: str) -> str:
        """Set the conversation phase: design, code or deploy (none clears it)."""
        value = phase.strip().lower()
        try:
            ctx.deps.lifecycle.set_phase(None if value in ("", "none", "null") else value)
        except ValueError as exc:
            raise ModelRetry(str(exc)) from None
        return f"phase set to {value}"

    return agent
