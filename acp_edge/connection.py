"""The ACP connection over a started transport: the SDK's router and `Connection`.

The SDK's router serves the `Agent` methods; `session/delete` (in the 0.12.1 schema, not in
its router) is routed here the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from acp.agent.router import build_agent_router
from acp.connection import Connection
from acp.meta import AGENT_METHODS
from acp.schema import DeleteSessionRequest
from acp.utils import normalize_result

from . import hello
from .agent import AcpAgent
from .client import ClientFiles, ClientLink
from .sessions import Sessions
from .transport import LineTransport

logger = logging.getLogger(__name__)


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


async def serve_connection(
    transport: LineTransport,
    options: Mapping[str, Any],
    env: Mapping[str, str],
    introduced: dict[str, Any] | None,
    stop: asyncio.Event,
) -> None:
    """Serve until the client goes or `stop` is set; then save every session.

    `introduced`: the params of the `initialize` already answered (`process`), if any.
    """
    sessions = Sessions(options, env)
    if introduced is not None:
        sessions.client_name = hello.client_name(introduced)
        sessions.files = ClientFiles.of(introduced)
    agent = AcpAgent(sessions)
    connection = Connection(route(agent), transport, listening=False)
    agent.on_connect(ClientLink(connection))
    serving = asyncio.ensure_future(connection.main_loop())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if serving.done() and not serving.cancelled() and (failure := serving.exception()):
        logger.error("the connection failed: %s", failure, exc_info=failure)
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
        except Exception as exc:  # on the way out: nothing more to tell
            logger.debug("closing the connection: %s", exc)
