"""The PostgreSQL store's health as the user sees it: spooled events sent, outages told once.

While the database cannot be reached, a session's events go to a local spool (see
`session/pg/spool.py`); this checks every second, between turns and in a thread, whether the
database is back (the log spaces its tries, 1 s doubling to 30 s), and says so once when it
goes and once when it is back. At start, spools left by a process that died
offline are replayed first.
"""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types

from .base import Feature

logger = logging.getLogger(__name__)

CHECK_SECONDS = 1.0


class StoreWatch(Feature):
    """Sends spooled events when the database is back; tells the user about outages."""

    name = "store watch"

    async def session_started(self) -> None:
        """Replay spools left behind, then watch the store (PostgreSQL only)."""
        ls = self.server
        if ls.engine.lifecycle_or_none is None or ls.lifecycle.store.kind != "postgresql":
            return
        # Started while the database did not answer: the session is kept on this machine.
        notice = getattr(ls.lifecycle.store, "offline_notice", lambda: None)()
        if notice is None:
            await self.replay_left_behind()
        else:
            logger.warning("%s", notice)
            ls.show(f"agent-assist: {notice}", types.MessageType.Warning)
        ls.spawn(self.watch(told_offline=notice is not None), "store-watch")

    async def replay_left_behind(self) -> None:
        """Send the spools of sessions no process of ours has open (left by a crash)."""
        ls = self.server
        replay = getattr(ls.lifecycle.store, "replay_spools", None)
        if replay is None:
            return
        try:
            messages = await asyncio.to_thread(replay)
        except Exception as exc:  # the database went again: the next check tries again
            logger.warning("spooled events not sent yet: %s", exc)
            return
        for message in messages:
            logger.info("%s", message)
            ls.show(f"agent-assist: {message}", types.MessageType.Info)

    async def watch(self, *, told_offline: bool = False) -> None:
        """Check the store every second; retry it between turns; say when it goes and comes."""
        ls = self.server
        while not ls.closed and ls.engine.lifecycle_or_none is not None:
            await asyncio.sleep(CHECK_SECONDS)
            lifecycle = ls.lifecycle
            state = lifecycle.store_state()
            if not state.online and not ls.turn_lock.locked() and lifecycle.session is not None:
                async with ls.turn_lock:
                    log = lifecycle.session.log
                    await asyncio.to_thread(log.retry)
                state = lifecycle.store_state()
            if not state.online and not told_offline:
                told_offline = True
                ls.show(
                    f"agent-assist: the session store {state.location} cannot be reached; "
                    "this session goes on, its events are kept in a local spool and sent "
                    "when the database is back",
                    types.MessageType.Warning,
                )
            elif state.online and told_offline:
                told_offline = False
                ls.show(
                    f"agent-assist: the session store {state.location} is back; the spooled "
                    "events are stored",
                    types.MessageType.Info,
                )
                await self.replay_left_behind()  # sessions closed while it was away
