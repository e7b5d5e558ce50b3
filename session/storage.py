"""Low-level file primitives: atomic JSON writes, no-follow reads, private directories."""

from __future__ import annotations

import errno as _errno
import logging
import os
import stat
from pathlib import Path
from typing import Any

import orjson

FILE_MODE = 0o600
DIR_MODE = 0o700
MAX_JSON_BYTES = 64 * 1024 * 1024

logger = logging.getLogger(__name__)


class StorageError(Exception):
    """The store cannot be used as asked (unwritable, a symlink where a dir should be...).

    `errno` is set when the operating system refused (a full disk, a read-only store...).
    """

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


# What the user can do about an operating-system refusal, by errno.
_DISK_HINTS = {
    _errno.ENOSPC: "the disk holding the store is full: free some space and try again",
    _errno.EDQUOT: "the disk quota of the store is used up: free some space and try again",
    _errno.EROFS: "the store is on a read-only file system: make it writable and try again",
    _errno.EACCES: "the store is not writable: check its permissions and try again",
    _errno.EPERM: "the store is not writable: check its permissions and try again",
    _errno.EIO: "the disk reported an I/O error: check it and try again",
}


def disk_hint(errno: int | None) -> str | None:
    """Return what to do about a write refused with `errno` (None: nothing to suggest)."""
    return None if errno is None else _DISK_HINTS.get(errno)


def explain_write_error(message: str, errno: int | None) -> str:
    """`message` plus, for a disk refusal, what to do and that nothing stored is lost."""
    hint = disk_hint(errno)
    if hint is None:
        return message
    return f"{message} ({hint}; everything recorded before this is intact)"


def ensure_private_dir(path: Path) -> None:
    """Create `path` (0700) and its parents; refuse a symlink anywhere we create or use."""
    try:
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise StorageError(
            f"cannot create {path}: {exc.strerror or exc}", errno=exc.errno
        ) from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise StorageError(f"{path} is not a plain directory; refusing to use it")
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        # Another account could read the sessions, or plant files for us to read and write.
        raise StorageError(
            f"{path} belongs to another account (uid {st.st_uid}); refusing to keep sessions "
            "there: set AGENT_ASSIST_HOME to a directory of your own"
        )
    if stat.S_IMODE(st.st_mode) & 0o077:
        try:
            os.chmod(path, DIR_MODE, follow_symlinks=False)
        except OSError as exc:
            logger.warning("%s is open to other accounts and cannot be made private: %s", path, exc)
        else:
            logger.warning(
                "%s was open to other accounts (mode %o): made private (0700)",
                path,
                stat.S_IMODE(st.st_mode),
            )


def fsync_dir(path: Path) -> None:
    """Fsync a directory so a rename or unlink in it is durable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, payload: bytes, *, durable: bool = True) -> None:
    """Write `payload` to `path` atomically: temp file, fsync, rename, fsync dir.

    `durable=False` (a derived cache, verified when read): no fsync.
    """
    tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, FILE_MODE)
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc.strerror or exc}", errno=exc.errno) from None
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except OSError as exc:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise StorageError(f"cannot write {path}: {exc.strerror or exc}", errno=exc.errno) from None
    if durable:
        fsync_dir(path.parent)


def atomic_write_json(path: Path, value: Any) -> None:
    """Write JSON atomically (see `atomic_write_bytes`)."""
    atomic_write_bytes(path, orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")


def read_file_bytes(path: Path, max_bytes: int = MAX_JSON_BYTES) -> tuple[bytes, os.stat_result]:
    """Read a regular file without following a symlink: (its bytes, its stat).

    Raise FileNotFoundError, or ValueError with a readable reason.
    """
    try:
        # O_NONBLOCK: a FIFO planted in the store must not hang the reader (no effect on files)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ValueError(f"cannot open ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_size > max_bytes:
            raise ValueError(f"too large ({st.st_size} bytes, limit {max_bytes})")
        return fh.read(max_bytes + 1), st


def parse_json(data: bytes) -> Any:
    """Parse JSON; raise ValueError with a readable reason."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc})") from None


def read_json_file(path: Path, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """Read JSON without following a symlink; raise ValueError with a readable reason."""
    return parse_json(read_file_bytes(path, max_bytes)[0])


def unlink_quiet(path: Path) -> bool:
    """Remove a file if present; return True if something was removed."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True
