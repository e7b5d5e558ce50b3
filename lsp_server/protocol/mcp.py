"""The MCP servers the model's tools come from, as `agentAssist/status` shows them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .wire import Wire, omitted

McpState = Literal["connected", "failed", "not started", "awaiting trust", "declined"]


class McpServerStatus(Wire):
    """One configured MCP server."""

    name: str
    kind: Literal["stdio", "http", "sse"]
    source: Literal["settings", "project"] = Field(
        description="`settings`: the editor's mcpServers; `project`: .agent-assist/mcp.json."
    )
    state: McpState = Field(
        description="`connected`; `failed` (see `reason`); `not started` (it starts with the "
        "next turn); `awaiting trust` (a project server the user has not allowed yet); "
        "`declined` (the user said no)."
    )
    reason: str | None = omitted("Why it failed, stopped or does not start.")
    tools: list[str] = Field(
        default_factory=list,
        description="Its tools' own names, as it last listed them (the model sees "
        "`<server>_<tool>`).",
    )
