"""One MCP server's toolset that fails alone (imported lazily, with pydantic-ai).

`IsolatedMcpToolset` wraps pydantic-ai's `MCPToolset`. It starts the server the first time
a run enters it and keeps it running across runs (`Agent.iter` enters its toolsets per run:
entering the server each time would start a stdio server again every turn); `stop` ends it.
What goes wrong costs the model a failed tool result (`ToolFailed`, which uses no retries)
naming the server, never the turn: a server that cannot start or list its tools offers none
(one warning); a call that does not answer within `McpServerSpec.timeout` is given up; a
server that died during a call is started again for the next run. A call of a tool the
spec asks about runs only after the user's yes (`tools.confirm_tool_call`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self

from fastmcp.client.transports import SSETransport, StdioTransport, StreamableHttpTransport
from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import ToolsetTool, WrapperToolset

from .tools import OUR_TOOLS, ToolDeps, confirm_tool_call

if TYPE_CHECKING:
    from .mcp_spec import McpServerSpec

logger = logging.getLogger(__name__)

READ_TIMEOUT = 300.0  # seconds the session waits for a message (pydantic-ai's default)
PING_TIMEOUT = 5.0  # seconds a server that failed a call has to answer a ping
# A tool name OpenAI's API takes: a request with another fails, and the turn with it.
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _described(exc: BaseException) -> str:
    """Return what went wrong, from the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__


def _mcp_toolset(spec: McpServerSpec) -> MCPToolset[ToolDeps]:
    transport: StdioTransport | StreamableHttpTransport | SSETransport
    if spec.transport == "stdio":
        # Not kept alive by the transport: the toolset's own hold keeps the session, and
        # ending it ends the process.
        transport = StdioTransport(
            spec.command, list(spec.args), dict(spec.env) or None, spec.cwd, keep_alive=False
        )
    elif spec.transport == "sse":
        transport = SSETransport(spec.url, headers=dict(spec.headers) or None)
    else:
        transport = StreamableHttpTransport(spec.url, headers=dict(spec.headers) or None)
    return MCPToolset(
        transport,
        id=spec.prefix,
        tool_error_behavior="failed",  # the tool's own error: a result, not a retry
        init_timeout=spec.start_timeout,
        # The session's own limit, also an SSE stream's idle limit: ours (`timeout`) is per call.
        read_timeout=max(spec.timeout, READ_TIMEOUT),
    )


