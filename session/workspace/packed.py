"""A manifest as the snapshot packs it, read as mappings without a dictionary of every file.

`PackedFiles` is `file_manifest`: the paths in their stored order and one hex string of
their sha256 digests, 64 digits each. `PackedStats` is the stat cache unpacked into arrays
(`stat_cache`), positional over the same paths. Both look a path up through one shared
index; nothing per file is built until asked for, so a resume whose scan proves whole
directories unchanged reads the entries of a few files, not of 100,000.
"""

from __future__ import annotations

from array import array
from collections.abc import ItemsView, Iterator, Mapping
from itertools import compress

from .manifest import StatKey

DIGEST = 64  # hex digits of a sha256
DIGEST_BYTES = DIGEST // 2
_UNKNOWN = "0" * DIGEST  # stands for a stored "digest" that is none: never a file's


def _lower_hex(text: str) -> bool:
    """Return True if `text` is lowercase hex digits only (~5 ms for 6.4 MB; `strip`: 35)."""
    try:  # (fromhex takes upper case and skips spaces: the round trip gives neither back)
        return text.isascii() and bytes.fromhex(text).hex() == text
    except ValueError:
        return False


class Positions:
    """Stored paths in order, and (built when first needed) each one's position."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self._index: dict[str, int] | None = None

    @property
    def index(self) -> dict[str, int]:
        """Return each path's position."""
        if self._index is None:
            self._index = dict(zip(self.paths, range(len(self.paths)), strict=True))
        return self._index


class PackedFiles(Mapping[str, str]):
    """`{path: sha256}` kept as the paths and the digests joined, in the stored order."""

    def __init__(self, positions: Positions, digests: str | None, raw: bytes = b"") -> None:
        self.positions = positions
        self.paths = positions.paths
        self._digests = digests
        self._raw = raw  # (without `digests`) the digests as bytes, 32 each
        # A packed `stat_cache` text and its bytes, known to fit these files (`stat_cache`):
        # set by the reader of a manifest cache that checked them when it was written.
        self.proven_stats: tuple[str, bytes] | None = None

    @classmethod
    def cached(cls, paths: list[str], raw: bytes) -> PackedFiles:
        """Return the manifest of a cache checked against its file: digests as bytes.

        Nothing is checked again and nothing per file is built: a digest is written out in
        hex when it is looked up (the whole string, when first asked for).
        """
        if len(raw) != DIGEST_BYTES * len(paths):
            raise ValueError("manifest cache: digests miscounted")
        return cls(Positions(paths), None, raw)

    @property
    def digests(self) -> str:
        """Return the digests joined, 64 lowercase hex digits each."""
        if self._digests is None:
            self._digests = self._raw.hex()
        return self._digests

    def digest_bytes(self) -> bytes:
        """Return the digests joined as bytes, 32 each."""
        return bytes.fromhex(self._digests) if self._digests is not None else self._raw

    @classmethod
    def decode(cls, paths: object, digests: object, *, derived: bool = False) -> PackedFiles:
        """Check a stored `{"paths": [...], "sha256": "..."}` (ValueError if it is not one).

        `derived`: packed by us from a manifest read before (a cache checked against its
        file): its digits and paths are not checked again, and the index of its paths is
        built only if a path is looked up (~9 ms at 20,000 files). A damaged one could
        only name a digest no file has (that file is reported changed), or a path twice
        (its stat cache then does not fit: every file is hashed).
        """
        if not isinstance(paths, list) or not set(map(type, paths)) <= {str}:
            raise ValueError("file_manifest.paths must be a list of paths")
        if not isinstance(digests, str) or len(digests) != DIGEST * len(paths):
            raise ValueError(f"file_manifest.sha256 must hold {DIGEST} hex digits per path")
        if derived:
            return cls(Positions(paths), digests)
        if not _lower_hex(digests):
            raise ValueError("file_manifest.sha256 must be lowercase hex digits")
        positions = Positions(paths)
        if len(positions.index) != len(paths):
            raise ValueError("file_manifest.paths names a path twice")
        return cls(positions, digests)

    @classmethod
    def of(cls, files: Mapping[str, str], order: list[str] | None = None) -> PackedFiles:
        """Pack `files` (in `order`, else its own); a value that is no digest stands for none."""
        if isinstance(files, PackedFiles) and order is None:
            return files
        paths = list(files) if order is None else order
        values = list(map(files.__getitem__, paths))
        digests = "".join(values)
        if len(digests) != DIGEST * len(values) or not _lower_hex(digests):
            values = [v if len(v) == DIGEST and _lower_hex(v) else _UNKNOWN for v in values]
            digests = "".join(values)
        return cls(Positions(paths), digests)

    @property
    def index(self) -> dict[str, int]:
        """Return each path's position."""
        return self.positions.index

    def get(self, path: str, default: str | None = None) -> str | None:  # type: ignore[override]
        """Return the digest of `path` (`default` if it is not in the manifest)."""
        i = self.index.get(path)
        if i is None:
            return default
        if self._digests is None:
            return self._raw[DIGEST_BYTES * i : DIGEST_BYTES * (i + 1)].hex()
        return self._digests[DIGEST * i : DIGEST * (i + 1)]

    def __getitem__(self, path: str) -> str:
        digest = self.get(path)
        if digest is None:
            raise KeyError(path)
        return digest

    def __contains__(self, path: object) -> bool:
        return path in self.index

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def __repr__(self) -> str:
        return f"PackedFiles({len(self.paths)} files)"

    def items(self) -> ItemsView[str, str]:
        """Return the (path, digest) pairs, iterated in C (`dict(files.items())` is quick)."""
        return _FileItems(self)

    def pairs(self) -> Iterator[tuple[str, str]]:
        """Return (path, digest) of every file, in the stored order."""
        text = self.digests
        cuts = map(slice, range(0, len(text), DIGEST), range(DIGEST, len(text) + DIGEST, DIGEST))
        return zip(self.paths, map(text.__getitem__, cuts), strict=True)


