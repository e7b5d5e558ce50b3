"""A session's snapshot row read back: the one parse (`store/restore.py`), warnings kept.

One that cannot be used is ignored with a warning (the events rebuild it); one of a newer
schema is read but makes the session read-only.
"""

from __future__ import annotations

from typing import Any

from ..snapshot import SessionState
from ..store.restore import parse_snapshot as parse


def parse_snapshot(
    raw: dict[str, Any], session_id: str, warnings: list[str] | None = None
) -> tuple[SessionState | None, str | None]:
    """Return the snapshot's state (migrated) or None, and why it is read-only, if it is."""
    return parse(raw, session_id, f"session {session_id}", warnings, log=False)