@dataclass
class IsolatedMcpToolset(WrapperToolset[ToolDeps]):
    """An MCP server's toolset whose failures are tool results (see the module doc)."""

    spec: McpServerSpec = field(kw_only=True)
    running: bool = field(default=False, init=False)
    failed: str | None = field(default=None, init=False)  # why it did not start
    stopped: str | None = field(default=None, init=False)  # why it last stopped (to restart)
    tool_names: tuple[str, ...] = field(default=(), init=False)  # as it last listed them
    _starting: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)
    _left_out: set[str] = field(default_factory=set, init=False, repr=False)  # told once

    @classmethod
    def for_spec(cls, spec: McpServerSpec) -> IsolatedMcpToolset:
        """Return the toolset of the server `spec` describes (not started)."""
        return cls(_mcp_toolset(spec), spec=spec)

    @property
    def server(self) -> MCPToolset[ToolDeps]:
        """Return the wrapped pydantic-ai toolset."""
        wrapped = self.wrapped
        assert isinstance(wrapped, MCPToolset)
        return wrapped

    async def for_run(self, ctx: RunContext[ToolDeps]) -> Self:
        """Return this very toolset: its server is shared by every run."""
        return self

    async def for_run_step(self, ctx: RunContext[ToolDeps]) -> Self:
        """Return this very toolset (as `for_run`)."""
        return self

    async def __aenter__(self) -> Self:
        """Start the server once (a failure is logged, not raised)."""
        await self.start()
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        """Keep the server running after a run: `stop` ends it."""
        return None

    async def start(self) -> None:
        """Start the server if it is not running and has not failed to start."""
        async with self._starting:
            if self.running or self.failed is not None:
                return
            try:
                async with asyncio.timeout(self.spec.start_timeout):
                    await self.wrapped.__aenter__()
            except Exception as exc:  # whatever the server or its transport raised
                self.failed = (
                    f"no answer within {self.spec.start_timeout:g} s"
                    if isinstance(exc, TimeoutError)
                    else _described(exc)
                )
                logger.warning(
                    "MCP server %r did not start (%s): the model goes on without its tools",
                    self.spec.name,
                    self.failed,
                )
                await self._close_client()
                return
            await self._learn_tools()  # before it shows as running, with its tools
            self.running = True
            self.stopped = None

    async def _learn_tools(self) -> None:
        """Note the names of the tools the server offers (for `status`); never raises."""
        try:
            async with asyncio.timeout(self.spec.timeout):
                tools = await self.server.client.list_tools()
        except Exception as exc:
            logger.info("MCP server %r did not list its tools: %s", self.spec.name, _described(exc))
            return
        self.tool_names = tuple(sorted(t.name for t in tools if self._offered(t.name)))

    def _offered(self, name: str) -> bool:
        full = f"{self.spec.prefix}_{name}"
        return full not in OUR_TOOLS and TOOL_NAME.fullmatch(full) is not None

    async def stop(self) -> None:
        """End the server's session (and a stdio server's process); never raises."""
        async with self._starting:
            if self.running:
                self.running = False
                try:
                    await self.wrapped.__aexit__(None, None, None)
                except Exception as exc:
                    logger.info("MCP server %r: %s while stopping", self.spec.name, _described(exc))
            await self._close_client()

    async def _close_client(self) -> None:
        try:
            await self.server.client.close()  # type: ignore[no-untyped-call]
        except Exception as exc:  # it raises again what ended its session
            logger.debug("MCP server %r closed: %s", self.spec.name, _described(exc))

    async def _restart_later(self, why: str) -> None:
        """Stop a server that died, so the next run starts it again."""
        logger.warning("MCP server %r stopped (%s): started again next turn", self.spec.name, why)
        await self.stop()
        self.stopped = f"stopped ({why}): started again on the next turn"

    async def _alive(self) -> bool:
        try:
            async with asyncio.timeout(min(PING_TIMEOUT, self.spec.timeout)):
                return await self.server.client.ping()
        except Exception:
            return False

    async def _list(self, ctx: RunContext[ToolDeps]) -> dict[str, ToolsetTool[ToolDeps]] | None:
        """Return the server's tools; None (and the server stopped) if it cannot list them."""
        if not self.running:
            return None
        try:
            async with asyncio.timeout(self.spec.timeout):
                return await self.wrapped.get_tools(ctx)
        except Exception as exc:
            why = "no answer" if isinstance(exc, TimeoutError) else _described(exc)
            logger.warning("MCP server %r did not list its tools: %s", self.spec.name, why)
            await self._restart_later(why)
            return None

    async def get_tools(self, ctx: RunContext[ToolDeps]) -> dict[str, ToolsetTool[ToolDeps]]:
        """Return the server's tools but those named like ours; none if it cannot list them.

        A server that ran but cannot list them (its connection dropped while idle) is
        started again once, at once.
        """
        tools = await self._list(ctx)
        if tools is None and self.failed is None:
            await self.start()
            tools = await self._list(ctx)
        offered: dict[str, ToolsetTool[ToolDeps]] = {}
        for name, tool in (tools or {}).items():
            full = f"{self.spec.prefix}_{name}"
            if self._offered(name):
                offered[name] = tool
            elif name not in self._left_out:
                self._left_out.add(name)
                logger.warning(
                    "MCP server %r: its tool %r is not offered: %s is %s",
                    self.spec.name,
                    name,
                    full,
                    "one of ours" if full in OUR_TOOLS else "no name the model's API takes",
                )
        if tools is not None:
            self.tool_names = tuple(sorted(offered))
        return offered

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[ToolDeps],
        tool: ToolsetTool[ToolDeps],
    ) -> Any:
        """Call `name` on the server, asked about first if the spec says; failures are results."""
        server = self.spec.name
        if self.spec.needs_confirm(name) and not await confirm_tool_call(
            ctx.deps.host, server, name, tool_args
        ):
            raise ToolFailed(
                f"The user did not allow {name} of MCP server {server!r} (or the editor cannot "
                "ask): nothing was run. Do not try it another way; tell the user what you "
                "wanted it for."
            )
        if not self.running:
            raise ToolFailed(f"MCP server {server!r} is not running: {name} was not called.")
        try:
            async with asyncio.timeout(self.spec.timeout):
                return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        except ToolFailed as exc:  # the tool said it failed: the server is fine
            raise ToolFailed(f"MCP server {server!r}, {name}: {exc.message}") from None
        except TimeoutError:
            raise ToolFailed(
                f"MCP server {server!r} did not answer {name} within {self.spec.timeout:g} s: "
                "the call was given up."
            ) from None
        except Exception as exc:  # ModelRetry from a protocol error, or the transport's own
            why = _described(exc)
            if not isinstance(exc, ModelRetry) or not await self._alive():
                await self._restart_later(why)
                raise ToolFailed(
                    f"MCP server {server!r} failed during {name} ({why}); it is started again "
                    "for the next turn."
                ) from None
            raise ToolFailed(f"MCP server {server!r} refused {name}: {why}") from None
