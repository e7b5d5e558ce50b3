"""The store's search kept up to date after each turn, in a worker thread.

A sync of the local index is usually under a millisecond, but one that recounts the
trigrams or lets FTS5 merge its segments takes up to a second on a large index (1M events),
so the event loop never waits for it. Syncs asked for meanwhile are queued into one more
sync after it. The database's own index catches up when it is searched (`catch_up` does
nothing there).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from session.lifecycle import SessionLifecycle
from session.store.backend import StoreSearch

logger = logging.getLogger(__name__)

Target = tuple[StoreSearch, str]


def sync_quietly(search: StoreSearch, session_id: str) -> None:
    """Index one session; a failure is logged (the index is a projection)."""
    try:
        search.catch_up(session_id)
    except Exception as exc:  # never fail a turn for it
        logger.warning("search index not updated: %s", exc)


class Indexing:
    """The project's search, and the queue of syncs after turns."""

    def __init__(self, spawn: Callable[[Awaitable[Any], str], asyncio.Task[Any]]) -> None:
        self._spawn = spawn
        self._search: StoreSearch | None = None
        self._running: asyncio.Task[None] | None = None  # the worker sync running, if any
        self._next: Target | None = None

    def search(self, lifecycle: SessionLifecycle) -> StoreSearch:
        """Return the project's search (opened on first use)."""
        if self._search is None:
            self._search = lifecycle.store.open_search()
        return self._search

    def target(self, lifecycle: SessionLifecycle | None) -> Target | None:
        """Return what a sync of the current session syncs (None: no session)."""
        if lifecycle is None or lifecycle.session is None:
            return None
        return self.search(lifecycle), lifecycle.session_id

    def in_background(self, lifecycle: SessionLifecycle | None) -> None:
        """Index the current session in a worker thread (queued behind a running sync)."""
        target = self.target(lifecycle)
        if target is None:
            return
        self._next = target
        if self._running is None or self._running.done():
            self._running = self._spawn(self._queued(), "search index sync")

    async def _queued(self) -> None:
        while (target := self._next) is not None:
            self._next = None
            await asyncio.to_thread(sync_quietly, *target)

    def sync_at_exit(self, target: Target | None) -> None:
        """Sync `target` now, unless a worker sync still runs (it holds the index)."""
        if target is not None and (self._running is None or self._running.done()):
            sync_quietly(*target)

    def close(self) -> None:
        """Close the search, if it was opened."""
        if self._search is not None:
            self._search.close()
