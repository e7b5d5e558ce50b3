"""Workspace files: safe paths, the tracked-file manifest (sha256 + stat cache) and drift."""

from __future__ import annotations

import functools
import hashlib
import logging
import operator
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

DEFAULT_TRACKED = ("agent_spec.md", "templates/**")
# Never descended into while expanding globs: version control and dependency caches.
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "__pycache__"})
_GLOB_CHARS = re.compile(r"[*?\[]")
_NANOS = 1_000_000_000
_READ_CHUNK = 1 << 16
_ABSENT = object()

logger = logging.getLogger(__name__)
_V = TypeVar("_V")


def is_lexically_safe(relative: object) -> bool:
    """Return True for a canonical relative POSIX path: no `..`, `.`, `//`, NUL, drive or root."""
    if not isinstance(relative, str) or not relative or "\x00" in relative or "\\" in relative:
        return False
    if relative[0] == "/" or (len(relative) > 1 and relative[1] == ":"):
        return False
    return all(part not in ("", ".", "..") for part in relative.split("/"))


def is_safe_relative_path(root: Path, relative: str) -> bool:
    """Return True only for a relative path that stays inside `root` once resolved."""
    if not is_lexically_safe(relative):
        return False
    try:
        root_resolved = root.resolve()
        target = (root_resolved / relative).resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    return target == root_resolved or root_resolved in target.parents


def _segment_regex(segment: str) -> str:
    out = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            close = segment.find("]", i + 1)
            if close == -1:
                out.append(re.escape(char))
            else:
                body = segment[i + 1 : close].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = close
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Compile a workspace glob (`*`, `?`, `[...]`, `**` for any depth) to a regex."""
    segments = [s for s in pattern.strip("/").split("/") if s not in ("", ".")]
    pieces: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            pieces.append(".*" if last else "(?:[^/]+/)*")
        else:
            pieces.append(_segment_regex(segment) + ("" if last else "/"))
    return re.compile("".join(pieces))


@dataclass(frozen=True)
class TrackedPatterns:
    """The globs of tracked files, compiled once."""

    patterns: tuple[str, ...] = DEFAULT_TRACKED

    def __post_init__(self) -> None:
        cleaned = tuple(p.strip() for p in self.patterns if p and p.strip())
        object.__setattr__(self, "patterns", cleaned)
        regex = "|".join(f"(?:{glob_to_regex(p).pattern})" for p in cleaned) or "(?!)"
        object.__setattr__(self, "_regex", re.compile(regex))

    def matches(self, relative: str) -> bool:
        """Return True if `relative` is covered by a tracked glob."""
        pattern: re.Pattern[str] = self.__dict__["_regex"]
        return pattern.fullmatch(relative) is not None

    def walk_roots(self) -> list[str]:
        """Return the directories to walk: the literal prefix of each pattern."""
        roots: set[str] = set()
        for pattern in self.patterns:
            segments = [s for s in pattern.strip("/").split("/") if s not in ("", ".")]
            literal: list[str] = []
            for segment in segments:
                if _GLOB_CHARS.search(segment):
                    break
                literal.append(segment)
            if len(literal) == len(segments):
                roots.add("/".join(literal[:-1]) + "\x00" + literal[-1])  # one exact path
            else:
                roots.add("/".join(literal))
        return sorted(roots)


StatKey = tuple[int, int, int]  # (size, mtime_ns, inode)


@dataclass
class Manifest:
    """Hashes of tracked files, with the stat of each file and walked directory when seen."""

    files: dict[str, str] = field(default_factory=dict)
    stats: dict[str, StatKey] = field(default_factory=dict)
    dirs: dict[str, int] = field(default_factory=dict)
    recorded_ns: int = 0
    hashed: int = 0
    patterns: tuple[str, ...] = ()
    listing: dict[str, tuple[list[str], list[str]]] | None = None


@dataclass
class DriftReport:
    """How the tracked files differ from a manifest."""

    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    unchanged: int = 0
    unsafe: list[str] = field(default_factory=list)

    @property
    def has_drift(self) -> bool:
        """Return True if anything changed."""
        return bool(self.modified or self.deleted or self.created)


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sha256_file(path: Path | str) -> str | None:
    """Hash a regular file without following a symlink; None if it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        # Plain reads: small files (the usual case) take one read and one at EOF.
        digest = hashlib.sha256()
        size = min(st.st_size + 1, _READ_CHUNK)
        while chunk := os.read(fd, size):
            digest.update(chunk)
            size = _READ_CHUNK
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


Listing = dict[str, tuple[list[str], list[str]]]  # dir -> (tracked files, subdirectories)


