"""A manifest's stat cache packed into one hex string: the snapshot's `stat_cache`.

As JSON (`{path: [size, mtime_ns, inode]}`) a 20,000-file stat cache is ~2 MB whose
parse and validation cost ~12 ms at every resume. Packed, it is positional: entry `i` is
the stat of the manifest's `i`-th path, the paths being stored (by `pack_manifest`) with
each walked directory's files together, in `dirs` order, so the previous scan's listing
comes back as slices, without a pass over the paths. A crc32 over the paths, directories,
patterns, recording time and the packed stats ties it to the manifest it was packed with:
damaged, or after any edit or reordering of the manifest, it is not used, and every file is
hashed, as on a first check. Hex, not base64: no run of hex digits looks like a secret to
the redactor, which scrubs whole snapshots. Unpacked, the stats stay in their arrays
(`packed.PackedStats`), looked up by position.
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from collections.abc import Mapping
from itertools import accumulate
from typing import NamedTuple

from .manifest import Listing, Manifest
from .packed import PackedFiles, PackedStats, Positions

_MAGIC = b"AAS1"
_HEADER = struct.Struct("<4sIII")  # magic, files, directories, crc32
_NO_STAT = -1  # as a size: this file has no stat cached (it is hashed next time)


class StatCache(NamedTuple):
    """What a packed stat cache holds besides the hashes: stats, listing, other files."""

    stats: PackedStats
    listing: Listing
    orphans: list[str]  # files whose directory was not walked (exact paths, extras)


def _crc(
    files: list[str],
    dirs: list[str],
    recorded_ns: int,
    patterns: tuple[str, ...],
    body: bytes | memoryview,
) -> int:
    head = f"{recorded_ns}\0{len(patterns)}\0" + "\0".join(patterns)
    text = "\1".join((head, "\0".join(files), "\0".join(dirs)))
    return zlib.crc32(body, zlib.crc32(text.encode("utf-8", "surrogatepass")))


def _little_endian(values: array[int]) -> bytes:
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


def _from_little_endian(code: str, data: bytes) -> array[int]:
    values = array(code, data)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def pack_manifest(manifest: Manifest) -> tuple[PackedFiles, str]:
    """Return the manifest's hashes, each directory's files together, and its packed stats."""
    groups: dict[str, list[str]] = {d: [] for d in manifest.dirs}
    orphans: list[str] = []
    for path in manifest.files:
        group = groups.get(path.rpartition("/")[0])
        (orphans if group is None else group).append(path)
    order = [path for group in groups.values() for path in group]
    order += orphans
    files = PackedFiles.of(manifest.files, order)
    stats = manifest.stats
    sizes, mtimes, inodes = array("q"), array("q"), array("Q")
    for key in map(stats.get, order):
        if key is None:
            key = (_NO_STAT, 0, 0)
        sizes.append(key[0])
        mtimes.append(key[1])
        inodes.append(key[2])
    dirs = list(groups)
    counts = array("q", map(len, groups.values()))
    body = b"".join(map(_little_endian, (sizes, mtimes, inodes, counts)))
    crc = _crc(order, dirs, manifest.recorded_ns, manifest.patterns, body)
    return files, (_HEADER.pack(_MAGIC, len(order), len(dirs), crc) + body).hex()


def proven_stat_bytes(
    text: str,
    files: Mapping[str, str],
    dirs: Mapping[str, int],
    recorded_ns: int,
    patterns: tuple[str, ...],
) -> bytes | None:
    """Return `text` decoded if it is the stat cache of that manifest, else None."""
    data = _decoded(text, files, dirs)
    if data is None or not _fits(data, files, dirs, recorded_ns, patterns):
        return None
    return data


def _decoded(text: str, files: Mapping[str, str], dirs: Mapping[str, int]) -> bytes | None:
    """Return the bytes of a packed stat cache sized for `files` and `dirs`, else None."""
    try:
        data = bytes.fromhex(text)
    except ValueError:
        return None
    return data if _decoded_size(data) == (len(files), len(dirs)) else None


def _fits(
    data: bytes,
    files: Mapping[str, str],
    dirs: Mapping[str, int],
    recorded_ns: int,
    patterns: tuple[str, ...],
) -> bool:
    """Return True if the crc of `data` is that of these files, dirs, time and patterns."""
    crc: int = _HEADER.unpack_from(data)[3]
    paths = files.paths if isinstance(files, PackedFiles) else list(files)
    body = memoryview(data)[_HEADER.size :]
    return crc == _crc(paths, list(dirs), recorded_ns, patterns, body)


def unpack_stat_cache(
    text: str,
    files: Mapping[str, str],
    dirs: Mapping[str, int],
    recorded_ns: int,
    patterns: tuple[str, ...],
) -> StatCache | None:
    """Unpack `text` for the manifest `files` (in stored order); None if it does not fit."""
    proven = files.proven_stats if isinstance(files, PackedFiles) else None
    if proven is not None and proven[0] == text:
        data: bytes | None = proven[1]  # checked against these files when it was cached
    else:
        data = proven_stat_bytes(text, files, dirs, recorded_ns, patterns)
    if data is None or _decoded_size(data) != (len(files), len(dirs)):
        return None
    count = len(files)
    positions = files.positions if isinstance(files, PackedFiles) else Positions(list(files))
    paths = positions.paths
    dir_paths = list(dirs)
    start = _HEADER.size
    sizes = _from_little_endian("q", data[start : start + 8 * count])
    mtimes = _from_little_endian("q", data[start + 8 * count : start + 16 * count])
    inodes = _from_little_endian("Q", data[start + 16 * count : start + 24 * count])
    counts = _from_little_endian("q", data[start + 24 * count :])
    ends = list(accumulate(counts))
    if (ends and ends[-1] > count) or (len(dirs) and min(counts) < 0):
        return None
    stats = PackedStats(positions, sizes, mtimes, inodes)
    listing: Listing = {}
    begin = 0
    for directory, end in zip(dir_paths, ends, strict=True):
        listing[directory] = (paths[begin:end], [])
        begin = end
    for directory in dir_paths:
        if directory:
            entry = listing.get(directory.rpartition("/")[0])
            if entry is not None:
                entry[1].append(directory)
    return StatCache(stats, listing, paths[begin:])


def _decoded_size(data: bytes) -> tuple[int, int] | None:
    """Return (files, directories) of a decoded stat cache of the right length, else None."""
    try:
        magic, count, dir_count, _ = _HEADER.unpack_from(data)
    except struct.error:
        return None
    if magic != _MAGIC or len(data) != _HEADER.size + 24 * count + 8 * dir_count:
        return None
    return count, dir_count
