"""The find(1) fast path of the manifest scanner: what changed, by ctime, stat'ed in C.

Per file, the Python walk pays an lstat plus a stat_result, a key tuple and dict lookups
(~3 µs); GNU find does the lstats in C in a child process. It prints every directory
(mtime, and whether its ctime moved) and only the regular files whose ctime is newer
than shortly before the previous manifest was recorded: ctime cannot be set back
from user space (unlike mtime: `touch -d`, `rsync -t`, `tar`), and writes, truncation,
renames, links, chmod and utime all move it. So a known file that find did not print, in
a directory whose entries did not change (and that one such file proves is the same
directory, not another moved onto its path), still has the stat the previous manifest
took: no stat of ours. This relies on a manifest's stats being taken after its `recorded_ns`
(the scanner reads the clock first), and on ctime coming from this machine's clock: only
on local filesystems, never when the clock is behind the previous manifest.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

from .patterns import SKIPPED_DIRS

_NANOS = 1_000_000_000
_FIND_MARGIN_NS = 100_000_000  # kernel timestamps lag the clock by up to a tick
_FIND_LOCAL_FS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "zfs", "bcachefs", "overlay"}
)
_FIND_ENV = {"LC_ALL": "C"}


@dataclass
class _Found:
    """What find printed below one walk root: directories and regular files changed since."""

    dirs: dict[str, tuple[int, bool]]  # relative dir -> (mtime_ns, ctime moved)
    files: set[str]  # regular files with a ctime past the safe second: to stat
    moved: set[str]  # those with a ctime past `recorded_ns`: to hash whatever their stat


def _parse_find_time(text: str) -> int:
    """Parse find's `%T@` (`SECONDS.NANOS0`, seconds floored, also when negative) to ns."""
    seconds, _, fraction = text.partition(".")
    return int(seconds) * _NANOS + int(fraction[:9].ljust(9, "0"))


@functools.lru_cache(maxsize=8)
def _gnu_find(search_path: str | None) -> str | None:
    """Return a GNU find with `-newerct @N` and `-printf %T@ %F` (probed once per PATH)."""
    if not sys.platform.startswith("linux"):
        return None
    exe = shutil.which("find", path=search_path)
    if exe is None:
        return None
    try:
        # `/` is newer than 1.5 s after the epoch, older than the year 2096. No shell,
        # fixed arguments: nothing here comes from the workspace.
        probe = [
            exe, "-P", "/", "-maxdepth", "0", "-newerct", "@1.5", "!", "-newerct", "@4000000000",
            "-printf", "%T@\\0%F\\0",
        ]  # fmt: skip
        done = subprocess.run(  # noqa: S603
            probe,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=_FIND_ENV,
            timeout=10,
            check=False,
        )
        fields = done.stdout.decode("ascii").split("\0")
        if done.returncode != 0 or len(fields) != 3 or fields[2]:
            return None
        if _parse_find_time(fields[0]) != os.lstat("/").st_mtime_ns:
            return None
    except (OSError, ValueError, subprocess.SubprocessError, UnicodeDecodeError):
        return None
    return exe


def _find_changes(root: str, start: str, previous_ns: int) -> _Found | None:
    """Run find below `start`; None when it cannot be trusted (then Python stats all)."""
    # Whole seconds, one more back: on filesystems with 1 s timestamps a ctime is truncated.
    safe = (previous_ns - _FIND_MARGIN_NS) // _NANOS - 1
    if safe <= 0 or time.time_ns() < previous_ns or start.rpartition("/")[2] in SKIPPED_DIRS:
        return None
    exe = _gnu_find(os.environ.get("PATH"))
    if exe is None:
        return None
    prune: list[str] = []
    for name in sorted(SKIPPED_DIRS):
        prune += ["-o", "-name", name] if prune else ["-name", name]
    after_safe = ["-newerct", f"@{safe}"]
    after_recorded = ["-newerct", f"@{previous_ns // _NANOS}.{previous_ns % _NANOS:09d}"]
    command = [
        exe, "-P", f"./{start}" if start else ".",
        "-type", "d", "(", "(", *prune, ")", "-prune",
        "-o", *after_safe, "-printf", "C%p\\0%T@\\0%F\\0",
        "-o", "-printf", "d%p\\0%T@\\0%F\\0", ")",
        "-o", "-type", "f", *after_safe, "(",
        *after_recorded, "-printf", "F%p\\0", "-o", "-printf", "f%p\\0", ")",
    ]  # fmt: skip
    try:  # no shell; the start is a checked relative path, after "./" (never an option)
        done = subprocess.run(  # noqa: S603
            command,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_FIND_ENV,
            check=False,
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:  # unreadable or vanishing entries, ...: no partial answers
        return None
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    found = _Found({}, set(), set())
    index = 0
    last = len(fields) - 1  # the output ends with a NUL: the last field is empty
    try:
        while index < last:
            record = fields[index]
            kind = record[0]
            path = record[3:] if len(record) > 2 else ""  # drop the kind and "./"
            if kind in "fF":
                found.files.add(path)
                if kind == "F":
                    found.moved.add(path)
                index += 1
                continue
            if kind not in "Cd" or fields[index + 2] not in _FIND_LOCAL_FS:
                return None
            found.dirs[path] = (_parse_find_time(fields[index + 1]), kind == "C")
            index += 3
    except (IndexError, ValueError):
        return None
    return found
