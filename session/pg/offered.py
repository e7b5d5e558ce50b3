"""Which session an editor instance is offered, and where and when each was last written.

The part of `PgSessionStore` the resume offer reads (`session/lifecycle/previous.py`):
pointers, the latest session, its host and last activity. From the database, or while it
has not answered since the server started, from what this machine has (`offline.py`).
"""

from __future__ import annotations

from datetime import datetime

from ..events import EVENT_ADAPTER
from ..paths import is_valid_session_id
from ..store.editor import EditorProcess
from .errors import DatabaseUnreachableError
from .offline import OfflineStart


class Offered(OfflineStart):
    """Pointers, hosts and times of a project's sessions (mixed into `PgSessionStore`)."""

    def exists(self, session_id: str) -> bool:
        """Return True if this project has the session (another project's is not seen)."""
        raise NotImplementedError

    def last_turn_end(self, session_id: str) -> str | None:
        """Return how the session's last turn ended when not completed (`interrupted`…)."""
        if self.offline_reason is not None or not is_valid_session_id(session_id):
            return None
        return self.pg.last_turn_end(session_id)

    def last_event_time(self, session_id: str) -> datetime | None:
        """Return the time of the session's last event (recovery markers aside)."""
        if self.offline_reason is not None:
            return self.away_last_time(session_id)
        row = self.pg.session(session_id) if is_valid_session_id(session_id) else None
        if row is None or row.next_seq == 0:
            return None
        for raw in reversed(self.pg.read_events(session_id, max(0, row.next_seq - 4))):
            if raw.get("type") != "session/recover":
                return EVENT_ADAPTER.validate_python(raw).ts
        return None

    def latest_elsewhere(self) -> tuple[str, str | None] | None:
        """Return the project's most recently active session and the host it was written on.

        The store is shared: an editor instance with no session of its own here is offered
        the one the user last worked in, on whichever machine (one with a turn: a session
        saved at an exit without one has nothing to resume).
        """
        if self.offline_reason is not None:
            return self.away_latest()
        rows = [row for row in self.pg.list_sessions(self.project) if row.turns > 0]
        return (rows[0].session_id, rows[0].host) if rows else None

    def session_host(self, session_id: str) -> str | None:
        """Return the machine the session was last opened for writing on."""
        if self.offline_reason is not None:
            entry = self.cache.get(session_id)
            return entry.get("host") if entry else None
        row = self.pg.session(session_id) if is_valid_session_id(session_id) else None
        return row.host if row is not None else None

    def read_pointer(self, instance_id: str, warnings: list[str] | None = None) -> str | None:
        """Return the session this editor instance last used, if it still exists."""
        if self.offline_reason is not None:
            return self.away_pointer(instance_id)
        session_id = self.pg.pointer(self.project, instance_id)
        if session_id is not None and not self.exists(session_id):
            if warnings is not None:
                warnings.append(f"instance {instance_id}: session {session_id} no longer exists")
            return None
        return session_id

    def write_pointer(
        self, instance_id: str, session_id: str, editor: EditorProcess | None = None
    ) -> None:
        """Point this editor instance at a session (`editor` not kept: a pid says nothing here).

        While the database is away, or before the session has its row, it is written later.
        """
        if self.offline_reason is None:
            try:
                self.pg.set_pointer(self.project, instance_id, session_id)
            except DatabaseUnreachableError:
                self._pending_pointers[instance_id] = session_id  # gone since: written later
        else:
            self._pending_pointers[instance_id] = session_id  # with the session's row
        self.cache.set_pointer(instance_id, session_id)

    def delete_pointer(self, instance_id: str) -> None:
        """Forget this editor instance's pointer."""
        self.pg.delete_pointer(self.project, instance_id)
