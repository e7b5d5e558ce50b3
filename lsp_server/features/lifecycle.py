"""Initialize, the resume offer, and autosave on shutdown/exit."""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types

from .. import protocol as proto
from ..lifetime import GRACE_SECONDS, watch_client
from ..server import AgentAssistServer
from .base import Feature, lsp
from .mcp import McpTools

logger = logging.getLogger(__name__)

RESUME = "Resume"
RECONNECT_FIRST, RECONNECT_MAX = 2.0, 30.0  # seconds between tries of an unreachable store
NEW_SESSION = "New session"


async def ask_resume(ls: AgentAssistServer, prompt: str) -> bool:
    """Ask the resume question; Resume or a dismissed prompt resumes."""
    try:
        answer = await ls.window_show_message_request_async(
            types.ShowMessageRequestParams(
                type=types.MessageType.Info,
                message=prompt,
                actions=[types.MessageActionItem(RESUME), types.MessageActionItem(NEW_SESSION)],
            )
        )
    except Exception as exc:  # a client that cannot ask: take the [Y/n] default
        logger.warning("resume question failed (%s); resuming", exc)
        return True
    return answer is None or answer.title != NEW_SESSION


class Lifecycle(Feature):
    """The session's start (resume or fresh) and the process's end."""

    name = "lifecycle"
    needs = (McpTools,)

    @lsp(types.INITIALIZE)
    def initialize(self, params: types.InitializeParams) -> None:
        """Take the options and the project root; start watching the editor process."""
        ls = self.server
        ls.loop = asyncio.get_running_loop()
        warnings = ls.configure(params)
        warnings += self.need(McpTools).configure(params.initialization_options)
        for warning in warnings:
            ls.show(warning)
        logger.info("agent-assist for %s, instance %s", ls.root, ls.config.instance_id)
        ls.spawn(
            watch_client(params.process_id, ls.stdout, lambda why: ls.finish_soon(why, 1)),
            "watch-client",
        )

    @lsp(types.INITIALIZED)
    def initialized(self, params: types.InitializedParams) -> None:
        """Settle this instance's session in the background (requests wait for it)."""
        self.server.spawn(self.start_session(), "start-session")

    @lsp(types.SHUTDOWN)
    async def shutdown(self, params: object) -> None:
        """Cancel work in flight, then autosave."""
        # Turns in flight are cancelled first, so they record `aborted` before the autosave.
        ls = self.server
        ls.shutdown_requested = True
        await ls.cancel_work(GRACE_SECONDS)
        ls.autosave("shutdown")

    @lsp(types.EXIT)
    async def exit(self, params: object) -> None:
        """Leave the one way out."""
        # Never returns: pygls' own exit handler (sys.exit inside a callback) never runs.
        ls = self.server
        await ls.finish("exit", 0 if ls.shutdown_requested else 1)

    async def start_session(self) -> None:
        """Open the store, resume or start this instance's session, let requests through."""
        ls = self.server
        if not await ls.connect_store():
            # Requests are answered with why (`ls.lifecycle`); connecting goes on meanwhile.
            logger.error("%s", ls.store_error)
            ls.show(ls.store_error or "the session store cannot be used", types.MessageType.Error)
            ls.ready.set()
            ls.spawn(self._reconnect(), "store-reconnect")
            return
        await self._settle()

    async def _reconnect(self) -> None:
        """Try the store again, more slowly each time, until it answers (then settle)."""
        ls = self.server
        delay = RECONNECT_FIRST
        while not ls.closed:
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX)
            ls.ready.clear()  # requests wait while we try (and while the session settles)
            if await ls.connect_store():
                label = ls.lifecycle.store.label
                ls.show(f"agent-assist: connected to {label}", types.MessageType.Info)
                await self._settle()
                return
            ls.ready.set()

    async def _settle(self) -> None:
        ls = self.server
        try:
            lifecycle = ls.lifecycle
            previous = lifecycle.find_previous()
            accept = True
            if previous is not None:
                if ls.config.auto_resume == "never":
                    accept = False
                elif ls.config.auto_resume == "ask":
                    accept = await ask_resume(ls, previous.prompt())
            reason = proto.SessionChangeReason(lifecycle.resume_or_start(previous, accept))
            resumed = reason == proto.SessionChangeReason.RESUMED
            ls.announce(reason, lifecycle.last_drift if resumed else None)
        finally:
            ls.ready.set()
        ls.engine.session_started()  # the model server asked about itself, in the background
        for feature in list(ls.features.values()):
            try:
                await feature.session_started()
            except Exception:
                logger.exception("%s failed to start with the session", feature.name)
