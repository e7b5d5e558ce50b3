"""Numbered checkpoints: a log position plus content-addressed copies of the tracked files.

The policy, whichever store keeps them (`checkpoint_storage.CheckpointStorage`): what a
checkpoint keeps (never a file of secrets nor one holding a secret), which checkpoint
holds each file, and what restoring one will do to the workspace.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from .checkpoint_holding import PendingHolding
from .checkpoint_storage import CheckpointRecord, CheckpointStorage
from .file_changes import SECRET_FILE_WITHHELD, SECRET_WITHHELD
from .redaction import Redactor, is_secret_file_name
from .workspace.files import MODE_BITS, UNKNOWN_MODE, file_mode, is_symlink, read_workspace_file
from .workspace.safe_paths import is_safe_relative_path

__all__ = ["CheckpointRecord", "Checkpoints", "RestorePlan", "withhold_reason"]

WITHHELD_REASONS = (SECRET_WITHHELD, SECRET_FILE_WITHHELD)


def withhold_reason(relative: str, data: bytes, redactor: Redactor | None) -> str | None:
    """Why a workspace file is never copied into a blob (its name, a secret in it), or None."""
    if is_secret_file_name(relative):
        return SECRET_FILE_WITHHELD
    if redactor is not None and redactor.contains_secret(data):
        return SECRET_WITHHELD
    return None


@dataclass
class RestorePlan:
    """What restoring a checkpoint will do to the workspace."""

    record: CheckpointRecord
    writes: list[tuple[str, bytes]] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    created_after: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    withheld: dict[str, str] = field(default_factory=dict)  # path -> why it is not restored
    # The mode each written file gets (none: a file that exists keeps its own).
    modes: dict[str, int] = field(default_factory=dict)
    before: dict[str, bytes | None] = field(default_factory=dict)  # what each write replaces


class Checkpoints:
    """Creates checkpoints of a workspace and plans their restores, over a store's storage."""

    def __init__(self, storage: CheckpointStorage, workspace_root: Path) -> None:
        self.storage = storage
        self.workspace_root = workspace_root

    def store_blob(
        self, root: Path, relative: str, digest: str, redactor: Redactor | None = None
    ) -> str | None:
        """Copy a workspace file into the blob store (once per content).

        Return None if it is kept, else why not: unreadable (changed meanwhile), or it
        holds a secret (the store never keeps one, blobs included).
        """
        data = read_workspace_file(root, relative)
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            return "not kept: unreadable or changed while it was copied"
        why = withhold_reason(relative, data, redactor)
        if why is not None:
            return why
        self.storage.keep_blob(digest, data)
        return None

    def create(
        self,
        session_id: str,
        number: int,
        *,
        seq: int,
        turn: int,
        title: str,
        files: dict[str, str],
        auto: bool = False,
        redactor: Redactor | None = None,
    ) -> CheckpointRecord:
        """Write checkpoint `number`: blobs first, then the record (atomically)."""
        with self.storage.writing():
            root = self.workspace_root
            kept: dict[str, str] = {}
            withheld: dict[str, str] = {}
            modes: dict[str, int] = {}
            for relative, digest in files.items():
                why = self.store_blob(root, relative, digest, redactor)
                if why is None:
                    kept[relative] = digest
                    mode = file_mode(root, relative)
                    if mode is not None:
                        modes[relative] = mode
                elif why in WITHHELD_REASONS:
                    withheld[relative] = why
            record = CheckpointRecord(
                withheld=withheld,
                modes=modes,
                number=number,
                session_id=session_id,
                turn=turn,
                title=title[:120],
                seq=seq,
                files=kept,
                auto=auto,
            )
            self.storage.commit(record)
            return record

    def keeping(self, session_id: str, contents: list[bytes]) -> AbstractContextManager[None]:
        """Keep a step's file contents as blobs; the event naming them is appended inside."""
        return self.storage.keeping(session_id, contents)

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's content if present and intact."""
        return self.storage.read_blob(digest)

    def records(self, session_id: str, warnings: list[str] | None = None) -> list[CheckpointRecord]:
        """Return the session's checkpoints, oldest first (damaged records are reported)."""
        return self.storage.records(session_id, warnings)

    def load(self, session_id: str, number: int) -> CheckpointRecord | None:
        """Return checkpoint `number` of a session, or None."""
        return self.storage.load(session_id, number)

    def collect_garbage(self) -> list[object]:
        """Delete the blobs no checkpoint and no log refers to; return them."""
        return self.storage.collect_garbage()

    def holding(
        self, session_id: str, paths: Iterable[str], warnings: list[str] | None = None
    ) -> dict[str, int | None]:
        """Return, per path, the newest checkpoint that kept a copy of it (None: none did).

        The records are asked newest first, each once, until every path has one; no copy
        is read (a resume's list of changed files).
        """
        found: dict[str, int | None] = dict.fromkeys(paths)
        wanted = set(found)
        if wanted:
            for number, kept in self.storage.newest_kept(session_id, wanted, warnings):
                for path in [p for p in wanted if p in kept]:
                    if self.storage.has_blob(kept[path]):
                        found[path] = number
                        wanted.discard(path)
                if not wanted:
                    break
        return found

    def holding_later(self, session_id: str, paths: list[str]) -> PendingHolding | None:
        """Start `holding` of `paths` (None: no paths); see `checkpoint_holding`.

        In a thread where the storage may be read from one, else when asked.
        """
        if not paths:
            return None
        background = self.storage.reads_in_threads
        return PendingHolding(session_id, paths, self.holding, background=background)

    def plan_restore(self, record: CheckpointRecord, current_files: dict[str, str]) -> RestorePlan:
        """Work out which files to write back; unsafe paths and symlinks are skipped."""
        root = self.workspace_root
        plan = RestorePlan(record)
        for relative, digest in sorted(record.files.items()):
            if not is_safe_relative_path(root, relative) or is_symlink(root / relative):
                plan.skipped.append(relative)
                continue
            if current_files.get(relative) == digest:
                plan.unchanged.append(relative)
                continue
            data = self.storage.read_blob(digest)
            if data is None:
                plan.skipped.append(relative)
                continue
            plan.writes.append((relative, data))
            mode = record.modes.get(relative)
            if mode is not None:
                plan.modes[relative] = mode & MODE_BITS
            elif not os.path.lexists(root / relative):
                plan.modes[relative] = UNKNOWN_MODE
        plan.withheld = dict(record.withheld)
        plan.created_after = sorted(
            p for p in current_files if p not in record.files and p not in record.withheld
        )
        return plan
