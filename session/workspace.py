"""Workspace files: safe paths, the tracked-file manifest (sha256 + stat cache) and drift."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_TRACKED = ("agent_spec.md", "templates/**")
# Never descended into while expanding globs: version control and dependency caches.
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "__pycache__"})
_GLOB_CHARS = re.compile(r"[*?\[]")
_NANOS = 1_000_000_000

logger = logging.getLogger(__name__)


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


def sha256_file(path: Path) -> str | None:
    """Hash a regular file without following a symlink; None if it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


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
        reusable = bool(previous and previous.dirs and previous.patterns == patterns.patterns)
        self.cached = _children_index(prev) if reusable else {}

    def add(self, path: str, st: os.stat_result) -> None:
        """Take one regular file: reuse its hash if the stat proves it unchanged."""
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        digest = self.prev_files.get(path)
        if digest is not None and self.prev_stats.get(path) == key and key[1] < self.safe_before:
            self.manifest.files[path] = digest
            self.manifest.stats[path] = key
        else:
            self.manifest.stats[path] = key
            self.to_hash.append(path)

    def walk(self, start: str) -> None:
        """Collect tracked files below `start`, listing only directories that changed."""
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
            try:  # O_NOFOLLOW: a directory replaced by a symlink is never entered
                path = os.path.join(self.root_str, relative) if relative else self.root_str
                fd = os.open(path, self._DIR_FLAGS)
            except OSError:
                continue
            try:
                mtime = os.fstat(fd).st_mtime_ns
                manifest.dirs[relative] = mtime
                cached = self.cached.get(relative)
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
            digest = sha256_file(self.root / relative)
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
    for relative in extra:
        scanner.add_exact(relative)
    return scanner.finish()


def compare_manifests(
    old: Mapping[str, str], new: Manifest, patterns: TrackedPatterns | None = None
) -> DriftReport:
    """Diff a stored manifest against a fresh one."""
    patterns = patterns or TrackedPatterns()
    report = DriftReport()
    for relative, digest in old.items():
        current = new.files.get(relative)
        if current is None:
            report.deleted.append(relative)
        elif current != digest:
            report.modified.append(relative)
        else:
            report.unchanged += 1
    report.created = sorted(r for r in new.files if r not in old and patterns.matches(r))
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
    unsafe = [k for k in manifest if k not in current.files and not is_lexically_safe(k)]
    safe = {k: v for k, v in manifest.items() if k not in unsafe} if unsafe else manifest
    report = compare_manifests(safe, current, patterns)
    report.unsafe = sorted(str(k) for k in unsafe)
    return report, current
