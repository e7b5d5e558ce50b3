"""Checkpoints as files of one project: `checkpoints/<id>/<n>.json` and `blobs/<aa>/<sha256>`.

Writers of blobs and records hold `blobs/.lock` shared, the garbage collector holds it
alone: a blob no record (and no `files.refs`) refers to while the collector holds it is
garbage, at any age. A checkpoint's copies are fsynced; a file change's are not (a blob
lost in a power cut costs that diff) until a checkpoint keeps the same content.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
from pydantic import ValidationError

from .. import checkpoint_index, file_changes
from ..checkpoint_storage import CheckpointRecord
from ..errors import SessionError
from ..paths import is_valid_session_id
from ..storage import StorageError, atomic_write_bytes, ensure_private_dir, read_file_bytes

if TYPE_CHECKING:
    from .layout import ProjectLayout

_SHA_HEX = frozenset("0123456789abcdef")
BLOBS_LOCK = ".lock"  # `blobs/.lock`: writers share it, the garbage collector holds it alone


class CheckpointFiles:
    """Reads and writes checkpoint records and the blobs they point to (`CheckpointStorage`)."""

    reads_in_threads = True

    def __init__(self, layout: ProjectLayout) -> None:
        self.layout = layout
        self.blobs = layout.blobs_dir
        self._unsynced: set[str] = set()  # blobs written without fsync (`keeping`), this process

    def _dir(self, session_id: str) -> Path:
        if not is_valid_session_id(session_id):
            raise StorageError(f"invalid session id {session_id!r}")
        return self.layout.checkpoints_dir / session_id

    def blob_path(self, digest: str) -> Path:
        """Return `blobs/<aa>/<sha256>` for a hex digest (validated)."""
        if len(digest) != 64 or not set(digest) <= _SHA_HEX:
            raise StorageError(f"invalid blob digest {digest!r}")
        return self.blobs / digest[:2] / digest

    def keep_blob(self, digest: str, data: bytes) -> None:
        """Write a checkpoint's copy (fsynced), or make a file change's unsynced one durable."""
        target = self.blob_path(digest)
        if target.exists():
            if digest in self._unsynced:  # a file change's copy: a checkpoint's is durable
                self._unsynced.discard(digest)
                file_changes.make_durable(target)
            return
        ensure_private_dir(self.blobs)
        ensure_private_dir(target.parent)
        atomic_write_bytes(target, data)

    @contextmanager
    def _blobs_locked(self, *, alone: bool) -> Iterator[None]:
        """Hold `blobs/.lock`: shared to write blobs and records, alone to collect."""
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

    def writing(self) -> AbstractContextManager[None]:
        """Hold off the collector while a checkpoint's blobs and record are written."""
        return self._blobs_locked(alone=False)

    def commit(self, record: CheckpointRecord) -> None:
        """Write the record of a checkpoint being created (inside `writing`)."""
        self._write_record(record)

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
                ensure_private_dir(self.layout.checkpoints_dir)
                ensure_private_dir(directory)
                seed = self.layout.log_path(session_id)
                file_changes.append_refs(directory, digests, seed=seed)
            yield

    def collect_garbage(self) -> list[object]:
        """Delete the blobs no checkpoint and no log of this project refers to; return them.

        Race-free under `blobs/.lock`, whatever the blobs' age.
        """
        if not self.blobs.is_dir() or self.blobs.is_symlink():
            return []
        with self._blobs_locked(alone=True):
            referenced = _log_referenced(self.layout)
            checkpoints = self.layout.checkpoints_dir
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

    def put(self, record: CheckpointRecord) -> None:
        """Write a record copied from elsewhere: new here, and its blobs held already."""
        if self.load(record.session_id, record.number) is not None:
            raise SessionError(
                f"session {record.session_id} already has checkpoint {record.number}"
            )
        missing = [d for d in record.files.values() if not self.blob_path(d).is_file()]
        if missing:
            raise SessionError(
                f"checkpoint {record.number} of session {record.session_id} refers to a blob "
                f"the store does not hold ({missing[0][:12]}…)"
            )
        self.write_record(record)

    def _write_record(self, record: CheckpointRecord) -> Path:
        directory = self._dir(record.session_id)
        ensure_private_dir(self.layout.checkpoints_dir)
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

    def newest_kept(
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


def _log_referenced(layout: ProjectLayout) -> set[str]:
    """Return the blobs a local project's logs name in `FileChange`s (the collector's lock held).

    From each session's `files.refs`; one missing or partial (a fork, a migrated log, one
    older than it) is made whole from the log, once (and kept, empty too, so the next
    collection reads no log twice).
    """
    referenced: set[str] = set()
    checkpoints = layout.checkpoints_dir
    for session_id in set(layout.session_ids()):  # a deleted session's stale refs: ignored
        directory = checkpoints / session_id
        known = file_changes.read_refs(directory)
        refs, whole = known if known is not None else (set(), False)
        if not whole:
            log = layout.log_path(session_id)
            refs |= file_changes.log_digests(log)
            if not log.exists():  # no log (yet, or any more): nothing to remember
                referenced |= refs
                continue
            ensure_private_dir(checkpoints)
            ensure_private_dir(directory)
            payload = "".join(f"{d}\n" for d in sorted(refs)).encode("ascii")
            atomic_write_bytes(directory / file_changes.REFS_FILE, payload, durable=False)
        referenced |= refs
    return referenced


def _reason(exc: ValueError) -> str:
    """Say in one line why a record was not read (`invalid JSON …`, `files.x: …`)."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where}: {first['msg']}" if where else str(first["msg"])
    return str(exc).splitlines()[0]
