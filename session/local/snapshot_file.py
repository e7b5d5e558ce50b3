"""The session file `sessions/<id>.json` as the seed defines it, and its manifest cache.

The file is the seed's schema v3: `schema_version` 3 and the seed's twelve fields with the
seed's types (`file_manifest` is `{relative_path: sha256_hex}`, `updated_at` the time of
the save), then our additive fields. We write `file_manifest` last, so everything before it
(the *head*) is a JSON object of its own once closed.

Parsing a 20,000-entry `file_manifest` object is most of a resume's read of the file. So,
beside it, `<id>.manifest-cache` (derived, machine-local, never fsynced, safe to delete)
holds the same manifest in binary: the paths in their stored order (UTF-8, NUL between
them) and the digests (32 bytes each); and, for a file written here, its `stat_cache`
decoded (checked then to fit that manifest) with where its text lies in the head. Its
header names the file it was taken from: size, mtime, a crc32 of all its bytes (an edit
that keeps the size and the mtime still changes it; computed again only when the file's
inode or ctime moved: a copy, or a write) and where `file_manifest` begins; a crc32 of the
cache's own bytes says it is whole. A copy of the store that keeps mtimes (`cp -p`, rsync,
a backup) keeps its caches. When the header fits, the reader reads and parses only the
head, around the stat cache's text (~1 MB of hex at 20,000 files), and takes the rest from
the cache; otherwise (missing, stale, damaged, another format) it parses the whole file
and writes the cache again.
"""

from __future__ import annotations

import logging
import os
import stat
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from ..storage import (
    MAX_JSON_BYTES,
    StorageError,
    atomic_write_bytes,
    read_file_bytes,
    unlink_quiet,
)
from ..workspace.packed import PackedFiles
from ..workspace.stat_cache import proven_stat_bytes

logger = logging.getLogger(__name__)

SEED_SCHEMA_VERSION = 3  # what `<id>.json` is written as (the seed's schema)
CACHE_SUFFIX = ".manifest-cache"
_MANIFEST_KEY = b',\n  "file_manifest": '  # top level: nested keys are indented further
_MAX_CACHE_BYTES = 64 * 1024 * 1024
_MAGIC = b"AAMC"
_FORMAT = 2
_DIGEST = 32  # bytes of a sha256
_CHUNK = 1 << 18  # bytes read at a time for the crc of a file not known untouched


class CacheHeader(NamedTuple):
    """What a manifest cache says of the file it was taken from, and what it holds."""

    size: int
    mtime_ns: int
    crc32: int  # of the whole file
    ino: int  # with ctime: the file untouched since (no crc needed)
    ctime_ns: int
    head: int  # where `,\n  "file_manifest": ` begins
    files: int  # paths
    names: int  # bytes of the paths
    stats: int  # bytes of the decoded stat cache (0: none)
    stat_start: int  # the stat cache's JSON string in the file (quotes included)
    stat_end: int
    body_crc32: int  # of the cache after its header (a damaged cache is not used)


_HEADER = struct.Struct("<4sIqqIQqqqqqqqI")
_STAT_KEY = b'\n  "stat_cache": '  # top level, as `_MANIFEST_KEY`


def cache_path(snapshot: Path) -> Path:
    """Return `<id>.manifest-cache` beside `<id>.json`."""
    return snapshot.with_name(snapshot.name.removesuffix(".json") + CACHE_SUFFIX)


def cache_parts(blob: bytes) -> tuple[CacheHeader, memoryview] | None:
    """Return the header and body of an intact manifest cache (parts fit, crc), else None."""
    try:
        magic, version, *fields = _HEADER.unpack_from(blob)
    except struct.error:
        return None
    header = CacheHeader(*fields)
    if magic != _MAGIC or version != _FORMAT or min(header) < 0:
        return None
    if header.stats and not 0 < header.stat_start < header.stat_end <= header.head:
        return None
    body = memoryview(blob)[_HEADER.size :]
    if len(body) != header.names + _DIGEST * header.files + header.stats:
        return None
    return (header, body) if zlib.crc32(body) == header.body_crc32 else None


def cache_blob(header: CacheHeader, body: bytes) -> bytes:
    """Return a manifest cache of `header` (its body crc taken anew) and `body`."""
    header = header._replace(body_crc32=zlib.crc32(body))
    return _HEADER.pack(_MAGIC, _FORMAT, *header) + body


