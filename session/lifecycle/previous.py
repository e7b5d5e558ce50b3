"""The session offered for resume: this instance's last one, or a shared store's latest."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..paths import host_name
from ..snapshot import state_from_events
from ..store.backend import SessionStore
from ..store.editor import EditorProcess
from ..store.seed_store import newest_unimported
from ..workspace.tracker import WorkspaceTracker
from .values import PreviousSession

if TYPE_CHECKING:
    from ..snapshot import SessionState

UNHELD_LOOKED_AT = 50  # newest sessions looked at for one no process holds


def newest_unheld_session(store: SessionStore) -> str | None:
    """Return the project's most recently active session with a turn that no process holds."""
    rows, _ = store.list_sessions_page(0, UNHELD_LOOKED_AT)
    rows = [row for row in rows if row.turns > 0]
    held = store.held_locks(row.session_id for row in rows)
    return next((row.session_id for row in rows if row.session_id not in held), None)


def _empty(state: SessionState) -> bool:
    """Return True for one of our sessions with nothing to resume: saved only at an exit.

    No turn, summary, decision or message, and never saved by the user (`/save` makes a
    checkpoint). A session file without a log, as the seed's tool writes them, is offered
    as the seed does.
    """
    content = state.turns or state.summary or state.decisions or state.recent_messages
    return state.last_seq >= 0 and not content and state.checkpoint_count == 0


def find_previous_session(
    store: SessionStore,
    instance_id: str,
    tracker: WorkspaceTracker,
    warnings: list[str],
    *,
    offer_unheld: bool = False,
    editor: EditorProcess | None = None,
) -> PreviousSession | None:
    """Return this instance's previous session if its pointer names a loadable one.

    A session with nothing in it (saved at an exit without a turn, as the seed's exit does)
    is not offered: there is nothing to resume.

    With `offer_unheld` (an instance named after the editor's process, new at each start),
    an instance with no session of its own is offered the project's newest session that
    no live editor holds. With a shared store, an instance with no session of its own is
    offered the project's latest session, wherever it was written (the prompt names the
    machine).

    `editor`: the editor process this instance is named after; the local pointers of that
    editor's earlier launches whose process is gone (and session free) are removed first.
    """
    if editor is not None:
        store.forget_stale_pointers(editor.client, instance_id)
    session_id = store.read_pointer(instance_id, warnings)
    online = getattr(store, "online", True)  # a shared store away: what this machine has
    if session_id is None and offer_unheld and online:
        session_id = newest_unheld_session(store)
    if session_id is None:
        latest = store.latest_elsewhere()
        if latest is None:
            return seed_offer(store) if online else None
        session_id = latest[0]
    # The finds of the resume start now and walk the tree while the snapshot is read.
    tracker.prefetch()
    host = store.session_host(session_id)
    if host == host_name():
        host = None  # the prompt names the machine only when it is another one
    state, _ = store.read_snapshot(session_id, warnings, keep=True)
    last_active = store.last_event_time(session_id)
    if state is None:
        scan = store.read_events(session_id)
        if not any(event.turn is not None for event in scan.events):
            return None
        derived = state_from_events(session_id, scan.events)  # (no snapshot yet: a crash)
        return PreviousSession(
            session_id,
            last_active or scan.events[-1].ts,
            derived.turns,
            derived.title,
            host,
            last_turn=store.last_turn_end(session_id),
        )
    if _empty(state):
        return None
    return PreviousSession(
        session_id,
        last_active or state.updated_at,
        state.turns,
        state.title,
        host,
        last_turn=store.last_turn_end(session_id),
    )


def seed_offer(store: SessionStore) -> PreviousSession | None:
    """Offer the seed's newest session of this project, on the project's first launch here.

    Only while the project has no session of ours at all (in this store: local or the
    database's): a declined offer starts a session whose file (saved at exit) stops the
    offer, as the seed's new session's pointer would. Accepting imports it
    (`resume_or_start`).
    """
    if store.has_sessions():
        return None
    seed = newest_unimported(store)
    if seed is None:
        return None
    return PreviousSession(seed.session_id, seed.updated_at, 0, seed.title, source="seed")
