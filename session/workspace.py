"""Workspace files: safe paths, the tracked-file manifest (sha256 + stat cache) and drift."""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .models import FileStat

DEFAULT_TRACKED = ("agent_spec.md", "templates/**")
# Never descended into while expanding globs: version control and dependency caches.
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "__pycache__"})
_GLOB_CHARS = re.compile(r"[*?\[]")
_NANOS = 1_000_000_000


def is_lexically_safe(relative: object) -> bool:
    """Return True for a relative POSIX path with no `..`, NUL, drive or absolute prefix."""
    if not isinstance(relative, str) or not relative or "\x00" in relative:
        return False
    if "\\" in relative or relative.startswith("/") or re.match(r"^[A-Za-z]:", relative):
        return False
    canonical = PurePosixPath(relative)
    if canonical.as_posix() != relative:  # "a//b", "./a", "a/" name files ambiguously
        return False
    return not any(part in ("..", "", ".") for part in canonical.parts)


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


@dataclass
class Manifest:
    """Hashes of tracked files, with the stat of each when it was hashed."""

    files: dict[str, str] = field(default_factory=dict)
    stats: dict[str, FileStat] = field(default_factory=dict)
    recorded_ns: int = 0
    hashed: int = 0


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


def sha256_file(path: Path) -> str | None:
    """Hash a regular file without following a symlink; None if it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


def _walk(root: Path, start: str) -> Iterator[tuple[str, os.stat_result]]:
    base = root / start if start else root
    stack = [(base, start)]
    while stack:
        directory, prefix = stack.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.is_symlink():
                        continue
                    relative = f"{prefix}/{entry.name}" if prefix else entry.name
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in SKIPPED_DIRS:
                            stack.append((Path(entry.path), relative))
                    elif entry.is_file(follow_symlinks=False):
                        try:
                            yield relative, entry.stat(follow_symlinks=False)
                        except OSError:
                            continue
        except OSError:
            continue


def _lstat_regular(root: Path, relative: str) -> os.stat_result | None:
    try:
        st = os.lstat(root / relative)
    except (OSError, ValueError):
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def list_tracked_files(
    root: Path, patterns: TrackedPatterns, extra: Iterable[str] = ()
) -> dict[str, os.stat_result]:
    """Return every regular, non-symlink tracked file with its lstat."""
    found: dict[str, os.stat_result] = {}
    for walk_root in patterns.walk_roots():
        if "\x00" in walk_root:
            parent, name = walk_root.split("\x00")
            relative = f"{parent}/{name}" if parent else name
            if is_safe_relative_path(root, relative):
                st = _lstat_regular(root, relative)
                if st is not None:
                    found[relative] = st
                elif (root / relative).is_dir() and not (root / relative).is_symlink():
                    for sub, sub_st in _walk(root, relative):
                        found[sub] = sub_st
            continue
        if walk_root and not is_safe_relative_path(root, walk_root):
            continue
        for relative, st in _walk(root, walk_root):
            if patterns.matches(relative):
                found[relative] = st
    for relative in extra:
        if relative not in found and is_safe_relative_path(root, relative):
            st = _lstat_regular(root, relative)
            if st is not None:
                found[relative] = st
    return found


def build_file_manifest(
    root: Path,
    patterns: TrackedPatterns | None = None,
    extra: Iterable[str] = (),
    previous: Manifest | None = None,
) -> Manifest:
    """Hash the tracked files, reusing `previous` hashes where the stat proves no change."""
    patterns = patterns or TrackedPatterns()
    recorded_ns = time.time_ns()
    files = list_tracked_files(root, patterns, extra)
    manifest = Manifest(recorded_ns=recorded_ns)
    prev_files = previous.files if previous else {}
    prev_stats = previous.stats if previous else {}
    # A file modified in the same second its stat was recorded may change again without
    # its mtime moving (coarse timestamps): such "racy" entries are always re-hashed.
    safe_before = (previous.recorded_ns // _NANOS) * _NANOS if previous else 0
    for relative, st in files.items():
        current = FileStat(size=st.st_size, mtime_ns=st.st_mtime_ns, ino=st.st_ino)
        cached = prev_stats.get(relative)
        digest = prev_files.get(relative)
        if digest is None or cached != current or st.st_mtime_ns >= safe_before:
            digest = sha256_file(root / relative)
            manifest.hashed += 1
            if digest is None:
                continue
        manifest.files[relative] = digest
        manifest.stats[relative] = current
    return manifest


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
    # The lexical check is cheap; paths not met by the walk get the full resolve() check in
    # list_tracked_files, and a path that fails it there is simply reported deleted.
    safe = {k: v for k, v in manifest.items() if is_lexically_safe(k)}
    current = build_file_manifest(root, patterns, extra=safe.keys(), previous=previous)
    report = compare_manifests(safe, current, patterns)
    report.unsafe = sorted(str(k) for k in manifest if k not in safe)
    return report, current
