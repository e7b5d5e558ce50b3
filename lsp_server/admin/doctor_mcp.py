"""`agent-assist doctor`: the project's MCP servers (`.agent-assist/mcp.json`).

Each is listed; unless `--offline`, each the user allowed (or `AGENT_ASSIST_TRUST_PROJECT_MCP=1`)
is started briefly and its tools are listed. A server never allowed is never started here
either: the doctor runs in a clone as the editor does.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from engine.mcp_config import PROJECT_FILE, TRUST_ENV, McpTrust, command_line, configured_servers
from engine.model.mcp import McpServerSpec
from session.paths import storage_root

if TYPE_CHECKING:
    from .doctor_report import DoctorReport

AREA = "mcp"


async def _tools_of(spec: McpServerSpec) -> tuple[tuple[str, ...] | None, str | None]:
    """Start the server, note its tools, stop it: (tool names, None) or (None, why not)."""
    from engine.model.mcp_toolset import IsolatedMcpToolset

    toolset = IsolatedMcpToolset.for_spec(spec)
    try:
        await toolset.start()
        if not toolset.running:
            return None, toolset.failed
        return toolset.tool_names, None
    finally:
        await toolset.stop()


def check_mcp(report: DoctorReport, root: Path, online: bool, timeout: float) -> None:
    """Add a finding per project MCP server (started briefly if allowed and `online`)."""
    found = configured_servers(None, root)
    for warning in found.warnings:
        report.add("warning", AREA, warning)
    if not found.project:
        if (root / PROJECT_FILE).exists():
            report.add("info", AREA, f"{PROJECT_FILE} names no MCP server")
        return
    trust = McpTrust(storage_root())
    for given in found.project:
        allowed = trust.answer(root, given)  # kept for the spec as the file gives it
        spec = given if given.cwd or given.transport != "stdio" else replace(given, cwd=str(root))
        what = f"{spec.name} ({spec.transport}: {command_line(spec)})"
        if allowed is not True:
            why = "you said no to it" if allowed is False else "not allowed yet"
            report.add(
                "info",
                AREA,
                f"{what}: {why}, so not started (the editor asks; {TRUST_ENV}=1 allows all)",
            )
            continue
        if not online:
            report.add("ok", AREA, f"{what}: allowed (not started: --offline)")
            continue
        bounded = replace(spec, start_timeout=min(spec.start_timeout, timeout), timeout=timeout)
        tools, failed = asyncio.run(_tools_of(bounded))
        if tools is None:
            report.add("warning", AREA, f"{what}: did not start ({failed})")
        else:
            listed = ", ".join(tools) or "none"
            report.add("ok", AREA, f"{what}: started, {len(tools)} tools: {listed}")
