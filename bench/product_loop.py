"""The server bench's baseline: the product's own turn, run in this process without LSP.

A turn is what `agentAssist/chat` does between parsing its params and answering, minus the
edge: `SessionLifecycle.begin_turn`, `ChatRunner.run_attempt` (the streaming loop) and
`TurnRecorder.end("completed")` (fsynced) on a real session of a real scratch project, with
the configuration parsed from the same initialization options the server gets. What it
leaves out is what the server adds: JSON-RPC over stdio, the handler and its queueing, and
one notification per delta.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.config import parse_initialization_options
from engine.model.runner import ChatRunner
from engine.model.tools import EditOutcome, ToolDeps
from session.lifecycle import LifecycleConfig, SessionLifecycle
from session.local.manager import SessionManager


class CountingSink:
    """A `TurnSink` that counts the deltas and notes when the first one came."""

    def __init__(self) -> None:
        self.deltas = 0
        self.chars = 0
        self.first: float | None = None
        self.retries = 0
        self.tools = 0
        self.streamed = False

    def delta(self, text: str) -> None:
        """Count a text delta."""
        if self.first is None:
            self.first = time.perf_counter()
        self.deltas += 1
        self.chars += len(text)

    def retry(self, attempt: int, reason: str) -> None:
        """Count a retry (a timed turn has none)."""
        self.retries += 1

    def tool(self, name: str, args: Any, status: str, call_id: str) -> None:
        """Count tool activity (the bench's replies call no tools)."""
        self.tools += 1

    def thinking(self) -> None:
        """Nothing to count: the bench's replies do not think."""

    def end_thinking(self) -> None:
        """Nothing to end (the bench's model does not think)."""


class NoEditor:
    """An `EditorHost` without an editor: a write would go straight to disk."""

    async def apply_file_edit(
        self, relative: str, content: str, call_id: str | None = None
    ) -> EditOutcome:
        """Cannot, as a client that cannot apply edits (the write goes to disk)."""
        return EditOutcome(applied=False)

    async def confirm(self, relative: str, reason: str, call_id: str | None = None) -> bool:
        """Say no, as a client that cannot ask does."""
        return False

    async def confirm_tool(self, server: str, tool: str, args: dict[str, Any]) -> bool:
        """Say no to an MCP tool call, as a client that cannot ask does."""
        return False

    def protected_globs(self) -> tuple[str, ...]:
        """None beyond the built-in ones."""
        return ()

    async def read_document(self, relative: str) -> str | None:
        """No editor: every file is read from disk."""
        return None


@dataclass
class LoopTurn:
    """One in-process turn."""

    seconds: float
    first_delta: float
    deltas: int
    chars: int
    text: str


class ProductLoop:
    """The product's turn on its own session, in this process's event loop."""

    def __init__(
        self, workspace: Path, home: Path, options: dict[str, Any], env: dict[str, str]
    ) -> None:
        config, warnings = parse_initialization_options(options, "Bench Editor", env)
        assert not warnings, warnings
        model = config.model
        self.lifecycle = SessionLifecycle(
            SessionManager(workspace, home=home),
            config.instance_id,
            LifecycleConfig(
                tracked=config.tracked_files,
                persistence=config.persistence,
                secrets=(model.api_key,) if model.api_key else (),
                history_tokens=config.history_budget,
            ),
        )
        self.lifecycle.resume_or_start(self.lifecycle.find_previous(), accept=True)
        self.runner = ChatRunner(model)
        self.deps = ToolDeps(self.lifecycle, NoEditor())

    async def turn(self, text: str) -> LoopTurn:
        """Run and record one turn, its history carried forward as the server does."""
        sink = CountingSink()
        start = time.perf_counter()
        history = self.lifecycle.message_history()
        recorder = self.lifecycle.begin_turn(text)
        result = await self.runner.run_attempt(self.deps, recorder, text, history, sink)
        recorder.end("completed")
        end = time.perf_counter()
        assert sink.retries == 0 and sink.tools == 0, (sink.retries, sink.tools)
        # The server converts the history for the next turn once the result is on its way.
        self.runner.prepare_history(self.lifecycle.message_history())
        first = (sink.first or end) - start
        return LoopTurn(end - start, first, sink.deltas, sink.chars, result.text)

    def reset(self) -> None:
        """Start over on an empty history, as `agentAssist/reset` does in the server."""
        self.lifecycle.reset(delete_files=False)

    def close(self) -> None:
        """Close the session (autosave) and release its lock."""
        self.lifecycle.close()
