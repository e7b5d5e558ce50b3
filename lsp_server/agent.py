"""The pydantic-ai agent: model config, tools, and one streamed, fully recorded turn.

pydantic-ai is imported when the first chat builds the agent, never at start-up.
"""

from __future__ import annotations

import functools
import os
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from session.checkpoints import unlink_if_hard_linked
from session.compaction import SUMMARY_INSTRUCTIONS, CompactionSummary, history_tokens
from session.derive import ModelMessageCache, estimate_tokens
from session.lifecycle import SessionLifecycle, TurnRecorder
from session.workspace import SKIPPED_DIRS, is_safe_relative_path

from .config import ModelConfig

if TYPE_CHECKING:
    from pydantic_ai import Agent
    from pydantic_ai.settings import ModelSettings

BASE_INSTRUCTIONS = (
    "You are Agent Assist, an AI assistant working inside the user's code editor on the "
    "project in the current workspace. Use the tools to read, list and write workspace "
    "files (paths are relative to the workspace root). Record important decisions with "
    "record_decision and the conversation phase (design, code, deploy) with set_phase. "
    "Be concise."
)
MAX_READ_BYTES = 256 * 1024
SUMMARY_RETRY_AFTER = 600.0  # seconds before a model that failed to summarise is asked again
MAX_LIST_ENTRIES = 500


class EditorHost(Protocol):
    """What tools need from the editor side (implemented by the language server)."""

    async def apply_file_edit(self, relative: str, content: str) -> bool:
        """Apply a whole-file edit through the editor; False if it cannot."""
        ...


@dataclass
class ToolDeps:
    """What the agent's tools act on."""

    lifecycle: SessionLifecycle
    host: EditorHost

    @property
    def root(self) -> Path:
        """Return the workspace root."""
        return self.lifecycle.workspace_root


class ToolError(Exception):
    """A tool refused; the message goes back to the model."""


def _checked_path(deps: ToolDeps, path: str) -> Path:
    relative = path.strip().removeprefix("./") or "."
    if relative != "." and not is_safe_relative_path(deps.root, relative):
        raise ToolError(f"path {path!r} is outside the workspace or not allowed")
    target = deps.root / relative
    try:
        if relative != "." and stat.S_ISLNK(os.lstat(target).st_mode):
            raise ToolError(f"{path} is a symlink; symlinks are not followed")
    except FileNotFoundError:
        pass
    return target


def read_file(deps: ToolDeps, path: str) -> str:
    """Read a UTF-8 text file of the workspace."""
    target = _checked_path(deps, path)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ToolError(f"{path} does not exist") from None
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ToolError(f"{path} is not a regular file")
        data = fh.read(MAX_READ_BYTES + 1)
    deps.lifecycle.note_assistant_file(path)
    text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
    if len(data) > MAX_READ_BYTES:
        text += f"\n[truncated: only the first {MAX_READ_BYTES} bytes are shown]"
    return text


def list_files(deps: ToolDeps, directory: str = ".") -> list[str]:
    """List a workspace directory (directories end with `/`)."""
    target = _checked_path(deps, directory)
    entries: list[str] = []
    try:
        with os.scandir(target) as scan:
            for entry in sorted(scan, key=lambda e: e.name):
                if entry.is_symlink() or entry.name in SKIPPED_DIRS:
                    continue
                entries.append(entry.name + ("/" if entry.is_dir() else ""))
                if len(entries) >= MAX_LIST_ENTRIES:
                    entries.append(f"[truncated at {MAX_LIST_ENTRIES} entries]")
                    break
    except FileNotFoundError:
        raise ToolError(f"{directory} does not exist") from None
    except NotADirectoryError:
        raise ToolError(f"{directory} is not a directory") from None
    return entries