class _FileItems(ItemsView[str, str]):
    _mapping: PackedFiles

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return self._mapping.pairs()


class PackedStats(Mapping[str, StatKey]):
    """The unpacked arrays of a stat cache, read as `{path: (size, mtime_ns, inode)}`."""

    def __init__(
        self,
        positions: Positions,
        sizes: array[int],
        mtimes: array[int],
        inodes: array[int],
    ) -> None:
        self._positions = positions
        self._paths = positions.paths
        self._sizes = sizes
        self._mtimes = mtimes
        self._inodes = inodes
        self._complete = not sizes or min(sizes) >= 0  # every path has a stat

    def _position(self, path: str) -> int | None:
        return self._positions.index.get(path)

    def index_paths(self) -> None:
        """Build the index of the paths now (it is built at the first lookup otherwise)."""
        self._positions.index  # noqa: B018 - built by the property

    def get(self, path: str, default: StatKey | None = None) -> StatKey | None:  # type: ignore[override]
        """Return the stat of `path` (`default` if it has none)."""
        i = self._position(path)
        if i is None or self._sizes[i] < 0:
            return default
        return (self._sizes[i], self._mtimes[i], self._inodes[i])

    def __getitem__(self, path: str) -> StatKey:
        key = self.get(path)
        if key is None:
            raise KeyError(path)
        return key

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self.get(path) is not None

    def __iter__(self) -> Iterator[str]:
        if self._complete:
            return iter(self._paths)
        return compress(self._paths, (size >= 0 for size in self._sizes))

    def __len__(self) -> int:
        if self._complete:
            return len(self._paths)
        return sum(1 for size in self._sizes if size >= 0)

    def items(self) -> ItemsView[str, StatKey]:
        """Return the (path, stat) pairs, iterated in C (`dict(stats.items())` is quick)."""
        return _StatItems(self)

    def pairs(self) -> Iterator[tuple[str, StatKey]]:
        """Return (path, stat) of every path with a stat, built in C where it can be."""
        keys = zip(self._sizes, self._mtimes, self._inodes, strict=True)
        pairs = zip(self._paths, keys, strict=True)
        return pairs if self._complete else (pair for pair in pairs if pair[1][0] >= 0)

    def unproven(self, safe_before: int) -> list[str]:
        """Return the paths with no stat, or one taken too close to a change to prove it."""
        if self._complete and (not self._mtimes or max(self._mtimes) < safe_before):
            return []
        return [
            path
            for path, size, mtime in zip(self._paths, self._sizes, self._mtimes, strict=True)
            if size < 0 or mtime >= safe_before
        ]


class _StatItems(ItemsView[str, StatKey]):
    _mapping: PackedStats

    def __iter__(self) -> Iterator[tuple[str, StatKey]]:
        return self._mapping.pairs()
