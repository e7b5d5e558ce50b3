"""Checkpoints in PostgreSQL: the same records and restore plans, blobs as rows.

`CheckpointStore` decides what a checkpoint keeps and how a restore is planned; this only
stores its records and blobs in the database (`pg/blobs.py`): a blob once per role, shared
by all the role's sessions, deleted by `collect_garbage` when no checkpoint keeps it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from ..checkpoints import (
    BLOB_GRACE_SECONDS,
    CheckpointRecord,
    CheckpointStore,
    withhold_reason,
)
from ..errors import SessionError
from ..redaction import Redactor
from ..workspace.files import read_workspace_file
from .store import PgStore


class PgCheckpointStore(CheckpointStore):
    """Checkpoint records and blobs of the connected role."""

    def __init__(self, pg: PgStore, workspace_root: Path) -> None:
        self.pg = pg
        self.workspace_root = workspace_root

    def store_blob(
        self, root: Path, relative: str, digest: str, redactor: Redactor | None = None
    ) -> str | None:
        """Copy a workspace file into the blobs table; None if kept, else why not."""
        data = read_workspace_file(root, relative)
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            return "not kept: unreadable or changed while it was copied"
        why = withhold_reason(relative, data, redactor)
        if why is not None:
            return why
        self.pg.put_blob(data)
        return None

    def _writing(self) -> AbstractContextManager[None]:
        """Nothing to hold: the collector spares blobs younger than its grace."""
        return nullcontext()

    def _commit(self, record: CheckpointRecord) -> None:
        self.write_record(record)

    def collect_garbage(self, grace_seconds: float = BLOB_GRACE_SECONDS) -> list[object]:
        """Delete the blobs no checkpoint keeps (older than `grace_seconds`); return digests."""
        return list(self.pg.collect_blobs(grace_seconds))

    def has_blob(self, digest: str) -> bool:
        """Return True if the blob is stored (and intact)."""
        return self.read_blob(digest) is not None

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's bytes if stored and intact."""
        try:
            return self.pg.blob(digest)
        except SessionError:
            return None

    def write_record(self, record: CheckpointRecord) -> object:
        """Store a checkpoint record (its blobs are stored first)."""
        self.pg.put_checkpoint(record)
        return f"checkpoint {record.number} of session {record.session_id}"

    def write_blob(self, data: bytes) -> str:
        """Store `data` once; return its digest."""
        return self.pg.put_blob(data)

    def newest_first(
        self, session_id: str, warnings: list[str] | None = None
    ) -> Iterator[CheckpointRecord]:
        """Yield the session's checkpoints newest first."""
        yield from reversed(self.records(session_id, warnings))

    def _newest_kept(
        self, session_id: str, wanted: set[str], warnings: list[str] | None
    ) -> Iterator[tuple[int, dict[str, str]]]:
        """Yield (number, the wanted paths it keeps with their digests), newest first."""
        for record in self.newest_first(session_id, warnings):
            yield record.number, {p: record.files[p] for p in wanted if p in record.files}

    def records(self, session_id: str, warnings: list[str] | None = None) -> list[CheckpointRecord]:
        """Return the session's checkpoints, oldest first."""
        return self.pg.checkpoints(session_id)

    def load(self, session_id: str, number: int) -> CheckpointRecord | None:
        """Return checkpoint `number` of a session, or None."""
        return next((r for r in self.records(session_id) if r.number == number), None)
