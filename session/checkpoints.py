"""Numbered checkpoints: a log position plus content-addressed copies of the tracked files."""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import orjson
from pydantic import BaseModel, Field, ValidationError

from . import checkpoint_index, file_changes
from .checkpoint_holding import PendingHolding
from .events import utcnow
from .file_changes import SECRET_FILE_WITHHELD, SECRET_WITHHELD
from .paths import is_valid_session_id
from .redaction import Redactor, is_secret_file_name
from .storage import (
    StorageError,
    atomic_write_bytes,
    ensure_private_dir,
    read_file_bytes,
)
from .store.layout import ProjectLayout
from .workspace.files import MODE_BITS, UNKNOWN_MODE, file_mode, is_symlink, read_workspace_file
from .workspace.safe_paths import is_safe_relative_path

_SHA_HEX = frozenset("0123456789abcdef")
WITHHELD_REASONS = (SECRET_WITHHELD, SECRET_FILE_WITHHELD)
BLOBS_LOCK = ".lock"  # `blobs/.lock`: writers share it, the garbage collector holds it alone


def withhold_reason(relative: str, data: bytes, redactor: Redactor | None) -> str | None:
    """Why a workspace file is never copied into a blob (its name, a secret in it), or None."""
    if is_secret_file_name(relative):
        return SECRET_FILE_WITHHELD
    if redactor is not None and redactor.contains_secret(data):
        return SECRET_WITHHELD
    return None


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