def encode(payload: Mapping[str, Any], manifest: Mapping[str, str]) -> tuple[bytes, int]:
    """Return the file's bytes (v3, `file_manifest` last) and where `file_manifest` begins."""
    fields = {key: value for key, value in payload.items() if key != "file_manifest"}
    fields["schema_version"] = SEED_SCHEMA_VERSION
    ordered = {"schema_version": SEED_SCHEMA_VERSION, **fields, "file_manifest": dict(manifest)}
    data = orjson.dumps(ordered, option=orjson.OPT_INDENT_2) + b"\n"
    return data, data.rfind(_MANIFEST_KEY)


def write(path: Path, payload: Mapping[str, Any], manifest: Mapping[str, str]) -> None:
    """Write the session file atomically (durably), then its manifest cache."""
    data, head = encode(payload, manifest)
    atomic_write_bytes(path, data)
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return
    packed = manifest if isinstance(manifest, PackedFiles) else PackedFiles.of(manifest)
    stats, span = _stats_of(payload, packed, data, head)
    _write_cache(path, st, zlib.crc32(data), head, packed, stats, span)


def _stats_of(
    payload: Mapping[str, Any], files: PackedFiles, data: bytes, head: int
) -> tuple[bytes, tuple[int, int]]:
    """Return the payload's stat cache decoded, and its text's span in `data`, if it fits."""
    text, dirs = payload.get("stat_cache"), payload.get("dir_stats")
    recorded_ns, patterns = payload.get("manifest_recorded_ns"), payload.get("tracked_patterns")
    if not (isinstance(text, str) and isinstance(dirs, dict) and type(recorded_ns) is int):
        return b"", (0, 0)
    if not isinstance(patterns, list):
        return b"", (0, 0)
    stats = proven_stat_bytes(text, files, dirs, recorded_ns, tuple(patterns))
    key = data.find(_STAT_KEY, 0, head)
    start = key + len(_STAT_KEY)
    end = start + len(text) + 2
    # Only a text the reader can put back as it is: the bytes in lowercase hex.
    if stats is None or key < 0 or stats.hex() != text or data[start:end] != f'"{text}"'.encode():
        return b"", (0, 0)
    return stats, (start, end)


def _write_cache(
    path: Path,
    st: os.stat_result,
    crc: int,
    head: int,
    packed: PackedFiles,
    stats: bytes,
    span: tuple[int, int],
) -> None:
    try:
        names = "\0".join(packed.paths).encode("utf-8")
        digests = packed.digest_bytes()
    except (UnicodeEncodeError, ValueError):
        return
    if names.count(0) != max(len(packed.paths) - 1, 0):
        return  # a path with a NUL in it: not ours to split
    header = CacheHeader(
        st.st_size, st.st_mtime_ns, crc, st.st_ino, st.st_ctime_ns,
        head, len(packed.paths), len(names), len(stats), *span, 0,
    )  # fmt: skip
    try:
        blob = cache_blob(header, b"".join((names, digests, stats)))
        atomic_write_bytes(cache_path(path), blob, durable=False)
    except StorageError as exc:  # only slower next time
        logger.debug("manifest cache not written: %s", exc)


def _open(path: Path) -> tuple[int, os.stat_result]:
    """Open a regular file, never through a symlink (errors as `read_file_bytes`)."""
    try:
        # O_NONBLOCK: a FIFO planted in the store must not hang the reader (no effect on files)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ValueError(f"cannot open ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_size > MAX_JSON_BYTES:
            raise ValueError(f"too large ({st.st_size} bytes, limit {MAX_JSON_BYTES})")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _read_at(fd: int, size: int, offset: int) -> bytearray:
    """Read `size` bytes at `offset` into a buffer of that size (fewer if the file is shorter)."""
    buffer = bytearray(size)
    with memoryview(buffer) as view:
        done = _fill(fd, view, offset)
    del buffer[done:]
    return buffer


def _fill(fd: int, view: memoryview, offset: int) -> int:
    """Read the file from `offset` into `view` until it is full; return how much was read."""
    done = 0
    while done < len(view) and (got := os.preadv(fd, [view[done:]], offset + done)) > 0:
        done += got
    return done


def _crc(fd: int, size: int) -> int:
    """Return the crc32 of the file's first `size` bytes, read a chunk at a time."""
    crc = 0
    buffer = bytearray(_CHUNK)
    with memoryview(buffer) as view:
        for offset in range(0, size, _CHUNK):
            got = _fill(fd, view[: min(_CHUNK, size - offset)], offset)
            crc = zlib.crc32(view[:got], crc)
    return crc


