"""After a turn, the server indexes the session in a worker thread, never in its event loop."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from lsp_server.server import AgentAssistServer
from session.local.layout import ProjectLayout
from session.local.local_search import LocalSearch
from session.local.manager import SessionManager
from session.search import SearchIndex

from .conftest import make_lifecycle, run_turn


class HeldIndex(SearchIndex):
    """A real index whose syncs wait until the test lets them go on."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls: list[tuple[str, str]] = []

    def sync_session(self, layout: ProjectLayout, session_id: str):  # type: ignore[no-untyped-def]
        self.calls.append((threading.current_thread().name, session_id))
        self.entered.set()
        assert self.release.wait(10), "the test never released the sync"
        return super().sync_session(layout, session_id)


async def syncing(manager: SessionManager) -> tuple[AgentAssistServer, HeldIndex]:
    """A server with a session of one turn, whose background sync is held as it starts."""
    lifecycle = make_lifecycle(manager)
    run_turn(lifecycle, "where do the pelican templates live", "under templates/birds")
    server = AgentAssistServer()
    server.lifecycle = lifecycle
    index = HeldIndex(manager.layout.project_dir / "index.sqlite")
    server.engine.indexing._search = LocalSearch(manager.layout, index)
    server.index_in_background()
    assert await asyncio.to_thread(index.entered.wait, 10)
    return server, index


async def test_a_slow_sync_leaves_the_loop_free_and_later_requests_are_coalesced(
    manager: SessionManager,
) -> None:
    server, index = await syncing(manager)
    lifecycle = server.lifecycle
    # The sync is held in its thread; the loop goes on, and asks for more syncs meanwhile.
    ticks = 0
    for _ in range(5):
        await asyncio.sleep(0)
        ticks += 1
    run_turn(lifecycle, "and the heron ones", "under templates/herons")
    server.index_in_background()
    server.index_in_background()
    assert ticks == 5 and len(index.calls) == 1
    index.release.set()
    assert server.engine.indexing._running is not None
    await asyncio.wait_for(server.engine.indexing._running, 10)

    loop_thread = threading.current_thread().name
    assert [sid for _, sid in index.calls] == [lifecycle.session_id] * 2  # two asks: one sync
    assert all(name != loop_thread for name, _ in index.calls)
    hits = index.search("heron")
    assert [hit.session_id for hit in hits] == [lifecycle.session_id] * len(hits) and hits
    lifecycle.close()
    index.close()


async def test_nothing_is_indexed_without_a_session(manager: SessionManager) -> None:
    server = AgentAssistServer()
    server.index_in_background()  # before initialize: no lifecycle
    assert server.engine.indexing._running is None
    server.lifecycle = make_lifecycle(manager)  # no session yet
    server.index_in_background()
    assert server.engine.indexing._running is None


async def test_exit_saves_the_session_without_waiting_for_a_running_sync(
    manager: SessionManager,
) -> None:
    server, index = await syncing(manager)
    lifecycle = server.lifecycle
    session_id = lifecycle.session_id
    exiting = threading.Thread(target=server.autosave, args=("end of input",))
    exiting.start()
    saved = await asyncio.to_thread(_wait_for, lambda: lifecycle.session is None)
    assert saved and not index.release.is_set()  # saved and released while the sync is held
    assert manager.layout.snapshot_path(session_id).exists()
    index.release.set()
    await asyncio.to_thread(exiting.join, 10)
    assert not exiting.is_alive()
    assert len(index.calls) == 1  # the running sync was not queued behind with another


def _wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