class CheckpointStore:
    """Reads and writes checkpoint records and the blobs they point to."""

    def __init__(self, manager: ProjectLayout) -> None:
        self.manager = manager
        self.workspace_root = manager.workspace_root
        self.blobs = manager.blobs_dir
        self._unsynced: set[str] = set()  # blobs written without fsync (`keeping`), this process

    def _dir(self, session_id: str) -> Path:
        if not is_valid_session_id(session_id):
            raise StorageError(f"invalid session id {session_id!r}")
        return self.manager.checkpoints_dir / session_id

    def blob_path(self, digest: str) -> Path:
        """Return `blobs/<aa>/<sha256>` for a hex digest (validated)."""
        if len(digest) != 64 or not set(digest) <= _SHA_HEX:
            raise StorageError(f"invalid blob digest {digest!r}")
        return self.blobs / digest[:2] / digest

    def store_blob(
        self, root: Path, relative: str, digest: str, redactor: Redactor | None = None
    ) -> str | None:
        """Copy a workspace file into the blob store (once per content).

        Return None if it is kept, else why not: unreadable (changed meanwhile), or it
        holds a secret (the store never keeps one, blobs included).
        """
        target = self.blob_path(digest)
        data = read_workspace_file(root, relative)
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            return "not kept: unreadable or changed while it was copied"
        why = withhold_reason(relative, data, redactor)
        if why is not None:
            return why
        if target.exists():
            if digest in self._unsynced:  # a file change's copy: a checkpoint's is durable
                self._unsynced.discard(digest)
                file_changes.make_durable(target)
            return None
        ensure_private_dir(self.blobs)
        ensure_private_dir(target.parent)
        atomic_write_bytes(target, data)
        return None

    @contextmanager
    def _blobs_locked(self, *, alone: bool) -> Iterator[None]:
        """Hold `blobs/.lock`: shared to write blobs and records, alone to collect."""
        # So a blob no record refers to while the collector holds it is garbage, at any age.
        ensure_private_dir(self.blobs)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.blobs / BLOBS_LOCK, flags, 0o600)
        except OSError as exc:
            raise StorageError(f"cannot lock {self.blobs}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)

    @contextmanager
    def keeping(self, session_id: str, contents: list[bytes]) -> Iterator[None]:
        """Keep a step's file contents as blobs (unsynced), named as `session_id`'s.

        The event naming them is appended inside: the collector never sees one without
        the other. A blob lost in a power cut costs that diff, nothing else.
        """
        with self._blobs_locked(alone=False):
            digests = []
            for data in contents:
                digest = hashlib.sha256(data).hexdigest()
                if not self.blob_path(digest).exists():
                    self._unsynced.add(self.write_blob(data, durable=False))
                digests.append(digest)
            if digests:
                directory = self._dir(session_id)
                ensure_private_dir(self.manager.checkpoints_dir)
                ensure_private_dir(directory)
                seed = self.manager.log_path(session_id)
                file_changes.append_refs(directory, digests, seed=seed)
            yield

    def collect_garbage(self) -> list[object]:
        """Delete the blobs no checkpoint and no log of this project refers to; return them.

        Race-free under `blobs/.lock`, whatever the blobs' age.
        """
        if not self.blobs.is_dir() or self.blobs.is_symlink():
            return []
        with self._blobs_locked(alone=True):
            referenced = file_changes.log_referenced(self.manager)
            checkpoints = self.manager.checkpoints_dir
            if checkpoints.is_dir() and not checkpoints.is_symlink():
                for entry in os.scandir(checkpoints):
                    if entry.is_dir(follow_symlinks=False) and is_valid_session_id(entry.name):
                        for record in self.records(entry.name):
                            referenced.update(record.files.values())
            removed: list[object] = []
            for bucket in os.scandir(self.blobs):
                if not bucket.is_dir(follow_symlinks=False):
                    continue
                for blob in os.scandir(bucket.path):
                    if blob.name in referenced or not blob.is_file(follow_symlinks=False):
                        continue
                    os.unlink(blob.path)
                    removed.append(Path(blob.path))
        return removed

    def has_blob(self, digest: str) -> bool:
        """Return True if a blob of `digest` is stored (not read: see `read_blob`)."""
        if len(digest) != 64 or not set(digest) <= _SHA_HEX:
            return False
        return os.path.isfile(os.path.join(self.blobs, digest[:2], digest))  # (200: ~0.5 ms)

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's content if present and intact."""
        try:
            fd = os.open(self.blob_path(digest), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as fh:
            data = fh.read()
        return data if hashlib.sha256(data).hexdigest() == digest else None

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
        with self._writing():
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
            self._commit(record)
            return record

    def _writing(self) -> AbstractContextManager[None]:
        """Hold off the collector while a checkpoint's blobs and record are written."""
        return self._blobs_locked(alone=False)

    def _commit(self, record: CheckpointRecord) -> None:
        """Store the record of a checkpoint being created (inside `_writing`)."""
        self._write_record(record)

    def write_record(self, record: CheckpointRecord) -> object:
        """Write a checkpoint record atomically, once each blob it names is there.

        (Its blobs were written first, maybe by another call: one the collector took
        meanwhile is an error, never a record whose content is gone.)
        """
        with self._blobs_locked(alone=False):
            missing = [d for d in set(record.files.values()) if not self.blob_path(d).is_file()]
            if missing:
                raise StorageError(
                    f"checkpoint {record.number} of session {record.session_id} not written:"
                    f" {len(missing)} of its file copies are gone from the store"
                )
            return self._write_record(record)

    def _write_record(self, record: CheckpointRecord) -> Path:
        directory = self._dir(record.session_id)
        ensure_private_dir(self.manager.checkpoints_dir)
        ensure_private_dir(directory)
        path = directory / f"{record.number}.json"
        data = orjson.dumps(record.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n"
        atomic_write_bytes(path, data)
        checkpoint_index.write(path, data, record.session_id, record.files)
        return path

    def write_blob(self, data: bytes, *, durable: bool = True) -> str:
        """Store `data` under its SHA-256 unless a blob of it is there; return the digest."""
        digest = hashlib.sha256(data).hexdigest()
        target = self.blob_path(digest)
        if not target.exists():
            ensure_private_dir(self.blobs)
            ensure_private_dir(target.parent)
            atomic_write_bytes(target, data, durable=durable)
        return digest

    def records(self, session_id: str, warnings: list[str] | None = None) -> list[CheckpointRecord]:
        """Return the session's checkpoints, oldest first (damaged records are reported)."""
        return list(self.newest_first(session_id, warnings))[::-1]

    def newest_first(
        self, session_id: str, warnings: list[str] | None = None
    ) -> Iterator[CheckpointRecord]:
        """Yield the session's checkpoints newest first, each read only when asked for."""
        directory = self._dir(session_id)
        for _, name in self._numbered(directory):
            record = self._read(directory / name, warnings)
            if record is not None and record.session_id == session_id:
                yield record

    @staticmethod
    def _numbered(directory: Path) -> list[tuple[int, str]]:
        """Return the (number, file name) of each record in `directory`, newest first."""
        if not directory.is_dir() or directory.is_symlink():
            return []
        numbers = []
        for entry in os.scandir(directory):
            stem = entry.name.removesuffix(".json")
            if entry.name.endswith(".json") and stem.isdigit():
                numbers.append((int(stem), entry.name))
        return sorted(numbers, reverse=True)

    def load(self, session_id: str, number: int) -> CheckpointRecord | None:
        """Return checkpoint `number` of a session, or None."""
        return self._read(self._dir(session_id) / f"{number}.json", None)

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
            for number, kept in self._newest_kept(session_id, wanted, warnings):
                for path in [p for p in wanted if p in kept]:
                    if self.has_blob(kept[path]):
                        found[path] = number
                        wanted.discard(path)
                if not wanted:
                    break
        return found

    def holding_later(self, session_id: str, paths: list[str]) -> PendingHolding | None:
        """Start `holding` of `paths` in a thread (None: no paths); see `checkpoint_holding`."""
        return PendingHolding(session_id, paths, self.holding) if paths else None

    def _newest_kept(
        self, session_id: str, wanted: set[str], warnings: list[str] | None
    ) -> Iterator[tuple[int, dict[str, str]]]:
        """Yield (number, the wanted paths it keeps with their digests), newest first.

        From each record's index (`checkpoint_index`) when it answers, else the record,
        whose index is then written again.
        """
        directory = self._dir(session_id)
        for number, name in self._numbered(directory):
            path = directory / name
            kept = checkpoint_index.held(path, session_id, wanted)
            if kept is None:
                record = self._read(path, warnings, reindex=True)
                if record is None or record.session_id != session_id:
                    continue
                kept = {p: record.files[p] for p in wanted if p in record.files}
            yield number, kept

    def _read(
        self, path: Path, warnings: list[str] | None, *, reindex: bool = False
    ) -> CheckpointRecord | None:
        try:
            data = read_file_bytes(path, 16 << 20)[0]
            # Parsed and validated in one pass (a 20,000-file record: ~6 ms rather than ~10)
            record = CheckpointRecord.model_validate_json(data)
        except FileNotFoundError:
            return None
        except (ValueError, ValidationError) as exc:
            if warnings is not None:
                warnings.append(f"{path}: checkpoint ignored ({_reason(exc)})")
            return None
        if reindex:
            checkpoint_index.write(path, data, record.session_id, record.files)
        return record

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
            data = self.read_blob(digest)
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


def _reason(exc: ValueError) -> str:
    """Say in one line why a record was not read (`invalid JSON …`, `files.x: …`)."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where}: {first['msg']}" if where else str(first["msg"])
    return str(exc).splitlines()[0]
