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

import os
import selectors
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from .patterns import SKIPPED_DIRS

_NANOS = 1_000_000_000
_FIND_MARGIN_NS = 100_000_000  # kernel timestamps lag the clock by up to a tick
_FIND_LOCAL_FS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "zfs", "bcachefs", "overlay"}
)
_FIND_ENV = {"LC_ALL": "C"}
FIND_MIN_FILES = 3_000  # below this, starting find costs about what it saves (measured)
_SPLIT_MIN_FILES = 8_000  # below this a second find gains less than it costs to start
_GLOB_CHARS = frozenset("*?[]\\")
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


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


def _probe_command(exe: str) -> list[str]:
    """Return a find run only GNU find answers as expected: `/`, its mtime, its fs type."""
    # `/` is newer than 1.5 s after the epoch, older than the year 2096. No shell, fixed
    # arguments: nothing here comes from the workspace.
    return [
        exe, "-P", "/", "-maxdepth", "0", "-newerct", "@1.5", "!", "-newerct", "@4000000000",
        "-printf", "%T@\\0%F\\0",
    ]  # fmt: skip


def _probe_passed(returncode: int, output: bytes) -> bool:
    try:
        fields = output.decode("ascii").split("\0")
        if returncode != 0 or len(fields) != 3 or fields[2]:
            return False
        return _parse_find_time(fields[0]) == os.lstat("/").st_mtime_ns
    except (OSError, ValueError, UnicodeDecodeError):
        return False


class _GnuFinds:
    """Which `find` on each PATH is a GNU find with `-newerct @N` and `-printf %T@ %F`."""

    def __init__(self) -> None:
        self.verdicts: dict[str | None, str | None] = {}  # probed once per PATH and process

    @staticmethod
    def candidate(search_path: str | None) -> str | None:
        """Return the `find` to probe (None: none, or not on Linux)."""
        if not sys.platform.startswith("linux"):
            return None
        return shutil.which("find", path=search_path)

    def __call__(self, search_path: str | None) -> str | None:
        """Return the GNU find to use (None: none), probing it now if not done yet."""
        if search_path not in self.verdicts:
            exe = self.candidate(search_path)
            done = None if exe is None else _run_all([_probe_command(exe)], "/")
            passed = done is not None and _probe_passed(*done[0])
            self.verdicts[search_path] = exe if passed else None
        return self.verdicts[search_path]


_gnu_find = _GnuFinds()


def _stat_key(exe: str) -> list[int] | None:
    """Return what identifies a `find` binary's content: device, inode, size, times."""
    try:
        st = os.stat(exe)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def proven_find() -> tuple[str, str, list[int]] | None:
    """Return (PATH, find, its stat key) if this process proved that find to be GNU find."""
    search_path = os.environ.get("PATH")
    exe = _gnu_find.verdicts.get(search_path)
    key = None if exe is None else _stat_key(exe)
    return None if exe is None or key is None or search_path is None else (search_path, exe, key)


def trust_proven_find(search_path: str, exe: str, key: list[int]) -> None:
    """Take an earlier process's proof (a scan hint's) if it holds for this PATH's find now.

    The probe is then not run: one process fewer at each start. The same PATH, the same
    `find` on it, the same binary (device, inode, size, mtime, ctime), else probed anew.
    """
    here = os.environ.get("PATH")
    if here != search_path or here in _gnu_find.verdicts:
        return
    if _gnu_find.candidate(here) == exe and _stat_key(exe) == key:
        _gnu_find.verdicts[here] = exe


def split_subtrees(start: str, listing: Mapping[str, tuple[list[str], list[str]]]) -> list[str]:
    """Pick subdirectories of `start` holding about half its known files, for a second find."""
    # The lstats are the cost, and they scale over cores (as git's threads do): two finds
    # walk about half each. Names with glob characters stay with the first (-path patterns).
    entry = listing.get(start)
    if entry is None or not _GLOB_CHARS.isdisjoint(start):
        return []
    sizes: dict[str, int] = {}
    for subdir in entry[1]:
        total = 0
        stack = [subdir]
        while stack:
            below = listing.get(stack.pop())
            if below is not None:
                total += len(below[0])
                stack.extend(below[1])
        sizes[subdir] = total
    whole = len(entry[0]) + sum(sizes.values())
    if whole < _SPLIT_MIN_FILES or _CORES < 2:
        return []
    second: list[str] = []
    share = 0
    # Largest first, ties by name: the same tree gives the same split whatever the order
    # it was listed in (a scan hint predicts it, `prefetch`).
    for subdir in sorted(sizes, key=lambda name: (-sizes[name], name)):
        if (
            0 < sizes[subdir]
            and share + sizes[subdir] <= whole // 2
            and _GLOB_CHARS.isdisjoint(subdir)
        ):
            second.append(subdir)
            share += sizes[subdir]
    return second if share >= whole // 4 else []


