"""Scanning the tracked files into a manifest, reusing hashes a stat cache proves.

Symlinks are never followed. A scan lists only directories that changed since the
previous manifest and re-hashes only files whose stat (or ctime, with `find`) moved.
Which names are never tracked (not UTF-8, or holding a control character): `refused_names`.
"""

from __future__ import annotations

import operator
import os
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from .find import _NANOS, FIND_MIN_FILES, _find_changes, split_subtrees
from .manifest import Listing, Manifest, StatKey, children_index, sha256_file
from .packed import PackedStats
from .patterns import SKIPPED_DIRS, TrackedPatterns
from .prefetch import Prefetch
from .refused_names import RefusedNames
from .safe_paths import is_safe_relative_path

_FIND_MIN_FILES = FIND_MIN_FILES

_MTIME = operator.itemgetter(1)


def _by_directory(paths: Iterable[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for path in paths:
        grouped.setdefault(path.rpartition("/")[0], []).append(path)
    return grouped


def _unproven(
    files: Mapping[str, str], stats: Mapping[str, StatKey], safe_before: int
) -> tuple[set[str], list[str]]:
    """Return (stats of no file, files whose stat proves nothing: none, or racy)."""
    if isinstance(stats, PackedStats):  # positional over the files: none of the first kind
        return set(), stats.unproven(safe_before)
    stale: set[str] = set()
    unproven: list[str] = []
    if len(stats) != len(files) or stats.keys() != files.keys():
        stale = stats.keys() - files.keys()
        unproven = list(files.keys() - stats.keys())
    if stats and max(map(_MTIME, stats.values())) >= safe_before:
        unproven += [p for p, key in stats.items() if key[1] >= safe_before and p not in stale]
    return stale, unproven


class _Scanner:
    """One pass over the tracked files: stat, reuse hashes the stat cache proves, list the rest.

    With a previous manifest to reuse, the result is layered over it: a directory proven
    unchanged keeps its entries without a look at them, any other gives its files back
    (`release`: dropped from the base) and is listed anew, and the files of no walked
    directory are taken one by one (`add_exact`). A manifest's `listing` and `orphans`
    together hold each of its files exactly once; that is what makes it work.
    """

    _DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

    def __init__(
        self,
        root: Path,
        patterns: TrackedPatterns,
        previous: Manifest | None,
        prefetch: Prefetch | None = None,
    ) -> None:
        self.root = root
        self.prefetch = prefetch
        self.root_str = str(root)
        self.prefix = os.path.join(self.root_str, "")  # + a relative path: the file's path
        self.patterns = patterns
        self.recorded_ns = time.time_ns()
        # This scan's own entries; with `layered`, over the previous's less `dropped`.
        self.files: dict[str, str] = {}
        self.stats: dict[str, StatKey] = {}
        self.dirs: dict[str, int] = {}
        self.listing: Listing = {}
        self.orphans: list[str] = []
        self.layered = False
        self.dropped: set[str] = set()
        self.hashed = 0
        self.to_hash: list[str] = []
        prev = previous or Manifest()
        self.refused = RefusedNames(prev.refused)
        self.prev_files, self.prev_stats = prev.share()
        self.prev_dirs = prev.dirs
        # A file (or directory) modified in the same second its stat was recorded may change
        # again without its mtime moving: such "racy" entries are always re-read.
        self.safe_before = (prev.recorded_ns // _NANOS) * _NANOS
        self.prev_recorded_ns = prev.recorded_ns
        # Files find saw changed after the previous manifest was recorded: re-hashed even
        # with the same stat (an edit of the same size whose mtime was put back).
        self.ctime_moved: set[str] = set()
        # Known files to stat even in a directory find saw unchanged: racy, or with no stat.
        self.recheck: dict[str, list[str]] = {}
        self.cached: Listing = {}
        if previous and previous.dirs and previous.patterns == patterns.patterns:
            self.cached, orphans = children_index(previous)
            self.start_from(orphans)

    def start_from(self, orphans: list[str]) -> None:
        """Take the previous files and stats as they are, but for `orphans`."""
        self.layered = True
        stale, unproven = _unproven(self.prev_files, self.prev_stats, self.safe_before)
        self.dropped = stale
        self.dropped.update(orphans)
        self.recheck = _by_directory(unproven)

    def drop(self, path: str) -> None:
        """Take `path` out of the result (its previous entry, and any of this scan's)."""
        self.files.pop(path, None)
        self.stats.pop(path, None)
        self.dropped.add(path)

    def has_stat(self, path: str) -> bool:
        """Return True if the result holds a stat of `path`."""
        if path in self.stats:
            return True
        return self.layered and path not in self.dropped and path in self.prev_stats

    def release(self, relative: str) -> None:
        """Give back the previous entries of a directory that is listed or stat'ed again."""
        cached = self.cached.get(relative)
        if cached is not None:
            for path in cached[0]:
                self.drop(path)

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
            self.files[path] = digest
            self.stats[path] = key
        else:
            self.drop(path)
            self.stats[path] = key
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
                st = os.stat(self.prefix + name, follow_symlinks=False)
            except (OSError, ValueError):
                return False
            return (
                stat.S_ISREG(st.st_mode)
                and st.st_nlink == 1
                and (st.st_size, st.st_mtime_ns, st.st_ino) == key
            )
        return False

    def take_unchanged_dir(
        self, relative: str, cached: tuple[list[str], list[str]], printed: list[str]
    ) -> None:
        """Keep a directory find saw unchanged; stat only its printed and racy files."""
        # The same directory (`same_directory`), same mtime and no ctime change: no entry
        # was added, removed or renamed. A known file find did not print has had no inode
        # change (ctime) since before the previous manifest took its stat, so that stat
        # still holds: no stat of ours, and its entries stay as they were.
        again = [*self.recheck.get(relative, ()), *printed]
        if not again:
            self.listing[relative] = cached
            return
        known = cached[0]
        dropped: set[str] = set()
        for name in dict.fromkeys(again):
            if name not in known:  # (a few names: no set of the directory's files)
                continue
            self.drop(name)
            try:
                st = os.stat(self.prefix + name, follow_symlinks=False)
            except (OSError, ValueError):
                dropped.add(name)
                continue
            if stat.S_ISREG(st.st_mode):
                self.add(name, st)  # re-hashed if changed after the previous manifest
            else:
                dropped.add(name)
        kept = [f for f in cached[0] if f not in dropped] if dropped else cached[0]
        self.listing[relative] = (kept, cached[1])

    def walk(self, start: str) -> None:
        """Collect tracked files below `start`, listing only directories that changed."""
        by_find = None
        if self.cached and len(self.prev_files) >= _FIND_MIN_FILES:
            second = split_subtrees(start, self.cached)
            running = None
            if self.prefetch is not None:
                running = self.prefetch.take(start, self.prev_recorded_ns, second)
            if running is None:
                by_find = _find_changes(self.root_str, start, self.prev_recorded_ns, second)
            else:  # what find saw, it saw after it started: the manifest dates from then
                self.recorded_ns = min(self.recorded_ns, running.started_ns)
                if isinstance(self.prev_stats, PackedStats):
                    self.prev_stats.index_paths()  # needed below: built while the finds walk
                by_find = running.collect()
        printed: set[str] = set()
        printed_by_dir: dict[str, list[str]] = {}
        if by_find is not None:
            self.ctime_moved |= by_find.moved
            printed = by_find.files
            printed_by_dir = _by_directory(printed)
        listing_out = self.listing
        refuses_entry = self.refused.refuses_entry
        stats_out = self.stats
        prev_files = self.prev_files
        prev_stats = self.prev_stats
        safe_before = self.safe_before
        stack = [start]
        while stack:
            relative = stack.pop()
            cached = self.cached.get(relative)
            if by_find is not None:
                seen = by_find.dirs.get(relative)
                if (
                    seen is not None
                    and not seen[1]
                    and cached is not None
                    and self.prev_dirs.get(relative) == seen[0] < safe_before
                    and self.same_directory(cached[0], printed)
                ):
                    self.dirs[relative] = seen[0]
                    self.take_unchanged_dir(relative, cached, printed_by_dir.get(relative, []))
                    stack.extend(cached[1])
                    continue
                # Anything else (a new or changed directory, one whose ctime moved as with
                # `touch -d` or `rsync -t`, one not proven the same) is listed again below.
                cached = None
            try:  # O_NOFOLLOW: a directory replaced by a symlink is never entered
                path = os.path.join(self.root_str, relative) if relative else self.root_str
                fd = os.open(path, self._DIR_FLAGS)
            except OSError:
                self.release(relative)
                continue
            found: list[str] = []
            found_dirs: list[str] = []
            try:
                mtime = os.fstat(fd).st_mtime_ns
                self.dirs[relative] = mtime
                if cached is not None and self.prev_dirs.get(relative) == mtime < safe_before:
                    # Same directory mtime: no entry was added, removed or renamed, so only
                    # the known files need a stat (relative to the directory: cheap), and a
                    # file its stat proves keeps its previous entry as it is.
                    files, subdirs = cached
                    cut = len(relative) + 1 if relative else 0
                    kept: list[str] = []
                    for name in files:
                        try:
                            st = os.stat(name[cut:], dir_fd=fd, follow_symlinks=False)
                        except OSError:
                            self.drop(name)
                            continue
                        if not stat.S_ISREG(st.st_mode):
                            self.drop(name)
                            continue
                        kept.append(name)
                        key = (st.st_size, st.st_mtime_ns, st.st_ino)
                        if (
                            prev_stats.get(name) == key
                            and key[1] < safe_before
                            and prev_files.get(name) is not None
                        ):
                            continue
                        self.drop(name)
                        stats_out[name] = key
                        self.to_hash.append(name)
                    listing_out[relative] = (kept, subdirs)
                    stack.extend(subdirs)
                    continue
                self.release(relative)
                with os.scandir(fd) as entries:
                    for entry in entries:
                        if entry.is_symlink() or refuses_entry(relative, entry.name):
                            continue
                        name = f"{relative}/{entry.name}" if relative else entry.name
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name not in SKIPPED_DIRS:
                                found_dirs.append(name)
                        elif entry.is_file(follow_symlinks=False) and self.patterns.matches(name):
                            try:
                                self.add(name, entry.stat(follow_symlinks=False))
                            except OSError:
                                continue
                            found.append(name)
                listing_out[relative] = (found, found_dirs)
                stack.extend(found_dirs)
            except OSError:  # what was found before stays listed (each file, once)
                if relative in self.dirs:
                    listing_out[relative] = (found, found_dirs)
                continue
            finally:
                os.close(fd)

    def drop_unvisited(self) -> None:
        """Give back the entries of previous directories no walk reached (gone, or moved)."""
        dirs = self.dirs
        for relative in self.cached:
            if relative not in dirs:
                self.release(relative)

    def add_exact(self, relative: str) -> None:
        """Take a single named file (an exact pattern or a file the assistant touched)."""
        if self.has_stat(relative) or not is_safe_relative_path(self.root, relative):
            return
        if self.refused.refuses_path(relative):
            return
        try:
            st = os.lstat(self.root / relative)
        except (OSError, ValueError):
            return
        if stat.S_ISREG(st.st_mode):
            self.add(relative, st)
            self.orphans.append(relative)

    def missing(self, extra: Iterable[str]) -> list[str]:
        """Return the paths of `extra` the walk did not meet."""
        if self.layered and extra is self.prev_files:
            # The previous manifest's own paths: each is in the result, with its stat,
            # unless dropped (those with no stat were, to be stat'ed again).
            return [p for p in self.dropped if p in extra and p not in self.stats]
        return [path for path in extra if not self.has_stat(path)]

    def finish(self) -> Manifest:
        """Hash what the stat cache could not vouch for; return the manifest."""
        failed: set[str] = set()
        for relative in self.to_hash:
            digest = sha256_file(self.prefix + relative)
            self.hashed += 1
            if digest is None:
                self.drop(relative)
                failed.add(relative)
            else:
                self.files[relative] = digest
        listing = self.listing
        if failed:  # unreadable: in no listing either (each file is listed exactly once)
            for parent in {path.rpartition("/")[0] for path in failed}:
                entry = listing.get(parent)
                if entry is not None and not failed.isdisjoint(entry[0]):
                    listing[parent] = ([f for f in entry[0] if f not in failed], entry[1])
            self.orphans = [f for f in self.orphans if f not in failed]
        manifest = Manifest(
            self.files,
            self.stats,
            self.dirs,
            self.recorded_ns,
            self.hashed,
            self.patterns.patterns,
            listing,
            self.orphans,
        )
        if self.layered:
            manifest.layer_over(self.prev_files, self.prev_stats, self.dropped)
        manifest.refused = self.refused.all()
        self.refused.report_new()
        listed = sum(len(files) for files, _ in listing.values())
        if listed + len(self.orphans) != manifest.file_count():  # never, but then: recount
            manifest.forget_listing()
        return manifest


def build_file_manifest(
    root: Path,
    patterns: TrackedPatterns | None = None,
    extra: Iterable[str] = (),
    previous: Manifest | None = None,
    prefetch: Prefetch | None = None,
) -> Manifest:
    """Hash the tracked files (no symlinks), reusing `previous` hashes the stat cache proves.

    `prefetch`: finds already running for this scan (taken if they are the ones it needs).
    """
    patterns = patterns or TrackedPatterns()
    scanner = _Scanner(root, patterns, previous, prefetch)
    exact: list[str] = []
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
                exact.append(relative)
        elif not walk_root or is_safe_relative_path(root, walk_root):
            scanner.walk(walk_root)
    scanner.drop_unvisited()  # before single files: what is left of the previous is proven
    for relative in exact:
        scanner.add_exact(relative)
    for relative in scanner.missing(extra):
        scanner.add_exact(relative)
    return scanner.finish()
