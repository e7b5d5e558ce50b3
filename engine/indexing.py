"""The search index kept up to date after each turn, in a worker thread.

A sync is usually under a millisecond, but one that recounts the trigrams or lets FTS5
merge its segments takes up to a second on a large index (1M events), so the event loop
never waits for it. Syncs asked for meanwhile are queued into one more sync after it. Only
the local store is indexed here: the database's search indexes what it holds itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from session.lifecycle import SessionLifecycle
from session.search import SearchIndex
from session.store.manager import SessionManager

logger = logging.getLogger(__name__)

Target = tuple[SearchIndex, SessionManager, str]


def sync_quietly(index: SearchIndex, manager: SessionManager, session_id: str) -> None:
    """Sync one session into the index; a failure is logged (the index is a projection)."""
    try:
        index.sync_session(manager, session_id)
    except Exception as exc:  # never fail a turn for it
        logger.warning("search index not updated: %s", exc)


class Indexing:
    """The project's search index, and the queue of syncs after turns."""

    def __init__(self, spawn: Callable[[Awaitable[Any], str], asyncio.Task[Any]]) -> None:
        self._spawn = spawn
        self._index: SearchIndex | None = None
        self._running: asyncio.Task[None] | None = None  # the worker sync running, if any
        self._next: Target | None = None

    def index(self, lifecycle: SessionLifecycle) -> SearchIndex:
        """Return the project's search index (opened on first use)."""
        if self._index is None:
            self._index = SearchIndex.for_project(lifecycle.manager)
        return self._index

    def target(self, lifecycle: SessionLifecycle | None) -> Target | None:
        """Return what a sync of the current session syncs (None: none, or not local)."""
        if lifecycle is None or lifecycle.session is None or lifecycle.store.kind != "local":
            return None
        return self.index(lifecycle), lifecycle.manager, lifecycle.session_id

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
        """Close the index, if it was opened."""
        if self._index is not None:
            self._index.close()