def _find_changes(
    root: str, start: str, previous_ns: int, second: Sequence[str] = ()
) -> _Found | None:
    """Run find below `start` (`second`: subtrees for a second find at the same time).

    None when it cannot be trusted (then Python stats all).
    """
    running = start_finds(root, start, previous_ns, second)
    return None if running is None else running.collect()


def start_finds(
    root: str,
    start: str,
    previous_ns: int,
    second: Sequence[str] = (),
    *,
    spooled: bool = False,
    asked_ns: int | None = None,
) -> RunningFinds | None:
    """Start the finds of `_find_changes` (None: find is not to be used here).

    `spooled`: for finds nobody collects for a while (see `RunningFinds`); `asked_ns`:
    when they were asked for, if earlier than now (what they see dates from then).
    """
    # Whole seconds, one more back: on filesystems with 1 s timestamps a ctime is truncated.
    safe = (previous_ns - _FIND_MARGIN_NS) // _NANOS - 1
    if safe <= 0 or time.time_ns() < previous_ns or start.rpartition("/")[2] in SKIPPED_DIRS:
        return None
    search_path = os.environ.get("PATH")
    # A find not yet known to be GNU find is probed along with the walk, not before it.
    probing = search_path not in _gnu_find.verdicts
    exe = _gnu_find.candidate(search_path) if probing else _gnu_find.verdicts[search_path]
    if exe is None:
        _gnu_find.verdicts[search_path] = None
        return None
    prune: list[str] = []
    for name in sorted(SKIPPED_DIRS):
        prune += ["-o", "-name", name] if prune else ["-name", name]
    after_safe = ["-newerct", f"@{safe}"]
    after_recorded = ["-newerct", f"@{previous_ns // _NANOS}.{previous_ns % _NANOS:09d}"]
    # Subtrees gone since the previous manifest are left to the first find (a start point
    # that is not there would fail the second).
    second = [subdir for subdir in second if _is_directory(os.path.join(root, subdir))]
    given: list[str] = []  # the second find's subtrees, which the first leaves out
    for subdir in second:
        given += ["-o", "-path", f"./{subdir}"] if given else ["-path", f"./{subdir}"]

    def expression(leave_out: list[str]) -> list[str]:
        # Inside the directories' branch: find would test a -path on every file otherwise.
        skip = ["-o", "(", *leave_out, ")", "-prune"] if leave_out else []
        return [
            "-type", "d", "(", "(", *prune, ")", "-prune", *skip,
            "-o", *after_safe, "-printf", "C%p\\0%T@\\0%F\\0",
            "-o", "-printf", "d%p\\0%T@\\0%F\\0", ")",
            "-o", "-type", "f", *after_safe, "(",
            *after_recorded, "-printf", "F%p\\0", "-o", "-printf", "f%p\\0", ")",
        ]  # fmt: skip

    # No shell; each start is a checked relative path after "./" (never an option).
    commands = [[exe, "-P", f"./{start}" if start else ".", *expression(given)]]
    if second:
        commands.append([exe, "-P", *(f"./{subdir}" for subdir in second), *expression([])])
    if probing:
        commands.append(_probe_command(exe))
    probe = (search_path, exe) if probing else None
    return RunningFinds(commands, root, probe, spooled=spooled, started_ns=asked_ns)