def _head(fd: int, header: CacheHeader) -> bytearray | None:
    """Return the file's head closed as a JSON object, the stat cache's text read as `""`."""
    end = header.head + len(_MANIFEST_KEY)
    left, right = (header.stat_start, header.stat_end) if header.stats else (end, end)
    gap = b'""' if header.stats else b""
    data = bytearray(left + len(gap) + end - right)
    with memoryview(data) as view:
        if _fill(fd, view[:left], 0) != left:
            return None
        view[left : left + len(gap)] = gap
        if _fill(fd, view[left + len(gap) :], right) != end - right:
            return None
    if not data.endswith(_MANIFEST_KEY):
        return None
    data[len(data) - len(_MANIFEST_KEY) :] = b"\n}"  # the head, closed
    return data


def _cached(path: Path, fd: int, st: os.stat_result) -> dict[str, Any] | None:
    """Return the file's head parsed with its manifest from the cache, if the cache fits."""
    try:
        blob = read_file_bytes(cache_path(path), _MAX_CACHE_BYTES)[0]
    except (FileNotFoundError, ValueError):
        return None
    parts = cache_parts(blob)
    if parts is None:
        return None
    header, body = parts
    if (header.size, header.mtime_ns) != (st.st_size, st.st_mtime_ns):
        return None
    if not 0 < header.head <= st.st_size - len(_MANIFEST_KEY):
        return None
    if (header.ino, header.ctime_ns) != (st.st_ino, st.st_ctime_ns):
        # Written, or copied: the crc says whether its bytes are the ones cached.
        if _crc(fd, st.st_size) != header.crc32:
            return None
    data = _head(fd, header)
    if data is None:
        return None
    try:
        raw = _parse(data)
        files = _cached_files(body, header)
    except ValueError:
        return None
    if not isinstance(raw, dict) or "file_manifest" in raw:
        return None
    if header.stats:
        if raw.get("stat_cache") != "":
            return None
        stats = bytes(body[len(body) - header.stats :])
        raw["stat_cache"] = text = stats.hex()
        files.proven_stats = (text, stats)
    raw["file_manifest"] = files
    return raw


def _cached_files(body: memoryview, header: CacheHeader) -> PackedFiles:
    """Return the cached manifest (ValueError if its paths are not UTF-8 or miscounted)."""
    names = str(body[: header.names], "utf-8") if header.names else ""
    digests = bytes(body[header.names : header.names + _DIGEST * header.files])
    paths = names.split("\0") if header.files else []
    if len(paths) != header.files:
        raise ValueError("manifest cache: paths miscounted")
    return PackedFiles.cached(paths, digests)


def read(path: Path) -> Any:
    """Read a session file as JSON, its manifest from the cache when the cache fits.

    Raise FileNotFoundError, or ValueError with a readable reason (as `read_json_file`).
    """
    fd, st = _open(path)
    try:
        cached = _cached(path, fd, st)
        if cached is not None:
            return cached
        data = _read_at(fd, st.st_size, 0)
    finally:
        os.close(fd)
    raw = _parse(data)
    if isinstance(raw, dict) and raw and next(reversed(raw)) == "file_manifest":
        _cache_on_read(path, st, data, raw)
    return raw


def _cache_on_read(path: Path, st: os.stat_result, data: bytearray, raw: dict[str, Any]) -> None:
    """Cache the manifest of a file read whole, if its layout lets the head be read alone."""
    manifest = raw["file_manifest"]
    if not _plain_manifest(manifest):
        return
    head = data.rfind(_MANIFEST_KEY)
    try:
        rest = _parse(data[:head] + b"\n}") if head > 0 else None
        if not isinstance(rest, dict) or rest.keys() != raw.keys() - {"file_manifest"}:
            return
        packed = PackedFiles.of(manifest)
    except ValueError:  # not digests: the full reader says why
        return
    _write_cache(path, st, zlib.crc32(data), head, packed, b"", (0, 0))


def _parse(data: bytes | bytearray) -> Any:
    """Parse JSON (bytes, or a buffer read in place); ValueError as `storage.parse_json`."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc})") from None


def _plain_manifest(value: object) -> bool:
    """Return True for a `{path: sha256}` object as the seed writes it (not packed)."""
    return (
        isinstance(value, dict)
        and value.keys() != {"paths", "sha256"}
        and set(map(type, value)) | set(map(type, value.values())) <= {str}
    )


def remove(path: Path) -> bool:
    """Remove the session file's manifest cache; True if there was one."""
    return unlink_quiet(cache_path(path))
