"""The session file `sessions/<id>.json` as the seed defines it, and its manifest cache.

The file is the seed's schema v3: `schema_version` 3 and the seed's twelve fields with the
seed's types (`file_manifest` is `{relative_path: sha256_hex}`, `updated_at` the time of
the save), then our additive fields. We write `file_manifest` last, so everything before it
is a JSON object of its own once closed.

Parsing a 20,000-entry `file_manifest` object is most of a resume's read of the file. So,
beside it, `<id>.manifest-cache` (derived, machine-local, never fsynced, safe to delete)
holds the same manifest packed (the paths in their stored order and the digests joined)
with the identity of the file it was taken from: its size and mtime, and a crc32 of its
bytes from where `file_manifest` begins (an edit that keeps the size and the mtime still
changes it), computed again only when the file's inode or ctime moved (~2 ms for 2 MB).
A copy of the store that keeps mtimes (`cp -p`, rsync, a backup) keeps its caches. When
the identity matches, the reader parses only the part before the manifest and takes the
manifest from the cache; otherwise (missing, stale, damaged) it parses the whole file and
writes the cache again.
"""

from __future__ import annotations

import logging
import os
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ..storage import StorageError, atomic_write_bytes, parse_json, read_file_bytes, unlink_quiet
from ..workspace.packed import PackedFiles

logger = logging.getLogger(__name__)

SEED_SCHEMA_VERSION = 3  # what `<id>.json` is written as (the seed's schema)
CACHE_SUFFIX = ".manifest-cache"
_CACHE_FORMAT = 1
_MANIFEST_KEY = b',\n  "file_manifest": '  # top level: nested keys are indented further
_MAX_CACHE_BYTES = 64 * 1024 * 1024


def cache_path(snapshot: Path) -> Path:
    """Return `<id>.manifest-cache` beside `<id>.json`."""
    return snapshot.with_name(snapshot.name.removesuffix(".json") + CACHE_SUFFIX)


def _identity(st: os.stat_result, data: bytes | memoryview, head: int) -> list[int]:
    return [st.st_size, st.st_mtime_ns, zlib.crc32(memoryview(data)[head:])]


def _untouched(st: os.stat_result) -> list[int]:
    """Return the file's inode and ctime: unchanged, nothing wrote it since (no crc needed)."""
    return [st.st_ino, st.st_ctime_ns]


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
    _write_cache(path, st, _identity(st, data, head), head, manifest)


def _write_cache(
    path: Path, st: os.stat_result, identity: list[int], head: int, manifest: Mapping[str, str]
) -> None:
    packed = manifest if isinstance(manifest, PackedFiles) else PackedFiles.of(manifest)
    record = {
        "cache": _CACHE_FORMAT,
        "snapshot": identity,
        "untouched": _untouched(st),
        "head": head,
        "paths": packed.paths,
        "sha256": packed.digests,
    }
    try:
        atomic_write_bytes(cache_path(path), orjson.dumps(record), durable=False)
    except StorageError as exc:  # only slower next time
        logger.debug("manifest cache not written: %s", exc)


def _cached(path: Path, st: os.stat_result, data: bytes) -> tuple[PackedFiles, int] | None:
    """Return the cached manifest and its offset if the cache belongs to these bytes."""
    try:
        raw = parse_json(read_file_bytes(cache_path(path), _MAX_CACHE_BYTES)[0])
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("cache") != _CACHE_FORMAT:
        return None
    head = raw.get("head")
    if type(head) is not int or not 0 < head < len(data):
        return None
    if data[head : head + len(_MANIFEST_KEY)] != _MANIFEST_KEY:
        return None
    identity = raw.get("snapshot")
    if not isinstance(identity, list) or identity[:2] != [st.st_size, st.st_mtime_ns]:
        return None
    if raw.get("untouched") != _untouched(st) and identity != _identity(st, data, head):
        return None  # (written, or copied: the crc says whether its manifest is the same)
    try:
        return PackedFiles.decode(raw.get("paths"), raw.get("sha256"), derived=True), head
    except ValueError:
        return None


def read(path: Path) -> Any:
    """Read a session file as JSON, its manifest from the cache when the cache fits.

    Raise FileNotFoundError, or ValueError with a readable reason (as `read_json_file`).
    """
    data, st = read_file_bytes(path)
    cached = _cached(path, st, data)
    if cached is not None:
        files, head = cached
        try:
            raw = parse_json(data[:head] + b"\n}")
        except ValueError:
            raw = None
        if isinstance(raw, dict) and "file_manifest" not in raw:
            raw["file_manifest"] = files
            return raw
    raw = parse_json(data)
    if isinstance(raw, dict) and raw and next(reversed(raw)) == "file_manifest":
        _cache_on_read(path, st, data, raw)
    return raw


def _cache_on_read(path: Path, st: os.stat_result, data: bytes, raw: dict[str, Any]) -> None:
    """Cache the manifest of a file read whole, if its layout lets the head be read alone."""
    manifest = raw["file_manifest"]
    if not _plain_manifest(manifest):
        return
    head = data.rfind(_MANIFEST_KEY)
    try:
        rest = parse_json(data[:head] + b"\n}") if head > 0 else None
        if not isinstance(rest, dict) or rest.keys() != raw.keys() - {"file_manifest"}:
            return
        _write_cache(path, st, _identity(st, data, head), head, manifest)
    except ValueError:  # not digests: the full reader says why
        pass


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
