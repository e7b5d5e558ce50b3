"""The tracked-file manifest: sha256 of each file, its stat cache, and its files by directory.

`scanner` builds one (reusing the hashes a previous manifest's stat cache proves);
`stat_cache` packs the stat cache into the snapshot.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

_READ_CHUNK = 1 << 16

StatKey = tuple[int, int, int]  # (size, mtime_ns, inode)
Listing = dict[str, tuple[list[str], list[str]]]  # dir -> (tracked files, subdirectories)


@dataclass
class Manifest:
    """Hashes of tracked files, with the stat of each file and walked directory when seen."""

    files: dict[str, str] = field(default_factory=dict)
    stats: dict[str, StatKey] = field(default_factory=dict)
    dirs: dict[str, int] = field(default_factory=dict)
    recorded_ns: int = 0
    hashed: int = 0
    patterns: tuple[str, ...] = ()
    # Which directory each file was found in; with `orphans`, every file exactly once.
    listing: Listing | None = None
    orphans: list[str] | None = None  # the files of no walked directory

    def forget_listing(self) -> None:
        """Drop the grouping by directory after `files` changed outside a scan."""
        self.listing = None
        self.orphans = None


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
