"""The tracked-file manifest: sha256 of each file, its stat cache, and its files by directory.

`scanner` builds one (reusing the hashes a previous manifest's stat cache proves);
`stat_cache` packs the stat cache into the snapshot.

A manifest may be *layered*: a base it does not own (a resumed snapshot's manifest, or the
manifest a scan started from), less the paths it dropped, plus entries of its own. A scan
of 100,000 files of which a handful changed then costs no per-file work, and neither does
the drift comparison with the base; the flat dictionaries (`files`, `stats`) are built
only when first asked for, off the resume's way. A base is never changed: a manifest
becomes one with `share`, after which it, too, copies before it changes.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

_READ_CHUNK = 1 << 16

StatKey = tuple[int, int, int]  # (size, mtime_ns, inode)
Listing = dict[str, tuple[list[str], list[str]]]  # dir -> (tracked files, subdirectories)
_V = TypeVar("_V")


class Manifest:
    """Hashes of tracked files, with the stat of each file and walked directory when seen."""

    def __init__(
        self,
        files: dict[str, str] | None = None,
        stats: dict[str, StatKey] | None = None,
        dirs: dict[str, int] | None = None,
        recorded_ns: int = 0,
        hashed: int = 0,
        patterns: tuple[str, ...] = (),
        listing: Listing | None = None,
        orphans: list[str] | None = None,
    ) -> None:
        self._files: dict[str, str] = {} if files is None else files
        self._stats: dict[str, StatKey] = {} if stats is None else stats
        # Layered: entries of `_base` not in `_dropped` belong to this manifest too, unless
        # `_files` / `_stats` (its own entries) say otherwise.
        self._base: tuple[Mapping[str, str], Mapping[str, StatKey]] | None = None
        self._dropped: set[str] = set()
        self.dirs: dict[str, int] = {} if dirs is None else dirs
        self.recorded_ns = recorded_ns
        self.hashed = hashed
        self.patterns = patterns
        # Which directory each file was found in; with `orphans`, every file exactly once.
        self.listing = listing
        self.orphans = orphans  # the files of no walked directory
        # Names met and not tracked: they hold characters a terminal obeys (see scanner).
        self.refused: frozenset[str] = frozenset()

    def layer_over(
        self,
        files: Mapping[str, str],
        stats: Mapping[str, StatKey],
        dropped: set[str] | None = None,
    ) -> Manifest:
        """Take the entries of `files` and `stats` (never changed through this) less `dropped`.

        This manifest's own entries stay, and win; it returns itself.
        """
        assert self._base is None, "a manifest is layered once"
        self._base = (files, stats)
        self._dropped = set() if dropped is None else dropped
        return self

    def __repr__(self) -> str:
        return f"Manifest({self.file_count()} files, {len(self.dirs)} directories)"  # no flattening

    def share(self) -> tuple[Mapping[str, str], Mapping[str, StatKey]]:
        """Return (files, stats) for another manifest to layer over, as they are now.

        A manifest with entries or drops of its own is first made layered over all its
        entries: what another manifest reads is never changed, as this one copies before
        its next change.
        """
        if self._base is None or self._files or self._stats or self._dropped:
            files, stats = self.files, self.stats
            self._base, self._files, self._stats = (files, stats), {}, {}
        assert self._base is not None
        return self._base

    def base_files(self) -> Mapping[str, str] | None:
        """Return the base files of a layered manifest (None: it owns all its entries)."""
        return None if self._base is None else self._base[0]

    def changed_paths(self) -> set[str]:
        """Return the paths where a layered manifest may differ from its base files."""
        return self._dropped | self._files.keys()

    def digest(self, path: str) -> str | None:
        """Return the hash of `path` (None if not in the manifest), building nothing."""
        if path in self._files or self._base is None or path in self._dropped:
            return self._files.get(path)
        return self._base[0].get(path)

    def file_count(self) -> int:
        """Return how many files the manifest holds, building nothing."""
        if self._base is None:
            return len(self._files)
        base = self._base[0]
        dropped = self._dropped
        kept = len(base) - sum(1 for path in dropped if path in base)
        return kept + sum(1 for path in self._files if path in dropped or path not in base)

    def _flatten(self) -> None:
        assert self._base is not None
        files, stats = plain_dict(self._base[0]), plain_dict(self._base[1])
        for path in self._dropped:
            files.pop(path, None)
            stats.pop(path, None)
        files.update(self._files)
        stats.update(self._stats)
        self._files, self._stats = files, stats
        self._base, self._dropped = None, set()

    @property
    def files(self) -> dict[str, str]:
        """Return the hashes by path (built, once, for a layered manifest)."""
        if self._base is not None:
            self._flatten()
        return self._files

    @property
    def stats(self) -> dict[str, StatKey]:
        """Return the stat cache by path (built, once, for a layered manifest)."""
        if self._base is not None:
            self._flatten()
        return self._stats

    def forget_listing(self) -> None:
        """Drop the grouping by directory after `files` changed outside a scan."""
        self.listing = None
        self.orphans = None


def plain_dict(entries: Mapping[str, _V]) -> dict[str, _V]:
    """Return a dict copy of `entries` (a packed mapping iterates its items in C)."""
    return dict(entries) if type(entries) is dict else dict(entries.items())


def is_utf8(name: str) -> bool:
    """Return True if `name` can be stored in the JSON manifest (no lone surrogates)."""
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


def children_index(previous: Manifest) -> tuple[Listing, list[str]]:
    """Group a manifest's files by directory: (listing, files of no walked directory)."""
    if previous.listing is not None and previous.orphans is not None:
        return previous.listing, previous.orphans
    index: Listing = {d: ([], []) for d in previous.dirs}
    orphans: list[str] = []
    for path in previous.files:
        entry = index.get(path.rpartition("/")[0])
        if entry is None:
            orphans.append(path)
        else:
            entry[0].append(path)
    for directory in previous.dirs:
        if directory:
            entry = index.get(directory.rpartition("/")[0])
            if entry is not None:
                entry[1].append(directory)
    previous.listing, previous.orphans = index, orphans
    return index, orphans