def _children_index(previous: Manifest) -> Listing:
    """Group a manifest's files and directories by parent directory (cached on it)."""
    if previous.listing is not None:
        return previous.listing
    index: Listing = {d: ([], []) for d in previous.dirs}
    for path in previous.files:
        entry = index.get(path.rpartition("/")[0])
        if entry is not None:
            entry[0].append(path)
    for directory in previous.dirs:
        if directory:
            entry = index.get(directory.rpartition("/")[0])
            if entry is not None:
                entry[1].append(directory)
    previous.listing = index
    return index


# -- the find(1) fast path -------------------------------------------------------------------
# Per file, the Python walk pays an lstat plus a stat_result, a key tuple and dict lookups
# (~3 µs); GNU find does the lstats in C in a child process. It prints every directory
# (mtime, and whether its ctime moved) and only the regular files whose ctime is newer
# than shortly before the previous manifest was recorded: ctime cannot be set back
# from user space (unlike mtime: `touch -d`, `rsync -t`, `tar`), and writes, truncation,
# renames, links, chmod and utime all move it. So a known file that find did not print, in
# a directory whose entries did not change (and that one such file proves is the same
# directory, not another moved onto its path), still has the stat the previous manifest
# took: no stat of ours. This relies on a manifest's stats being taken after its `recorded_ns`
# (the scanner reads the clock first), and on ctime coming from this machine's clock: only
# on local filesystems, never when the clock is behind the previous manifest.
_FIND_MIN_FILES = 3_000  # below this, starting find costs about what it saves (measured)
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


_MTIME = operator.itemgetter(1)


def _pick(keys: list[str], mapping: Mapping[str, _V]) -> tuple[_V, ...]:
    """Return `mapping[k]` for each of `keys` (KeyError if one is missing), looped in C."""
    if len(keys) == 1:
        return (mapping[keys[0]],)
    return operator.itemgetter(*keys)(mapping)  # type: ignore[no-any-return]


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


