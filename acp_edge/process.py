"""The agent process: the connection on stdio, its routes, and the ways out.

The SDK's router serves the `Agent` methods; `session/delete` (in the 0.12.1 schema, not
in its router) is routed here the same way. Stdin closed, SIGTERM or SIGHUP: every open
session is saved and the process ends.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Mapping
from typing import Any

from acp.agent.router import build_agent_router
from acp.connection import Connection
from acp.meta import AGENT_METHODS
from acp.schema import DeleteSessionRequest
from acp.stdio import stdio_streams
from acp.utils import normalize_result

from .agent import AcpAgent
from .client import ClientLink
from .sessions import Sessions
from .transport import LineTransport

logger = logging.getLogger(__name__)

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
LINE_LIMIT = 50 * 1024 * 1024  # one message (an embedded file) may be large


def route(agent: AcpAgent) -> Any:
    """Return the router of the agent's methods (fork and close are `unstable` in the SDK)."""
    router = build_agent_router(agent, use_unstable_protocol=True)  # type: ignore[arg-type]
    router.route_request(
        AGENT_METHODS["session_delete"],
        DeleteSessionRequest,
        agent,
        "delete_session",
        adapt_result=normalize_result,
    )
    return router


async def run(options: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """Serve ACP on stdio until the client goes (or a signal); then save every session."""
    reader, writer = await stdio_streams(limit=LINE_LIMIT)
    sessions = Sessions(options, env)
    agent = AcpAgent(sessions)
    connection = Connection(route(agent), LineTransport(reader, writer), listening=False)
    agent.on_connect(ClientLink(connection))
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in ENDING_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    serving = asyncio.ensure_future(connection.main_loop())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
    why = "a signal" if stop.is_set() else "end of input"
    logger.info("acp: stopping on %s", why)
    try:
        await sessions.close_all(why)
    finally:
        stopping.cancel()
        serving.cancel()
        await asyncio.wait({serving}, timeout=0.3)
        try:
            await asyncio.wait_for(connection.close(), timeout=0.3)
        except (TimeoutError, Exception) as exc:  # on the way out: nothing more to tell
            logger.debug("closing the connection: %s", exc)


def serve(options: Mapping[str, Any]) -> int:
    """Run the agent; return the exit code."""
    asyncio.run(run(options, os.environ))
    return 0
