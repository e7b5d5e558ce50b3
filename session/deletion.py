"""Deleting a session, for every edge and the command line: under its writer lock.

The lock is taken first and held while the session goes, so no process can open the
session between a check and the deletion (`SessionLockedError` if one holds it now).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .store.backend import SessionStore


@dataclass
class Deleted:
    """What a deletion removed: the session's own (files or rows), then unused blobs."""

    removed: list[object] = field(default_factory=list)
    blobs: list[object] = field(default_factory=list)


def has_content(store: SessionStore, session_id: str) -> bool:
    """Return True if a session has anything to keep: a turn, a summary, decisions, messages.

    Read whole (its snapshot, a seed's too, and its log): what `prune --empty` checks
    again under the session's lock before deleting it.
    """
    state, _ = store.read_snapshot(session_id)
    if state is not None and (
        state.turns or state.summary or state.decisions or state.recent_messages
    ):
        return True
    return any(event.turn is not None for event in store.read_events(session_id).events)


def delete_unless_in_use(
    store: SessionStore, session_id: str, *, only_empty: bool = False
) -> Deleted | None:
    """Delete a session while holding its lock; `SessionLockedError` if a process holds it.

    Its events, snapshot, checkpoints and the pointers naming it go (in PostgreSQL with its
    row), then the blobs only its checkpoints kept or only its log named (file changes:
    shared ones stay), whatever their age: nothing else ever deletes them. `only_empty`:
    kept (None) if it has content once the lock is held.
    """
    lock = store.acquire_lock(session_id)
    try:
        if only_empty and has_content(store, session_id):
            return None
        removed = list(store.delete_session(session_id))
    finally:
        lock.release()
    return Deleted(removed, store.checkpoint_store().collect_garbage())
