"""The two sides of a copy between stores (`transfer.py`): what a source gives, what a target takes.

The local store's (`local/importing.py`) and PostgreSQL's (`pg/importing.py`) implement both.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .checkpoints import CheckpointRecord
from .snapshot import SessionState

Raw = dict[str, Any]  # an event as its log line's JSON object


class SessionSource(Protocol):
    """What a store gives to be copied from (a target is read the same way to verify)."""

    @property
    def description(self) -> str:
        """Return where the sessions are, for messages (never a password)."""
        ...

    def session_ids(self) -> list[str]:
        """Return the ids of the project's sessions."""
        ...

    def exists(self, session_id: str) -> bool:
        """Return True if the store holds the session."""
        ...

    def reading(self, session_id: str) -> AbstractContextManager[None]:
        """Hold the session's lock, if it may have a writer, while it is read.

        `SessionLockedError` when a running writer holds it.
        """
        ...

    def raw_events(self, session_id: str) -> list[Raw]:
        """Return the session's readable events as JSON objects, in seq order."""
        ...

    def events_to_copy(self, session_id: str) -> tuple[list[Raw], str | None]:
        """Return `raw_events`, and in words what of the session cannot be read (None: all)."""
        ...

    def snapshot(self, session_id: str) -> SessionState | None:
        """Return the session's stored snapshot, or None."""
        ...

    def checkpoints(self, session_id: str) -> list[CheckpointRecord]:
        """Return the session's checkpoint records, by number."""
        ...

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's bytes if stored and intact."""
        ...


class SessionImport(Protocol):
    """A session being written into the target, the target's lock held."""

    def existing_events(self) -> list[Raw]:
        """Return the events the target holds already (those of an interrupted copy too)."""
        ...

    def append_events(self, raws: Sequence[Raw]) -> None:
        """Append events continuing the target's; durable when this returns."""
        ...

    def publish(self) -> None:
        """Make the appended events the session's log (a no-op where they already are)."""
        ...

    def put_blob(self, data: bytes) -> str:
        """Store a blob once; return its SHA-256."""
        ...

    def put_checkpoint(self, record: CheckpointRecord) -> None:
        """Store a checkpoint record (its blobs are stored first)."""
        ...

    def needs_snapshot(self, snapshot: SessionState | None) -> bool:
        """Return True if the target's snapshot is missing or behind `snapshot`."""
        ...

    def finish(self, snapshot: SessionState | None, events: Sequence[Raw]) -> None:
        """Store the snapshot and the listing's times, once the events are all there."""
        ...


class SessionTarget(SessionSource, Protocol):
    """A store sessions can be copied into."""

    def importing(self, session_id: str, start: Raw) -> AbstractContextManager[SessionImport]:
        """Take the session's lock (creating it from `start`, its first event, if new)."""
        ...
