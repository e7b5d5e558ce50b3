"""What a step (or a drift, or a restore) changed in a file: `FileChange`s and their blobs.

A change is recorded as the SHA-256 digests of the content before and after (None: the
file did not exist / was deleted); the contents themselves are kept as blobs, shared with
the checkpoints, under the checkpoints' rules: a file whose name or content is a secret is
never copied, nor a binary or very large one, nor anything in a metadata-persistence
session (`withheld` says why; the digests are still recorded).

Which blobs a session's log refers to is a projection of the log: locally
`checkpoints/<id>/files.refs` (one digest a line, appended unsynced as blobs are kept; built
from the log when missing, e.g. for a fork, whose copied prefix names its parent's blobs),
read by the garbage collector; PostgreSQL reads the events themselves.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .redaction import Redactor, is_secret_file_name
from .storage import fsync_dir

MAX_COPY_BYTES = 8 << 20  # a larger file's content is not kept (its digests are)
BINARY_WITHHELD = "not kept: binary"
LARGE_WITHHELD = f"not kept: larger than {MAX_COPY_BYTES >> 20} MB"
METADATA_WITHHELD = "metadata"  # a metadata-persistence session keeps no content
SECRET_WITHHELD = "not kept: contains a secret"  # noqa: S105 - a reason (as checkpoints')
SECRET_FILE_WITHHELD = "not kept: its name marks a file of secrets"  # noqa: S105
PARTIAL = b"partial"  # a refs file's line: the log before it was not read
SEED_SCAN_BYTES = 64 << 10  # a longer log is not read on the turn's path (the collector does)
REFS_FILE = "files.refs"  # checkpoints/<id>/files.refs: the blobs the session's log names
CHANGE_EVENTS = {"tool/result": "files", "session/rewind": "files", "workspace/drift": "changes"}


def digest_of(data: bytes | None) -> str | None:
    """Return the SHA-256 hex digest of `data` (None for None: no file)."""
    return None if data is None else hashlib.sha256(data).hexdigest()


@dataclass
class PendingChange:
    """A change not recorded yet: its digests and the contents to keep as blobs."""

    path: str
    before: str | None
    after: str | None
    withheld: str | None = None
    contents: list[bytes] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """Return the `FileChange` as the event holds it."""
        return {
            "path": self.path,
            "before": self.before,
            "after": self.after,
            "withheld": self.withheld,
        }


def withhold_reason(
    path: str, contents: Iterable[bytes], redactor: Redactor | None, metadata: bool
) -> str | None:
    """Why no content of a change to `path` may be kept (None: all of it may)."""
    if metadata:
        return METADATA_WITHHELD
    if is_secret_file_name(path):
        return SECRET_FILE_WITHHELD
    why = None
    for data in contents:
        if redactor is not None and redactor.contains_secret(data):
            return SECRET_WITHHELD  # wins over the others: say the strongest reason
        if len(data) > MAX_COPY_BYTES:
            why = LARGE_WITHHELD
        elif why is None and b"\0" in data[:8192]:
            why = BINARY_WITHHELD
    return why


def prepare(
    path: str,
    before: bytes | None,
    after: bytes | None,
    *,
    redactor: Redactor | None,
    metadata: bool,
    before_digest: str | None = None,
    after_digest: str | None = None,
) -> PendingChange:
    """Make a change of `path` from its contents (or digests, where the content is unknown).

    A side given as bytes is kept as a blob unless withheld; given only as a digest, only
    the digest is recorded (a drift's before: what the manifest last knew).
    """
    contents = [data for data in (before, after) if data is not None]
    change = PendingChange(
        path,
        digest_of(before) if before is not None else before_digest,
        digest_of(after) if after is not None else after_digest,
    )
    change.withheld = withhold_reason(path, contents, redactor, metadata)
    if change.withheld is None:
        change.contents = list({digest_of(d): d for d in contents}.values())
    return change


def contents_of(changes: Iterable[PendingChange]) -> list[bytes]:
    """Return the contents to keep of `changes`, each once."""
    kept: dict[str | None, bytes] = {}
    for change in changes:
        for data in change.contents:
            kept.setdefault(digest_of(data), data)
    return list(kept.values())


def event_digests(event: Any) -> Iterator[str]:
    """Yield the digests an event's `FileChange`s name (an event as its JSON object)."""
    if not isinstance(event, dict):
        return
    key = CHANGE_EVENTS.get(event.get("type", ""))
    data = event.get("data")
    changes = data.get(key) if key is not None and isinstance(data, dict) else None
    for change in changes if isinstance(changes, list) else ():
        if isinstance(change, dict):
            for side in ("before", "after"):
                value = change.get(side)
                if isinstance(value, str):
                    yield value


def log_digests(log_path: Path) -> set[str]:
    """Return the digests a local log's `FileChange`s name (only their lines are parsed)."""
    found: set[str] = set()
    try:
        fd = os.open(log_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return found
    with os.fdopen(fd, "rb") as fh:
        for line in fh:
            if b'"before"' not in line and b'"after"' not in line:
                continue
            try:
                found.update(event_digests(orjson.loads(line)))
            except orjson.JSONDecodeError:
                continue  # a torn last line: the log's reader says so, not this
    return found


def make_durable(path: Path) -> None:
    """Fsync a blob written without one (a file change's), and its directory."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)


def read_refs(directory: Path) -> tuple[set[str], bool] | None:
    """Return the digests of `<dir>/files.refs` and whether they are all the log's.

    None: there is no such file. Not all: started beside a long log it did not read.
    """
    try:
        fd = os.open(directory / REFS_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:
        return set(), False
    with os.fdopen(fd, "rb") as fh:
        lines = fh.read().split()
    found = {line.decode("ascii", "replace") for line in lines if len(line) == 64}
    return found, PARTIAL not in lines


def append_refs(directory: Path, digests: Iterable[str], *, seed: Path | None = None) -> None:
    """Add `digests` to `<dir>/files.refs` (unsynced); a new one starts from `seed`'s log.

    A long log is not read on the turn's path: the file says it is partial, and the
    collector completes it. Lost in a power cut, a line costs that blob's diff.
    """
    wanted = list(digests)
    lines = [d.encode("ascii") for d in wanted]
    if seed is not None and not os.path.lexists(directory / REFS_FILE):
        try:
            size = os.stat(seed).st_size
        except OSError:
            size = 0
        if size > SEED_SCAN_BYTES:
            lines.insert(0, PARTIAL)
        else:
            lines = [d.encode("ascii") for d in sorted(log_digests(seed).union(wanted))]
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(directory / REFS_FILE, flags, 0o600)
    try:
        os.write(fd, b"".join(line + b"\n" for line in lines))
    finally:
        os.close(fd)
