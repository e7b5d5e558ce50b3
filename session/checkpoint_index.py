"""`checkpoints/<id>/<n>.index`: a derived, machine-local index of one checkpoint record.

A record (`<n>.json`) of 20,000 files is ~3 MB of JSON whose `files` object takes 6–13 ms
to parse. A resume that only asks which checkpoint holds each changed file reads this
index instead: the record's kept paths sorted and their digests packed in one string
(~1 ms). It is a hint and nothing more: written beside the record, identified by the
record's size, mtime and a CRC-32 of its bytes (the CRC is not recomputed while the
record's inode is the one seen: a record is written once, by a rename, and never in
place), safe to delete, rebuilt when missing or stale; the record stays the truth for
restores, copies and the blob collector, and a version that does not know the index
simply ignores it. The record format is unchanged.
"""

from __future__ import annotations

import bisect
import os
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from .storage import StorageError, atomic_write_bytes, read_file_bytes

VERSION = 1
SUFFIX = ".index"
_DIGEST = 64


def index_path(record_path: Path) -> Path:
    """Return the index beside a record (`7.json` → `7.index`)."""
    return record_path.with_suffix(SUFFIX)


def write(record_path: Path, data: bytes, session_id: str, files: Mapping[str, str]) -> None:
    """Write the index of the record just written as `data` (a failure only costs speed)."""
    try:
        st = os.lstat(record_path)
    except OSError:
        return
    paths = sorted(files)
    index = {
        "v": VERSION,
        "session_id": session_id,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ino": st.st_ino,
        "crc32": zlib.crc32(data),
        "paths": paths,
        "digests": "".join(files[p] for p in paths),
    }
    try:
        atomic_write_bytes(index_path(record_path), orjson.dumps(index), durable=False)
    except StorageError:
        pass


def held(record_path: Path, session_id: str, wanted: Iterable[str]) -> dict[str, str] | None:
    """Return `{path: digest}` for the wanted paths the record keeps, from its index.

    None when the index cannot answer (missing, damaged, another session's, or stale:
    the record changed since it was written): read the record then.
    """
    try:
        st = os.lstat(record_path)
        raw, _ = read_file_bytes(index_path(record_path), 64 << 20)
        index = orjson.loads(raw)
    except (OSError, ValueError):
        return None
    if not _fits(index, session_id, st):
        return None
    if index["ino"] != st.st_ino:
        try:  # the same size and mtime but another inode (a copied store): check the bytes
            data, _ = read_file_bytes(record_path, 64 << 20)
        except (OSError, ValueError):
            return None
        if zlib.crc32(data) != index["crc32"]:
            return None
    paths: list[Any] = index["paths"]
    digests: str = index["digests"]
    found: dict[str, str] = {}
    try:
        for path in wanted:
            at = bisect.bisect_left(paths, path)
            if at < len(paths) and paths[at] == path:
                found[path] = digests[at * _DIGEST : (at + 1) * _DIGEST]
    except TypeError:  # a path that is not a string: a damaged index
        return None
    return found


def _fits(index: Any, session_id: str, st: os.stat_result) -> bool:
    """Return True if `index` is well formed, this session's, and of the record as it is."""
    if not isinstance(index, dict) or index.get("v") != VERSION:
        return False
    numbers = ("size", "mtime_ns", "ino", "crc32")
    if not all(type(index.get(k)) is int for k in numbers):
        return False
    paths, digests = index.get("paths"), index.get("digests")
    if not isinstance(paths, list) or not isinstance(digests, str):
        return False
    if len(digests) != _DIGEST * len(paths):
        return False
    if index.get("session_id") != session_id:
        return False
    return (index["size"], index["mtime_ns"]) == (st.st_size, st.st_mtime_ns)
