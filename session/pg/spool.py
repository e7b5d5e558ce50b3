"""The offline spool: a session's events kept in a local file while the database is away.

`<store root>/spool/<name>_<digest>/<session>.events.jsonl` (the project's name and a digest
of its key) holds, in the local log's line format and with its durability (one `write()`
per event, an `fsync` at durable points), the events PostgreSQL did not take, numbered
where the database's log left off. When the database is back they are appended there in
order (`SessionWriter.copy`: their seqs must continue the session's exactly) and the file
is deleted. A process killed while spooling leaves the file: the next open of the
session, or the next start of a server for the project, replays it first. Events in the
spool are scrubbed as they would be in the database.

A process writing a spool holds an `flock` on it (`hold`), as the database's advisory lock
is gone while it is away: another server of this machine neither sends it (`in_use`) nor
opens its session meanwhile, so no event is written to a file already sent and removed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no spool is held
    fcntl = None  # type: ignore[assignment]

from ..log.writer import EventLog
from ..paths import is_valid_session_id, named_dir
from ..redaction import Redactor
from ..storage import ensure_private_dir, fsync_dir, unlink_quiet
from ..workspace.identity import ProjectIdentity

logger = logging.getLogger(__name__)

SPOOL_DIR = "spool"
_SUFFIX = ".events.jsonl"


def spool_dir(home: Path, identity: ProjectIdentity) -> Path:
    """Return `<home>/spool/<name>_<digest>`: one plain directory whatever the project's key.

    The key is never a path: a remote's path may hold `..`, which a hostile repository's
    `.git/config` could use to send the spool anywhere.
    """
    return home / SPOOL_DIR / named_dir(identity.name, identity.key, 16)


def adopt_legacy_spool(home: Path, identity: ProjectIdentity) -> None:
    """Move spool files from where an earlier version kept them (`spool/<key>/`) to ours.

    Only from a plain directory strictly inside `spool/` (a key holding `..` is not
    followed), and never over a file already there; what cannot be moved stays.
    """
    root = home / SPOOL_DIR
    legacy, ours = root / identity.key, spool_dir(home, identity)
    try:
        inside = os.path.realpath(legacy).startswith(os.path.realpath(root) + os.sep)
        if not inside or legacy.is_symlink() or not legacy.is_dir():
            return
        names = [name for name in os.listdir(legacy) if name.endswith(_SUFFIX)]
    except (OSError, ValueError):
        return
    for name in names:
        source, target = legacy / name, ours / name
        if not is_valid_session_id(name.removesuffix(_SUFFIX)) or source.is_symlink():
            continue
        try:
            ensure_private_dir(root)
            ensure_private_dir(ours)
            if not target.exists():
                os.rename(source, target)
                fsync_dir(ours)
                logger.info("spooled events of %s moved to %s", name, ours)
        except OSError as exc:
            logger.warning("%s: not moved to %s (%s)", source, ours, exc)


class Spool:
    """The spooled events of one session."""

    def __init__(self, directory: Path, session_id: str, redactor: Redactor) -> None:
        if not is_valid_session_id(session_id):
            raise ValueError(f"invalid session id {session_id!r}")
        self.directory = directory
        self.path = directory / f"{session_id}{_SUFFIX}"
        self.redactor = redactor
        self._log: EventLog | None = None
        self._held: int | None = None  # the fd of this process's flock on the file

    def hold(self) -> None:
        """Flock the file while this process writes it (nothing if it does not exist yet)."""
        if self._held is not None or fcntl is None:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # a probe's instant, or another writer: written on all the same
            logger.warning("%s: held by another process", self.path)
            return
        self._held = fd

    def _let_go(self) -> None:
        fd, self._held = self._held, None
        if fd is not None:
            os.close(fd)  # and with it the flock

    @property
    def exists(self) -> bool:
        """Return True if the file holds (or held) events not yet in the database."""
        return self.path.is_file()

    def write(self, raws: Sequence[Mapping[str, Any]], *, durable: bool) -> None:
        """Append events (numbered, not yet scrubbed); fsync if `durable`. Raises `LogError`."""
        if not raws:
            return
        if self._log is None:
            ensure_private_dir(self.directory.parent.parent)
            ensure_private_dir(self.directory.parent)
            ensure_private_dir(self.directory)
            fresh = not self.path.exists()
            self._log = EventLog(self.path, next_seq=int(raws[0]["seq"]), redactor=self.redactor)
            if fresh:
                self._log.append_raw(b"", int(raws[0]["seq"]))  # create it...
                fsync_dir(self.directory)  # ...and its name survives a crash
            self.hold()
        lines = b"".join(
            orjson.dumps(
                {**raw, "data": self.redactor.scrub(dict(raw["data"]))}, option=orjson.OPT_UTC_Z
            )
            + b"\n"
            for raw in raws
        )
        self._log.append_raw(lines, int(raws[-1]["seq"]) + 1)
        if durable:
            self._log.sync()

    def read(self) -> list[dict[str, Any]]:
        """Return the spooled events, in order (a torn last line, from a crash, is left out)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        events: list[dict[str, Any]] = []
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                break  # only the last line can be torn: nothing after it was written
            if isinstance(value, dict):
                events.append(value)
        return events

    def close(self) -> None:
        """Fsync and close the file (it stays until replayed)."""
        if self._log is not None:
            self._log.close()
            self._log = None
        self._let_go()

    def remove(self) -> None:
        """Delete the file once its events are in the database."""
        if self._log is not None:
            self._log.close()
            self._log = None
        removed = unlink_quiet(self.path)  # still held: no other process sends it meanwhile
        self._let_go()
        if removed:
            fsync_dir(self.directory)


def remove_left_spool(directory: Path, session_id: str) -> Path | None:
    """Delete the spool a server that stopped offline left of a deleted session; return it."""
    spool = Spool(directory, session_id, Redactor())
    if not spool.exists:
        return None
    spool.remove()
    return spool.path


def in_use(directory: Path, session_id: str) -> bool:
    """Return True if a process (this one too) holds the session's spool: it is writing it."""
    if fcntl is None or not is_valid_session_id(session_id):
        return False
    try:
        fd = os.open(
            directory / f"{session_id}{_SUFFIX}", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        )
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def spooled_sessions(directory: Path) -> Iterator[str]:
    """Yield the ids of the sessions with a spool file in `directory`."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in sorted(names):
        session_id = name.removesuffix(_SUFFIX)
        if name.endswith(_SUFFIX) and is_valid_session_id(session_id):
            yield session_id
