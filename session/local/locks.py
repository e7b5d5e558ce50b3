"""A local session's writer lock: an `flock` on `sessions/<id>.lock`, gone when let go.

filelock leaves its file behind, so a project had one lock file for every session it ever
opened, and every listing that says which sessions are open elsewhere probed them all
(10,000 files: ~200 ms). Here the holder removes the file before it lets go, so only the
sessions open now (or whose writer died) have one. Taking the lock checks that the file
locked is still the one the path names: a holder may have removed it between our open and
our flock, and a new one may have been made since; then it is taken again.

A probe (`is_held`) locks a file for an instant: a writer that meets it tries again
for `BUSY_WAIT` before it says the session is in use. Without `fcntl` (Windows) filelock
is used as before, and its file stays.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

BUSY_WAIT = 0.05  # seconds a writer retries a lock held for an instant (a probe)
_RETRY_DELAY = 0.002
_ATTEMPTS = 100  # takes of a lock file that keeps being replaced before giving up
_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class LockHeldError(Exception):
    """Another process holds the lock."""


class FileWriterLock:
    """An flock held on `path` through `fd`; `release` removes the file, then unlocks it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @property
    def is_locked(self) -> bool:
        """Whether the lock is still held."""
        return self._fd is not None

    def release(self) -> None:
        """Remove the lock file (if it is still ours) and let go of the lock."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if os.path.samestat(os.lstat(self.path), os.fstat(fd)):
                os.unlink(self.path)  # while held: a process waiting on it takes it again
        except OSError:
            pass  # removed already (a deletion), or not ours: left as it is
        finally:
            os.close(fd)  # closing the descriptor unlocks it


class _PortableLock:
    """filelock, where there is no fcntl: the file stays after release."""

    def __init__(self, path: Path) -> None:
        import filelock

        self._lock = filelock.FileLock(str(path), timeout=BUSY_WAIT, mode=0o600)
        try:
            self._lock.acquire()
        except filelock.Timeout:
            raise LockHeldError(str(path)) from None

    def release(self) -> None:
        self._lock.release()


def take_lock(path: Path) -> FileWriterLock | _PortableLock:
    """Take the lock on `path` (made if missing; never a symlink); raise LockHeldError.

    Other failures (an unwritable directory, a symlink in the way) raise OSError.
    """
    if fcntl is None:  # pragma: no cover - Windows
        return _PortableLock(path)
    deadline = time.monotonic() + BUSY_WAIT
    for _ in range(_ATTEMPTS):
        fd = os.open(path, _FLAGS, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                raise LockHeldError(str(path)) from None
            time.sleep(_RETRY_DELAY)
            continue
        except BaseException:
            os.close(fd)
            raise
        try:
            held = os.fstat(fd)
            if not stat.S_ISREG(held.st_mode):
                raise OSError(errno.EINVAL, "the lock file is not a regular file", str(path))
            ours = os.path.samestat(os.lstat(path), held)
        except FileNotFoundError:
            ours = False
        except BaseException:
            os.close(fd)
            raise
        if ours:
            return FileWriterLock(path, fd)
        os.close(fd)  # removed or replaced since we opened it: lock what is there now
    raise OSError(errno.EAGAIN, "the lock file keeps being replaced", str(path))


def is_held(lock_file: Path, removed: list[Path] | None = None) -> bool:
    """Return True if a process holds the lock on `lock_file`; remove it if none does.

    `removed` collects the lock file, if it was removed (its writer died).
    """
    if fcntl is None:
        return _held_elsewhere(lock_file)
    try:
        fd = os.open(lock_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False  # no server locks anything but a plain file
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # Held by no process: left by a writer that died, or by a release before writers
        # removed their lock files. Removed while locked, as a writer removes its own.
        if os.path.samestat(os.lstat(lock_file), os.fstat(fd)):
            os.unlink(lock_file)
            if removed is not None:
                removed.append(lock_file)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing the only descriptor releases a lock just taken
    return False


def _held_elsewhere(lock_file: Path) -> bool:
    """Probe a lock the portable way: filelock, for an instant (it may create the file)."""
    import filelock

    lock = filelock.FileLock(str(lock_file), timeout=0)
    try:
        lock.acquire()
    except (filelock.Timeout, OSError):
        return True
    lock.release()
    return False
