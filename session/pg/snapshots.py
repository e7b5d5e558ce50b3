"""A session's snapshot row read back: migrated, validated, and checked to name its session.

One that cannot be used is ignored with a warning (the events rebuild it); one of a newer
schema is read but makes the session read-only.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..snapshot import FutureSchemaError, SessionState, migrate_snapshot


def parse_snapshot(
    raw: dict[str, Any], session_id: str, warnings: list[str] | None = None
) -> tuple[SessionState | None, str | None]:
    """Return the snapshot's state (migrated) or None, and why it is read-only, if it is."""
    read_only: str | None = None
    try:
        data, _version = migrate_snapshot(raw)
    except FutureSchemaError as exc:
        data, read_only = raw, str(exc)
    except ValueError as exc:
        _warn(warnings, f"session {session_id}: snapshot ignored ({exc})")
        return None, None
    try:
        state = SessionState.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]["msg"] if exc.errors() else exc
        _warn(warnings, f"session {session_id}: snapshot ignored ({first})")
        return None, read_only
    if state.session_id != session_id:
        _warn(warnings, f"session {session_id}: snapshot ignored (it names another)")
        return None, read_only
    return state, read_only


def _warn(warnings: list[str] | None, message: str) -> None:
    if warnings is not None:
        warnings.append(message)
