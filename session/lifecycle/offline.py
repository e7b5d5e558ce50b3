"""Resuming while a shared store is away: a cached session is continued in a new one.

A PostgreSQL store opened while its database does not answer (`session/pg/offline.py`)
offers the previous session from what this machine has. One born in the spool (a server
of this machine killed while offline) is resumed as it is. One of the database's cannot be
written without its lock (another machine may be writing it), so accepting it starts a
new session, with a new id, whose model is given that session's resume block (its summary
and decisions, from the cached snapshot): the two sessions stay separate when the
database answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..context import build_resume_context, remembered
from .values import PreviousSession

if TYPE_CHECKING:
    from .transitions import LifecycleTransitions


def continue_offline(lifecycle: LifecycleTransitions, previous: PreviousSession) -> bool:
    """Start a new session carrying `previous` if it can only be read now; True if done."""
    store = lifecycle.store
    if getattr(store, "online", True) or previous.source == "seed":
        return False
    if store.read_events(previous.session_id).events:  # born in the spool: resumed as it is
        return False
    state, _ = store.read_snapshot(previous.session_id, lifecycle.warnings)
    if state is None:
        return False
    lifecycle.start_fresh()
    lifecycle.resume_context = build_resume_context(state, None, None, previous.last_active)
    lifecycle.resume_memory = remembered(state)
    lifecycle.warnings.append(
        f"{store.label} cannot be reached: session {previous.session_id} is continued in a "
        f"new session, {lifecycle.session_id}, kept on this machine until the database "
        "answers (the two stay separate)"
    )
    return True
