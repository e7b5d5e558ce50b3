"""What a store keeps of checkpoints, and the storage operations the checkpoint policy needs.

`checkpoints.py` `Checkpoints` decides what a checkpoint keeps and how a restore is
planned; a store keeps the records and the content-addressed blobs they name, under its
own rules for durability and for the garbage collector: the files of a project
(`local/checkpoint_files.py`) or PostgreSQL (`pg/checkpoints.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel, Field

from .events import utcnow


class CheckpointRecord(BaseModel):
    """`checkpoints/<session>/<n>.json`."""

    number: int = Field(ge=1)
    session_id: str
    created_at: datetime = Field(default_factory=utcnow)
    turn: int = 0
    title: str = ""
    seq: int = Field(ge=0)
    files: dict[str, str] = Field(default_factory=dict)
    auto: bool = False
    # Tracked files whose copy was not kept, with why (e.g. they contain a secret).
    withheld: dict[str, str] = Field(default_factory=dict)
    # The permission bits of each kept file (absent in records written before modes were).
    modes: dict[str, int] = Field(default_factory=dict)


class CheckpointStorage(Protocol):
    """Checkpoint records and the blobs they name, as one store keeps them."""

    # May it be read from a worker thread (`Checkpoints.holding_later`)?
    reads_in_threads: bool

    def writing(self) -> AbstractContextManager[None]:
        """Hold off the collector while a checkpoint's blobs and record are written."""
        ...

    def keep_blob(self, digest: str, data: bytes) -> None:
        """Keep a checkpoint's copy of `data` (of that digest) durably, inside `writing`."""
        ...

    def commit(self, record: CheckpointRecord) -> None:
        """Store the record of the checkpoint being created, inside `writing`."""
        ...

    def keeping(self, session_id: str, contents: list[bytes]) -> AbstractContextManager[None]:
        """Keep a step's file contents as blobs around the event naming them (appended inside)."""
        ...

    def collect_garbage(self) -> list[object]:
        """Delete the blobs no checkpoint and no log refers to; return them."""
        ...

    def has_blob(self, digest: str) -> bool:
        """Return True if a blob of `digest` is stored."""
        ...

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's content if present and intact."""
        ...

    def write_blob(self, data: bytes, *, durable: bool = True) -> str:
        """Store `data` once under its SHA-256; return the digest."""
        ...

    def write_record(self, record: CheckpointRecord) -> object:
        """Store a checkpoint record whose blobs are stored; return where it went."""
        ...

    def records(self, session_id: str, warnings: list[str] | None = None) -> list[CheckpointRecord]:
        """Return the session's checkpoints, oldest first (damaged records are reported)."""
        ...

    def load(self, session_id: str, number: int) -> CheckpointRecord | None:
        """Return checkpoint `number` of a session, or None."""
        ...

    def newest_kept(
        self, session_id: str, wanted: set[str], warnings: list[str] | None
    ) -> Iterator[tuple[int, dict[str, str]]]:
        """Yield (number, the wanted paths it keeps with their digests), newest first."""
        ...
