"""The tracked-file manifest: sha256 of each file, reusing hashes a stat cache proves.

Symlinks are never followed. A scan lists only directories that changed since the
previous manifest and re-hashes only files whose stat (or ctime, with `find`) moved.
"""

from __future__ import annotations

import hashlib
import logging
import operator
import os
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from .find import _NANOS, _find_changes
from .patterns import SKIPPED_DIRS, TrackedPatterns
from .safe_paths import is_safe_relative_path

_READ_CHUNK = 1 << 16
_FIND_MIN_FILES = 3_000  # below this, starting find costs about what it saves (measured)

logger = logging.getLogger(__name__)
_V = TypeVar("_V")


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


_MTIME = operator.itemgetter(1)


def _pick(keys: list[str], mapping: Mapping[str, _V]) -> tuple[_V, ...]:
    """Return `mapping[k]` for each of `keys` (KeyError if one is missing), looped in C."""
    if len(keys) == 1:
        return (mapping[keys[0]],)
    return operator.itemgetter(*keys)(mapping)  # type: ignore[no-any-return]


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
