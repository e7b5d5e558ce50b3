"""Workspace files as checkpoints and restores touch them: never through a symlink or outside.

Read and written in place (a hard-linked file is replaced, not written through), with the
permission bits a checkpoint keeps (`MODE_BITS`: never setuid, setgid or sticky).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..storage import StorageError
from .safe_paths import is_safe_relative_path

MODE_BITS = 0o777  # what a checkpoint keeps of a file's mode: never setuid, setgid, sticky
UNKNOWN_MODE = 0o600  # a file restored from a record that has no mode for it


def is_symlink(path: Path) -> bool:
    """Return True if `path` itself is a symlink (not followed)."""
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def file_mode(root: Path, relative: str) -> int | None:
    """Return a regular workspace file's permission bits (`MODE_BITS`), or None."""
    try:
        st = os.lstat(root / relative)
    except OSError:
        return None
    return st.st_mode & MODE_BITS if stat.S_ISREG(st.st_mode) else None


def set_file_mode(root: Path, relative: str, mode: int | None) -> None:
    """Give a regular workspace file `mode` (`MODE_BITS` of it); never through a symlink."""
    if mode is None or not is_safe_relative_path(root, relative):
        return
    try:
        fd = os.open(root / relative, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, mode & MODE_BITS)
    finally:
        os.close(fd)


def read_workspace_file(root: Path, relative: str) -> bytes | None:
    """Read a regular workspace file without following symlinks."""
    if not is_safe_relative_path(root, relative):
        return None
    try:
        fd = os.open(root / relative, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a directory: fdopen would refuse it
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    except OSError:
        return None
    finally:
        os.close(fd)


def write_workspace_file(root: Path, relative: str, data: bytes, mode: int | None = None) -> None:
    """Write a workspace file in place: never through a symlink, never outside the root.

    `mode` (its `MODE_BITS`) is the file's afterwards; None: it keeps its own, or a new
    one gets 0644 less the umask.
    """
    if not is_safe_relative_path(root, relative):
        raise StorageError(f"refusing to write {relative!r}: outside the workspace")
    target = root / relative
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    if not is_safe_relative_path(root, relative):  # a parent may have been a symlink
        raise StorageError(f"refusing to write {relative!r}: outside the workspace")
    unlink_if_hard_linked(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(target, flags, 0o644 if mode is None else mode & MODE_BITS)
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:  # set exactly: the umask and an existing file's mode aside
                os.fchmod(fh.fileno(), mode & MODE_BITS)
            fh.write(data)
    except OSError as exc:
        raise StorageError(f"cannot write {relative}: {exc.strerror}") from None


def unlink_if_hard_linked(target: Path) -> None:
    """Remove `target` if it is a file with other hard links (their bytes stay untouched).

    Writing in place (`O_TRUNC`) would change every name of the inode, which may live
    outside the workspace; a fresh file is created instead.
    """
    try:
        st = os.lstat(target)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        os.unlink(target)