async def write_file(deps: ToolDeps, path: str, content: str) -> str:
    """Write a workspace file through the editor (undoable) or directly."""
    target = _checked_path(deps, path)
    relative = path.strip().removeprefix("./")
    data = content.encode("utf-8")
    if await deps.host.apply_file_edit(relative, content):
        deps.lifecycle.note_assistant_write(relative, data)
        return f"{relative}: edit applied in the editor ({len(data)} bytes; undoable there)"
    target.parent.mkdir(parents=True, exist_ok=True)
    if not is_safe_relative_path(deps.root, relative):  # parent dirs may have changed
        raise ToolError(f"path {path!r} is outside the workspace")
    unlink_if_hard_linked(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(target, flags, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    deps.lifecycle.note_assistant_write(relative, data)
    return f"{relative}: written ({len(data)} bytes)"


@dataclass
class TurnResult:
    """How a turn (or one attempt at it) ended."""

    text: str
    usage: dict[str, Any]


class TurnSink(Protocol):
    """Where live turn activity is shown (the client's notifications)."""

    def delta(self, text: str) -> None:
        """Stream a text delta."""
        ...

    def tool(self, name: str, args: Any, status: str) -> None:
        """Show tool activity."""
        ...


def _dump(message: Any) -> dict[str, Any]:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    dumped: list[dict[str, Any]] = ModelMessagesTypeAdapter.dump_python([message], mode="json")
    return dumped[0]


@dataclass
class UsageTally:
    """Token usage over a turn's model calls; estimated where the server sent none."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    estimated: bool = False

    def add(
        self, usage: Any, prompt_estimate: Callable[[], int], response: dict[str, Any]
    ) -> dict[str, Any]:
        """Count one model call; return its usage as recorded in `step/end`.

        `prompt_estimate` is only called when the server sent no usage (it walks the history).
        """
        step: dict[str, Any] = {
            "input_tokens": int(getattr(usage, "input_tokens", 0) or 0),
            "output_tokens": int(getattr(usage, "output_tokens", 0) or 0),
        }
        if not step["input_tokens"] and not step["output_tokens"]:
            # llama.cpp's servers (and some proxies) send no usage in a stream.
            step = {
                "input_tokens": prompt_estimate(),
                "output_tokens": estimate_tokens(response),
                "estimated": True,
            }
            self.estimated = True
        self.input_tokens += step["input_tokens"]
        self.output_tokens += step["output_tokens"]
        self.requests += 1
        return step

    def result(self) -> dict[str, Any]:
        """Return the usage of a `ChatResult`."""
        out: dict[str, Any] = {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "requests": self.requests,
        }
        if self.estimated:
            out["estimated"] = True
        return out


class ChatRunner:
    """Builds the agent once per model config and runs turns with it."""

    def __init__(self, model: ModelConfig) -> None:
        self.model = model
        self._agent: Agent[ToolDeps, str] | None = None
        self.summary_failed_at: float | None = None
        # The history as pydantic-ai objects: each turn converts only its new messages.
        self._history = ModelMessageCache()

    def _build(self) -> Agent[ToolDeps, str]:
        from .pydantic_agent import build_agent

        return build_agent(self.model)

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
        """Summarise turns with the configured model (structured output)."""
        from .pydantic_agent import build_summarizer

        summarizer = build_summarizer(self.model, instructions)
        try:
            result = await summarizer.run(
                f"Conversation to summarise:\n\n{transcript}",
                model_settings={"timeout": self.non_streamed_timeout},
            )
        except Exception:
            self.summary_failed_at = time.monotonic()
            raise
        self.summary_failed_at = None
        return result.output

    @property
    def non_streamed_timeout(self) -> float:
        """Seconds a request answered in one piece may take (no data flows until it ends)."""
        return max(300.0, 5 * self.model.stream_timeout)

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
        again (after `TurnRecorder.retry_step`). With `stream` False the model answers in
        one piece, which is sent to `sink` as one delta (a server whose stream came back
        empty is asked again that way, which also gets its real error).
        """
        from pydantic_ai import Agent
        from pydantic_ai.messages import (
            FunctionToolCallEvent,
            FunctionToolResultEvent,
            PartDeltaEvent,
            PartStartEvent,
            TextPart,
            TextPartDelta,
        )
        from pydantic_ai.settings import ModelSettings

        agent = self.agent
        text_parts: list[str] = []
        model_name = self.model.name or ""
        messages = self._history.convert(history)
        tally = UsageTally()
        sent_tokens = 0  # this attempt's messages; the history is added only if needed
        settings: ModelSettings | None = (
            None if stream else ModelSettings(timeout=self.non_streamed_timeout)
        )
        instructions = ""

        def sum_tokens(sent: int) -> int:
            return history_tokens(history) + sent

        def record_request(request: Any) -> None:
            nonlocal sent_tokens, instructions
            message = _dump(request)
            instructions = message.pop("instructions", None) or ""
            recorded = recorder.start_step([message])
            sent_tokens += history_tokens(getattr(recorded.data, "messages", []))
            sent_tokens += len(instructions) // 4
            recorder.request_header(model_name, {}, instructions)

        in_one_piece = not stream  # only the attempt's first request
        async with agent.iter(
            prompt, message_history=messages, deps=deps, model_settings=settings
        ) as run:
            async for node in run:
                if Agent.is_model_request_node(node):
                    if in_one_piece:
                        continue  # made when the run moves on; recorded with its answer
                    async with node.stream(run.ctx) as model_stream:
                        record_request(node.request)  # prepared now: instructions set
                        async for event in model_stream:
                            delta = ""
                            if isinstance(event, PartStartEvent) and isinstance(
                                event.part, TextPart
                            ):
                                delta = event.part.content
                            elif isinstance(event, PartDeltaEvent) and isinstance(
                                event.delta, TextPartDelta
                            ):
                                delta = event.delta.content_delta
                            if delta:
                                recorder.chunk(delta)
                                sink.delta(delta)
                elif Agent.is_call_tools_node(node):
                    response = node.model_response
                    dumped = _dump(response)
                    text_parts = [p.content for p in response.parts if isinstance(p, TextPart)]
                    if in_one_piece:
                        in_one_piece = False
                        record_request(run.all_messages()[-2])
                        if "".join(text_parts):
                            sink.delta("".join(text_parts))
                    recorder.assistant_message(dumped)
                    step_usage = tally.add(
                        response.usage, functools.partial(sum_tokens, sent_tokens), dumped
                    )
                    sent_tokens -= len(instructions) // 4
                    sent_tokens += estimate_tokens(dumped)
                    calls: dict[str, tuple[str, Any]] = {}
                    async with node.stream(run.ctx) as tool_stream:
                        async for event in tool_stream:
                            if isinstance(event, FunctionToolCallEvent):
                                part = event.part
                                args = part.args_as_dict()
                                calls[part.tool_call_id] = (part.tool_name, args)
                                recorder.tool_call(part.tool_call_id, part.tool_name, args)
                                sink.tool(part.tool_name, args, "started")
                            elif isinstance(event, FunctionToolResultEvent):
                                result = event.part
                                failed = getattr(result, "part_kind", "") == "retry-prompt" or (
                                    getattr(result, "outcome", "success") != "success"
                                )
                                name, args = calls.get(result.tool_call_id, (result.tool_name, {}))
                                recorder.tool_result(
                                    result.tool_call_id,
                                    name or "",
                                    _jsonable(getattr(result, "content", None)),
                                    is_error=failed,
                                )
                                sink.tool(name or "", args, "failed" if failed else "done")
                    recorder.end_step(step_usage)  # a step brackets its tool calls and results
        return TurnResult("".join(text_parts), tally.result())


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool | list | dict):
        return value
    return str(value)