class _Scanner:
    """One pass over the tracked files: stat, reuse hashes the stat cache proves, list the rest."""

    _DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

    def __init__(self, root: Path, patterns: TrackedPatterns, previous: Manifest | None) -> None:
        self.root = root
        self.root_str = str(root)
        self.patterns = patterns
        self.manifest = Manifest(recorded_ns=time.time_ns(), patterns=patterns.patterns, listing={})
        self.to_hash: list[str] = []
        prev = previous or Manifest()
        self.prev_files = prev.files
        self.prev_stats = prev.stats
        self.prev_dirs = prev.dirs
        # A file (or directory) modified in the same second its stat was recorded may change
        # again without its mtime moving: such "racy" entries are always re-read.
        self.safe_before = (prev.recorded_ns // _NANOS) * _NANOS
        self.prev_recorded_ns = prev.recorded_ns
        # Files find saw changed after the previous manifest was recorded: re-hashed even
        # with the same stat (an edit of the same size whose mtime was put back).
        self.ctime_moved: set[str] = set()
        reusable = bool(previous and previous.dirs and previous.patterns == patterns.patterns)
        self.cached = _children_index(prev) if reusable else {}

    def add(self, path: str, st: os.stat_result) -> None:
        """Take one regular file: reuse its hash if the stat proves it unchanged."""
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        digest = self.prev_files.get(path)
        if (
            digest is not None
            and self.prev_stats.get(path) == key
            and key[1] < self.safe_before
            and path not in self.ctime_moved
        ):
            self.manifest.files[path] = digest
            self.manifest.stats[path] = key
        else:
            self.manifest.stats[path] = key
            self.to_hash.append(path)

    def same_directory(self, files: list[str], printed: set[str]) -> bool:
        """Return True if one known file proves the directory is the one listed before."""
        # A directory moved onto this path (keeping its own mtime, and the ctimes below it)
        # would pass for the old one. A known file find did not print, with one link, has
        # not moved since before the previous manifest: if it is the same inode as then,
        # it is in the same directory. With no file to prove it, the directory is listed.
        for name in files:
            if name in printed:
                continue
            key = self.prev_stats.get(name)
            if key is None:
                return False
            try:
                st = os.stat(os.path.join(self.root_str, name), follow_symlinks=False)
            except (OSError, ValueError):
                return False
            return (
                stat.S_ISREG(st.st_mode)
                and st.st_nlink == 1
                and (st.st_size, st.st_mtime_ns, st.st_ino) == key
            )
        return False

    def take_unchanged_dir(
        self, relative: str, cached: tuple[list[str], list[str]], printed: set[str]
    ) -> None:
        """Take a directory find saw unchanged: its unprinted files keep hash and stat."""
        # The same directory (`same_directory`), same mtime and no ctime change: no entry
        # was added, removed or renamed. A known file find did not print has had no inode
        # change (ctime) since before the previous manifest took its stat, so that stat
        # still holds: no stat of ours.
        files, subdirs = cached
        kept = list(files)  # (the previous listing stays as it was)
        if files:
            try:  # the usual case, in bulk (loops in C): every file known, none racy
                digests = _pick(files, self.prev_files)
                keys = _pick(files, self.prev_stats)
                if max(map(_MTIME, keys)) >= self.safe_before:
                    raise LookupError
            except LookupError:
                kept = self.take_files_one_by_one(files, printed)
            else:
                self.manifest.files.update(zip(files, digests, strict=True))
                self.manifest.stats.update(zip(files, keys, strict=True))
                if printed and (hit := printed.intersection(files)):
                    # Taken back, then stat'ed: changed since (or around) the manifest.
                    for name in hit:
                        del self.manifest.files[name], self.manifest.stats[name]
                    taken = self.take_files_one_by_one(list(hit), printed)
                    if len(taken) < len(hit):
                        kept = [f for f in files if f not in hit or f in taken]
        assert self.manifest.listing is not None
        self.manifest.listing[relative] = (kept, list(subdirs))

    def take_files_one_by_one(self, files: list[str], printed: set[str]) -> list[str]:
        """Take the known files of an unchanged directory; stat those find printed."""
        # `add` re-hashes those changed after the previous manifest (`ctime_moved`).
        kept: list[str] = []
        for name in files:
            key = self.prev_stats.get(name)
            digest = self.prev_files.get(name)
            if key is not None and digest is not None and key[1] < self.safe_before:
                if name not in printed:
                    self.manifest.files[name] = digest
                    self.manifest.stats[name] = key
                    kept.append(name)
                    continue
            try:
                st = os.stat(os.path.join(self.root_str, name), follow_symlinks=False)
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(st.st_mode):
                kept.append(name)
                self.add(name, st)
        return kept

    def walk(self, start: str) -> None:
        """Collect tracked files below `start`, listing only directories that changed."""
        by_find = None
        if self.cached and len(self.prev_files) >= _FIND_MIN_FILES:
            by_find = _find_changes(self.root_str, start, self.prev_recorded_ns)
        if by_find is not None:
            self.ctime_moved |= by_find.moved
        manifest = self.manifest
        listing_out = manifest.listing
        assert listing_out is not None
        files_out = manifest.files
        stats_out = manifest.stats
        prev_files = self.prev_files
        prev_stats = self.prev_stats
        safe_before = self.safe_before
        stack = [start]
        while stack:
            relative = stack.pop()
            if by_find is not None:
                seen = by_find.dirs.get(relative)
                cached = self.cached.get(relative)
                if (
                    seen is not None
                    and not seen[1]
                    and cached is not None
                    and self.prev_dirs.get(relative) == seen[0] < safe_before
                    and self.same_directory(cached[0], by_find.files)
                ):
                    manifest.dirs[relative] = seen[0]
                    self.take_unchanged_dir(relative, cached, by_find.files)
                    stack.extend(cached[1])
                    continue
                # Anything else (a new or changed directory, one whose ctime moved as with
                # `touch -d` or `rsync -t`, one not proven the same) is listed again below.
            try:  # O_NOFOLLOW: a directory replaced by a symlink is never entered
                path = os.path.join(self.root_str, relative) if relative else self.root_str
                fd = os.open(path, self._DIR_FLAGS)
            except OSError:
                continue
            try:
                mtime = os.fstat(fd).st_mtime_ns
                manifest.dirs[relative] = mtime
                cached = self.cached.get(relative) if by_find is None else None
                if cached is not None and self.prev_dirs.get(relative) == mtime < safe_before:
                    # Same directory mtime: no entry was added, removed or renamed, so only
                    # the known files need a stat (relative to the directory: cheap).
                    files, subdirs = cached
                    cut = len(relative) + 1 if relative else 0
                    kept: list[str] = []
                    for name in files:
                        try:
                            st = os.stat(name[cut:], dir_fd=fd, follow_symlinks=False)
                        except OSError:
                            continue
                        if not stat.S_ISREG(st.st_mode):
                            continue
                        kept.append(name)
                        key = (st.st_size, st.st_mtime_ns, st.st_ino)
                        digest = prev_files.get(name)
                        if (
                            digest is not None
                            and prev_stats.get(name) == key
                            and key[1] < safe_before
                        ):
                            files_out[name] = digest
                            stats_out[name] = key
                        else:
                            stats_out[name] = key
                            self.to_hash.append(name)
                    listing_out[relative] = (kept, list(subdirs))
                    stack.extend(subdirs)
                    continue
                found: list[str] = []
                subdirs = []
                with os.scandir(fd) as entries:
                    for entry in entries:
                        if entry.is_symlink():
                            continue
                        if not _is_utf8(entry.name):
                            # Not representable in the JSON manifest: skipped, said once.
                            logger.warning(
                                "%r: file name is not UTF-8; not tracked",
                                os.path.join(relative, entry.name),
                            )
                            continue
                        name = f"{relative}/{entry.name}" if relative else entry.name
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name not in SKIPPED_DIRS:
                                subdirs.append(name)
                        elif entry.is_file(follow_symlinks=False) and self.patterns.matches(name):
                            try:
                                self.add(name, entry.stat(follow_symlinks=False))
                            except OSError:
                                continue
                            found.append(name)
                listing_out[relative] = (found, subdirs)
                stack.extend(subdirs)
            except OSError:
                continue
            finally:
                os.close(fd)

    def add_exact(self, relative: str) -> None:
        """Take a single named file (an exact pattern or a file the assistant touched)."""
        if relative in self.manifest.stats or not is_safe_relative_path(self.root, relative):
            return
        try:
            st = os.lstat(self.root / relative)
        except (OSError, ValueError):
            return
        if stat.S_ISREG(st.st_mode):
            self.add(relative, st)

    def finish(self) -> Manifest:
        """Hash what the stat cache could not vouch for; return the manifest."""
        manifest = self.manifest
        for relative in self.to_hash:
            digest = sha256_file(os.path.join(self.root_str, relative))
            manifest.hashed += 1
            if digest is None:
                manifest.stats.pop(relative, None)
            else:
                manifest.files[relative] = digest
        return manifest


def build_file_manifest(
    root: Path,
    patterns: TrackedPatterns | None = None,
    extra: Iterable[str] = (),
    previous: Manifest | None = None,
) -> Manifest:
    """Hash the tracked files (no symlinks), reusing `previous` hashes the stat cache proves."""
    patterns = patterns or TrackedPatterns()
    scanner = _Scanner(root, patterns, previous)
    for walk_root in patterns.walk_roots():
        if "\x00" in walk_root:
            parent, name = walk_root.split("\x00")
            relative = f"{parent}/{name}" if parent else name
            target = root / relative
            if target.is_dir() and not target.is_symlink():
                if is_safe_relative_path(root, relative):
                    scanner.patterns = TrackedPatterns((*patterns.patterns, f"{relative}/**"))
                    scanner.walk(relative)
                    scanner.patterns = patterns
            else:
                scanner.add_exact(relative)
        elif not walk_root or is_safe_relative_path(root, walk_root):
            scanner.walk(walk_root)
    seen = scanner.manifest.stats
    for relative in [r for r in extra if r not in seen]:
        scanner.add_exact(relative)
    return scanner.finish()


def compare_manifests(
    old: Mapping[str, str], new: Manifest, patterns: TrackedPatterns | None = None
) -> DriftReport:
    """Diff a stored manifest against a fresh one."""
    patterns = patterns or TrackedPatterns()
    report = DriftReport()
    if new.files == old:  # the usual case, compared in C
        report.unchanged = len(old)
        return report
    files = new.files
    differ = [r for r, digest in old.items() if files.get(r, _ABSENT) != digest]
    report.modified = [relative for relative in differ if relative in files]
    report.deleted = [relative for relative in differ if relative not in files]
    report.unchanged = len(old) - len(differ)
    if len(files) > len(old) - len(report.deleted):  # some files are not in `old`
        report.created = sorted(r for r in files.keys() - old.keys() if patterns.matches(r))
    report.modified.sort()
    report.deleted.sort()
    return report


def detect_file_drift(
    root: Path,
    manifest: Mapping[str, str],
    patterns: TrackedPatterns | None = None,
    previous: Manifest | None = None,
) -> tuple[DriftReport, Manifest]:
    """Compare tracked files on disk with `manifest`; unsafe stored paths are skipped."""
    patterns = patterns or TrackedPatterns()
    current = build_file_manifest(root, patterns, extra=manifest.keys(), previous=previous)
    # Paths met by the walk are safe by construction; the rest were checked with resolve()
    # in list_tracked_files. Only those that failed the lexical check are reported unsafe.
    unsafe = []
    if not current.files.keys() >= manifest.keys():
        unsafe = [k for k in manifest.keys() - current.files.keys() if not is_lexically_safe(k)]
    safe = {k: v for k, v in manifest.items() if k not in unsafe} if unsafe else manifest
    report = compare_manifests(safe, current, patterns)
    report.unsafe = sorted(str(k) for k in unsafe)
    return report, current
