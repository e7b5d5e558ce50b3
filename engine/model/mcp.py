"""MCP servers the client hands us, running: their tools offered to the model.

An edge turns what it was given (ACP's `session/new {mcpServers}`, later the LSP edge's
`initializationOptions.mcpServers`) into `McpServerSpec`s with `parse_mcp_servers` (both
from `mcp_spec`, and named here too); the engine keeps them in an `McpServers`, which the
`ChatRunner` asks for its toolsets on each attempt. Each server's tools reach the model
named `<server>_<tool>`, so they never collide with ours. A server is started on the first
turn that needs it and kept running until `McpServers.aclose`; one that fails costs the
model a tool error, never the turn (see `mcp_toolset`). pydantic-ai is imported only when
the toolsets are first built.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .mcp_spec import McpServerSpec as McpServerSpec
from .mcp_spec import Transport, checked_specs
from .mcp_spec import parse_mcp_servers as parse_mcp_servers
from .mcp_spec import spec_from_json as spec_from_json

if TYPE_CHECKING:
    from pydantic_ai.toolsets import AbstractToolset

    from .mcp_toolset import IsolatedMcpToolset
    from .tools import ToolDeps

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class McpServerState:
    """One server as `status` shows it: `connected`, `failed` (why), or `not started`."""

    name: str
    kind: Transport
    state: str
    reason: str | None = None
    tools: tuple[str, ...] = ()  # its tools' own names, as it last listed them


class McpServers:
    """The session's MCP servers: their toolsets, built once, started once, closed once."""

    def __init__(self, specs: Sequence[McpServerSpec] = (), keep: McpServers | None = None) -> None:
        """Take `specs`; a server of `keep` with the very same spec goes on running here."""
        self.specs = checked_specs(specs)
        self._toolsets: list[IsolatedMcpToolset] | None = None
        if keep is not None and keep._toolsets and self.specs:
            left = list(keep._toolsets)
            self._toolsets = []
            for spec in self.specs:
                same = next((t for t in left if t.spec == spec), None)
                if same is not None:
                    left.remove(same)
                self._toolsets.append(same or self._build_one(spec))
            keep._toolsets = left  # what `keep.aclose` stops

    def __bool__(self) -> bool:
        return bool(self.specs)

    def toolsets(self) -> list[AbstractToolset[ToolDeps]]:
        """Return one toolset per server, tools prefixed (built, not started, on first use).

        A server starts when a run first enters its toolset and stays up across runs.
        """
        if not self.specs:
            return []
        if self._toolsets is None:
            self._toolsets = self._build()
        return [toolset.prefixed(toolset.spec.prefix) for toolset in self._toolsets]

    def _build(self) -> list[IsolatedMcpToolset]:
        return [self._build_one(spec) for spec in self.specs]

    @staticmethod
    def _build_one(spec: McpServerSpec) -> IsolatedMcpToolset:
        from .mcp_toolset import IsolatedMcpToolset

        return IsolatedMcpToolset.for_spec(spec)

    async def connect(self) -> None:
        """Start every server now and learn its tools (each failure is its own state)."""
        if not self.specs:
            return
        if self._toolsets is None:
            self._toolsets = self._build()
        await asyncio.gather(*(toolset.start() for toolset in list(self._toolsets)))

    def states(self) -> list[McpServerState]:
        """Return each server's state, in the order they were given."""
        toolsets = {t.spec.name: t for t in self._toolsets or []}
        out = []
        for spec in self.specs:
            toolset = toolsets.get(spec.name)
            if toolset is not None and toolset.running:
                state, reason = "connected", None
            elif toolset is not None and toolset.failed is not None:
                state, reason = "failed", toolset.failed
            else:
                state, reason = "not started", toolset.stopped if toolset is not None else None
            tools = tuple(toolset.tool_names) if toolset is not None else ()
            out.append(McpServerState(spec.name, spec.transport, state, reason, tools))
        return out

    async def aclose(self) -> None:
        """Stop every server that was started (idempotent; never raises)."""
        toolsets, self._toolsets = self._toolsets or [], None
        for toolset in toolsets:
            await toolset.stop()
