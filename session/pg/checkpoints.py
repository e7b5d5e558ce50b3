"""Checkpoints in PostgreSQL: the same records and restore plans, blobs as rows.

`checkpoints.py` `Checkpoints` decides what a checkpoint keeps and how a restore is
planned; this only stores its records and blobs in the database (`pg/blobs.py`): a blob
once per role, shared by all the role's sessions, deleted by `collect_garbage` when no
checkpoint keeps it. A checkpoint's blobs and record are one transaction holding the
role's blob lock shared (the collector holds it alone): a blob is never collected between
its write and its record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

from ..checkpoint_storage import CheckpointRecord
from ..errors import SessionError
from .blobs import collect_garbage, put_blob
from .query import Conn
from .store import CheckpointWriter, PgStore


def collect_unreferenced(conn: Conn, schema: str) -> list[str]:
    """Delete this role's blobs no checkpoint keeps and no event names; return them."""
    return collect_garbage(conn, schema)


class PgCheckpointStorage:
    """Checkpoint records and blobs of the connected role (`CheckpointStorage`)."""

    reads_in_threads = False  # the connection is this thread's

    def __init__(self, pg: PgStore) -> None:
        self.pg = pg
        self._writer: CheckpointWriter | None = None  # inside `writing`
        self._written: set[str] = set()  # the file changes' blobs written by `keeping`

    @contextmanager
    def writing(self) -> Iterator[None]:
        """One transaction for the checkpoint's blobs and record (`PgStore.checkpoint_writing`)."""
        with self.pg.checkpoint_writing() as writer:
            self._writer = writer
            try:
                yield
            finally:
                self._writer = None

    def keep_blob(self, digest: str, data: bytes) -> None:
        """Store a checkpoint's copy in the blobs table (in its transaction, inside `writing`)."""
        (self._writer or self.pg).put_blob(data)

    def commit(self, record: CheckpointRecord) -> None:
        """Store the record of the checkpoint being created, in the transaction of `writing`."""
        if self._writer is None:
            raise RuntimeError("a checkpoint is committed inside `writing`")
        self._writer.put_checkpoint(record)

    @contextmanager
    def keeping(self, session_id: str, contents: list[bytes]) -> Iterator[None]:
        """Keep a step's file contents as blobs, once the event naming them is appended.

        In that order no lock is needed: a collection that started before the event saw
        neither (the blob is not there to delete), one after sees the event. Written in one
        pipelined transaction without a WAL flush (the next durable point flushes it); the
        contents this store already wrote (the last write's after is the next one's before)
        are not sent again.
        """
        yield
        fresh = {hashlib.sha256(d).hexdigest(): d for d in contents}
        fresh = {k: v for k, v in fresh.items() if k not in self._written}
        if not fresh:
            return
        if reason := self.pg.read_only_reason:
            raise SessionError(reason)
        with self.pg.connection() as conn, conn.transaction(), conn.pipeline():
            conn.execute("SET LOCAL synchronous_commit = off")
            for data in fresh.values():
                put_blob(conn, self.pg.schema, data)
        if len(self._written) > 4096:
            self._written.clear()
        self._written.update(fresh)

    def collect_garbage(self) -> list[object]:
        """Delete the blobs no checkpoint and no event keeps, whatever their age."""
        self._written.clear()  # a session of ours may have gone: its blobs with it
        return list(self.pg._write(collect_unreferenced))

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

    def write_blob(self, data: bytes, *, durable: bool = True) -> str:
        """Store `data` once; return its digest (committed: `durable` is the database's)."""
        return self.pg.put_blob(data)

    def records(self, session_id: str, warnings: list[str] | None = None) -> list[CheckpointRecord]:
        """Return the session's checkpoints, oldest first."""
        return self.pg.checkpoints(session_id)

    def load(self, session_id: str, number: int) -> CheckpointRecord | None:
        """Return checkpoint `number` of a session, or None."""
        return next((r for r in self.records(session_id) if r.number == number), None)

    def newest_kept(
        self, session_id: str, wanted: set[str], warnings: list[str] | None
    ) -> Iterator[tuple[int, dict[str, str]]]:
        """Yield (number, the wanted paths it keeps with their digests), newest first."""
        for record in reversed(self.records(session_id, warnings)):
            yield record.number, {p: record.files[p] for p in wanted if p in record.files}
