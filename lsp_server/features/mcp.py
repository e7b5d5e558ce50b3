"""The model's MCP servers over LSP: the editor's `mcpServers`, the project's file, its trust.

At `initialize` (called by `Lifecycle`) the editor's servers, and the project file's servers
the user allowed before, are handed to the engine. Once the session is settled, the user is
asked about each project server never asked about (`window/showMessageRequest`; the answer
is kept on this machine, `McpTrust`), then every allowed server is started, so `status` can
list its tools. See `engine.mcp_config`.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lsprotocol import types

from engine.mcp_config import (
    PROJECT_FILE,
    TRUST_ENV,
    McpTrust,
    command_line,
    configured_servers,
)
from engine.model.mcp import McpServerSpec
from session.paths import storage_root

from ..protocol.mcp import McpServerStatus
from ..server import AgentAssistServer
from .base import Feature

logger = logging.getLogger(__name__)

START, DONT_START = "Start it", "Don't start"


def trust_question(spec: McpServerSpec, root: Path) -> str:
    """Return the question about a project server: what it would run, and where."""
    where = "" if spec.cwd or spec.transport != "stdio" else f" (in {root})"
    return (
        f"Agent Assist: this project's {PROJECT_FILE} asks to start MCP server {spec.name!r}: "
        f"{command_line(spec)}{where}. A repository can name any command here: start it only "
        "if you trust it. Your answer is remembered on this machine."
    )


class McpTools(Feature):
    """Hands the engine the MCP servers the user allowed; answers for them in `status`."""

    name = "mcp"

    def __init__(self, server: AgentAssistServer) -> None:
        super().__init__(server)
        self.trusted: list[McpServerSpec] = []  # handed to the engine
        self.project: set[str] = set()  # the names of those from the project file
        self.awaiting: list[McpServerSpec] = []  # project servers the user has not allowed yet
        self.declined: list[McpServerSpec] = []
        self.why_waiting = "asked once the session has started"
        self.trust = McpTrust(storage_root())
        self._asked = False

    def configure(self, options: object) -> list[str]:
        """Read the servers; hand the engine those trusted; return warnings for the user."""
        ls = self.server
        root = ls.root
        found = configured_servers(options, root)
        self.trusted = list(found.settings)
        for spec in found.project:
            answer = self.trust.answer(root, spec)
            if answer is True:
                self.trusted.append(spec)
                self.project.add(spec.name)
            else:
                (self.declined if answer is False else self.awaiting).append(spec)
        return list(found.warnings) + self._use()

    def _use(self) -> list[str]:
        """Hand the engine the trusted servers; if two would name their tools alike, fewer."""
        engine = self.server.engine
        try:
            engine.use_mcp_servers(self.trusted)
            return []
        except ValueError as exc:
            clash = exc
        own = [s for s in self.trusted if s.name not in self.project]
        try:
            engine.use_mcp_servers(own)
        except ValueError as exc:  # the settings' own servers clash
            self.trusted, self.project = [], set()
            engine.use_mcp_servers([])
            return [f"agent-assist: mcpServers: {exc}; no MCP server is used"]
        self.trusted, self.project = own, set()
        return [f"agent-assist: {PROJECT_FILE}: {clash}; its servers are left out"]

    async def session_started(self) -> None:
        """Ask about the project's new servers (once), then start every allowed one."""
        if self._asked:
            return
        self._asked = True
        if self.awaiting:
            await self._ask_trust()
        await self.server.engine.mcp.connect()

    async def _ask_trust(self) -> None:
        ls = self.server
        window = ls.client_capabilities.window
        if window is None or window.show_message is None:
            self.why_waiting = (
                f"the editor cannot ask; allow it by setting {TRUST_ENV}=1 or by naming it "
                "in your own mcpServers setting"
            )
            return
        allowed: list[McpServerSpec] = []
        for spec in list(self.awaiting):
            try:
                answer = await ls.window_show_message_request_async(
                    types.ShowMessageRequestParams(
                        type=types.MessageType.Warning,
                        message=trust_question(spec, ls.root),
                        actions=[types.MessageActionItem(t) for t in (START, DONT_START)],
                    )
                )
            except Exception as exc:  # no answer: asked again next time
                logger.warning("the question about MCP server %r failed (%s)", spec.name, exc)
                continue
            title = answer.title if answer is not None else None
            if title not in (START, DONT_START):  # dismissed: asked again next time
                continue
            self.trust.remember(ls.root, spec, title == START)
            self.awaiting.remove(spec)
            (allowed if title == START else self.declined).append(spec)
        self.why_waiting = "not answered yet: asked again when the server starts"
        if allowed:
            self.trusted += allowed
            self.project.update(s.name for s in allowed)
            for warning in self._use():
                ls.show(warning)

    def states(self) -> list[McpServerStatus]:
        """Return every configured server's state (`agentAssist/status`)."""
        out = [
            McpServerStatus(
                name=s.name,
                kind=s.kind,
                source="project" if s.name in self.project else "settings",
                state=s.state,
                reason=s.reason,
                tools=list(s.tools),
            )
            for s in self.server.engine.mcp.states()
        ]
        for spec in self.awaiting:
            out.append(self._held(spec, "awaiting trust", self.why_waiting))
        for spec in self.declined:
            out.append(self._held(spec, "declined", f"you said no (kept in {self.trust.path})"))
        return out

    @staticmethod
    def _held(spec: McpServerSpec, state: str, reason: str | None) -> McpServerStatus:
        return McpServerStatus(
            name=spec.name,
            kind=spec.transport,
            source="project",
            state=state,
            reason=reason,
        )
