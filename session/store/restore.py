"""One restore of a session from its snapshot and the events after it, whichever store.

A stored snapshot is parsed once, the same way (`parse_snapshot`): migrated, validated,
checked to name its session; a newer schema's read but makes the session read-only.

Start-up cost does not grow with the log: the snapshot's state takes the events after its
`last_seq`, and the history continues from its recent messages. When that cannot be done
(no snapshot, or a history that needs every event), the state and the history are rebuilt
from every event, keeping what only the snapshot knows. The local store
(`local/opening.py`) and PostgreSQL (`pg/opening.py`) both open through it; they differ
only in where the events come from and what a damaged source means.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import ValidationError

from ..derive.history import HistoryBuilder, ReplayRequiredError, build_history
from ..events import Event
from ..snapshot import (
    FutureSchemaError,
    SessionState,
    apply_event_to_state,
    migrate_snapshot,
    state_from_events,
)

logger = logging.getLogger(__name__)

# What only a snapshot knows: the manifest and its caches, where the session lives.
_KEPT = (
    "file_stats",
    "stat_cache",
    "dir_stats",
    "tracked_patterns",
    "manifest_recorded_ns",
    "agent_spec_path",
    "instance_id",
    "workspace_root",
)


def continue_snapshot(state: SessionState, tail: Sequence[Event]) -> HistoryBuilder | None:
    """Fold the events after the snapshot into `state`; return the history continued.

    None: the history needs every event (`rebuild`); `state` has taken the tail anyway.
    """
    messages = [] if state.persistence == "metadata" else state.recent_messages
    builder = HistoryBuilder.from_snapshot(messages, state.last_seq)
    try:
        for event in tail:
            builder.apply(event)
        continued = True
    except ReplayRequiredError:
        continued = False
    for event in tail:
        apply_event_to_state(state, event)
    return builder if continued else None


def rebuild(
    session_id: str, events: Sequence[Event], snapshot: SessionState | None
) -> tuple[SessionState, HistoryBuilder]:
    """Rebuild the state and the history from every event, keeping what only `snapshot` knew."""
    state = state_from_events(session_id, list(events))
    if snapshot is not None:
        state.file_manifest = snapshot.file_manifest or state.file_manifest
        for name in _KEPT:
            setattr(state, name, getattr(snapshot, name))
        state.created_at = min(state.created_at, snapshot.created_at)
    return state, build_history(list(events))


def without_content(state: SessionState, builder: HistoryBuilder) -> HistoryBuilder:
    """Return the history of a session kept with `persistence: metadata`: nothing to send.

    Its events hold placeholders, never conversation; other sessions' history is returned
    as it is.
    """
    if state.persistence != "metadata":
        return builder
    return HistoryBuilder(base_seq=state.last_seq, open_turn=builder.open_turn)


def parse_snapshot(
    raw: object, session_id: str, where: str, warnings: list[str] | None, *, log: bool = True
) -> tuple[SessionState | None, str | None]:
    """Return a stored snapshot's state (migrated, validated) or None, and why read-only.

    One that cannot be used is ignored with a warning starting with `where` (the events
    rebuild it); one of a newer schema is read but makes the session read-only; one that
    names another session is ignored. `log`: the warning is logged too.
    """

    def ignored(why: str) -> None:
        message = f"{where}: snapshot ignored ({why})"
        if log:
            logger.warning("%s", message)
        if warnings is not None:
            warnings.append(message)

    if not isinstance(raw, dict):
        ignored("not a JSON object")
        return None, None
    read_only: str | None = None
    try:
        data, _version = migrate_snapshot(raw)
    except FutureSchemaError as exc:
        data, read_only = dict(raw), str(exc)
    except ValueError as exc:
        ignored(str(exc))
        return None, None
    try:
        state = SessionState.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        ignored(f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}")
        return None, read_only
    if state.session_id != session_id:
        ignored(f"it names session {state.session_id}")
        return None, read_only
    return state, read_only
