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


def unpack_stat_cache(
    text: str,
    files: Mapping[str, str],
    dirs: Mapping[str, int],
    recorded_ns: int,
    patterns: tuple[str, ...],
) -> StatCache | None:
    """Unpack `text` for the manifest `files` (in stored order); None if it does not fit."""
    try:
        data = bytes.fromhex(text)
        magic, count, dir_count, crc = _HEADER.unpack_from(data)
    except (ValueError, struct.error):
        return None
    if (
        magic != _MAGIC
        or count != len(files)
        or dir_count != len(dirs)
        or len(data) != _HEADER.size + 24 * count + 8 * dir_count
    ):
        return None
    positions = files.positions if isinstance(files, PackedFiles) else Positions(list(files))
    paths = positions.paths
    dir_paths = list(dirs)
    start = _HEADER.size
    if crc != _crc(paths, dir_paths, recorded_ns, patterns, memoryview(data)[start:]):
        return None
    sizes = _from_little_endian("q", data[start : start + 8 * count])
    mtimes = _from_little_endian("q", data[start + 8 * count : start + 16 * count])
    inodes = _from_little_endian("Q", data[start + 16 * count : start + 24 * count])
    counts = _from_little_endian("q", data[start + 24 * count :])
    ends = list(accumulate(counts))
    if (ends and ends[-1] > count) or (dir_count and min(counts) < 0):
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