class RunningFinds:
    """Finds started at once: `collect` waits for them and reads what they found.

    `spooled`: each writes into an anonymous in-memory file rather than a pipe, so it runs
    to its end while nobody reads (a prefetch, collected later; a full pipe would stop it).
    """

    def __init__(
        self,
        commands: list[list[str]],
        cwd: str,
        probing: tuple[str | None, str] | None = None,
        *,
        spooled: bool = False,
        started_ns: int | None = None,
    ) -> None:
        # Before find's first look (`started_ns`: an earlier time, e.g. when they were asked).
        self.started_ns = time.time_ns() if started_ns is None else started_ns
        self.probing = probing  # (PATH, its find) probed by the last command
        self.spools: list[BinaryIO] = []
        self.running: list[subprocess.Popen[bytes]] | None = []
        try:
            for command in commands:
                out: int | BinaryIO = subprocess.PIPE
                if spooled:
                    out = _anonymous_file()
                    self.spools.append(out)
                self.running.append(
                    subprocess.Popen(  # noqa: S603 - fixed arguments, no shell
                        command,
                        cwd=cwd,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.DEVNULL,
                        env=_FIND_ENV,
                    )
                )
        except (OSError, ValueError, subprocess.SubprocessError):
            self.cancel()

    def _wait(self) -> list[tuple[int, bytes]] | None:
        """Wait for every find: (exit status, output) of each; None if one could not run."""
        running, self.running = self.running, None
        if running is None:
            return None
        try:
            if self.spools:
                outputs = []
                for process, spool in zip(running, self.spools, strict=True):
                    process.wait()
                    spool.seek(0)
                    outputs.append(spool.read())
            else:
                outputs = _read_all(running)
        except (OSError, ValueError):
            _kill(running)
            return None
        finally:
            self._close_spools()
        return [(p.returncode, output) for p, output in zip(running, outputs, strict=True)]

    def collect(self) -> _Found | None:
        """Wait for the finds; return what they found (None: not to be trusted)."""
        done = self._wait()
        if self.probing is not None:
            search_path, exe = self.probing
            passed = done is not None and _probe_passed(*done.pop())
            _gnu_find.verdicts[search_path] = exe if passed else None
            if not passed:
                return None
        # Unreadable or vanishing entries, ...: no partial answers.
        if done is None or any(returncode != 0 for returncode, _ in done):
            return None
        found = _Found({}, set(), set())
        for _, output in done:
            if not _parse_into(found, output):
                return None
        return found

    def cancel(self) -> None:
        """Stop the finds (nobody will collect them) and reap them."""
        running, self.running = self.running, None
        if running is not None:
            _kill(running)
        self._close_spools()

    def _close_spools(self) -> None:
        for spool in self.spools:
            spool.close()
        self.spools = []


def _anonymous_file() -> BinaryIO:
    """Return a file in memory, in no directory (a temporary file where there is no memfd)."""
    if hasattr(os, "memfd_create"):
        return os.fdopen(os.memfd_create("agent-assist-find", os.MFD_CLOEXEC), "w+b")
    return tempfile.TemporaryFile()


def _is_directory(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def _kill(running: list[subprocess.Popen[bytes]]) -> None:
    for process in running:
        process.kill()
        if process.stdout is not None:
            process.stdout.close()
        process.wait()


def _run_all(commands: list[list[str]], cwd: str) -> list[tuple[int, bytes]] | None:
    """Run the commands at once: (exit status, output) of each; None if one could not run."""
    return RunningFinds(commands, cwd)._wait()


def _read_all(running: list[subprocess.Popen[bytes]]) -> list[bytes]:
    """Read every process's output to its end, all at once (none waits on a full pipe)."""
    if len(running) == 1:
        return [running[0].communicate()[0]]
    chunks: dict[int, list[bytes]] = {}
    with selectors.DefaultSelector() as selector:
        for process in running:
            assert process.stdout is not None
            selector.register(process.stdout, selectors.EVENT_READ)
            chunks[process.stdout.fileno()] = []
        while selector.get_map():
            for key, _ in selector.select():
                data = os.read(key.fd, 1 << 16)
                if data:
                    chunks[key.fd].append(data)
                else:
                    selector.unregister(key.fileobj)
    outputs = []
    for process in running:
        assert process.stdout is not None
        outputs.append(b"".join(chunks[process.stdout.fileno()]))
        process.stdout.close()
        process.wait()
    return outputs


def _parse_into(found: _Found, output: bytes) -> bool:
    """Add what one find printed to `found`; False if it is not what we asked for."""
    fields = output.decode("utf-8", "surrogateescape").split("\0")
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
                return False
            found.dirs[path] = (_parse_find_time(fields[index + 1]), kind == "C")
            index += 3
    except (IndexError, ValueError):
        return False
    return True
