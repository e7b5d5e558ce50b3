"""`checkpoints/<id>/<n>.index`: a derived, machine-local index of one checkpoint record.

A record (`<n>.json`) of 20,000 files is ~3 MB of JSON whose `files` object takes 6–13 ms
to parse. A resume that only asks which checkpoint holds each changed file reads this
index instead, and parses none of it: a one-line JSON header, then the record's kept
paths sorted (UTF-8, one offset each) and their digests packed (32 bytes each), searched
by bisection in place (200 paths of 20,000: ~1 ms, where parsing a JSON list of the
paths alone took ~5 ms in a fresh process). It is a hint and nothing more: written
beside the record, identified by the record's size, mtime and a CRC-32 of its bytes (the
CRC is not recomputed while the record's inode is the one seen: a record is written
once, by a rename, and never in place), safe to delete, rebuilt when missing, stale or
of another version; the record stays the truth for restores, copies and the blob
collector, and a version that does not know the index simply ignores it. The record
format is unchanged.
"""

from __future__ import annotations

import os
import sys
import zlib
from array import array
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from .storage import StorageError, atomic_write_bytes, read_file_bytes

VERSION = 2
SUFFIX = ".index"
_DIGEST = 32  # bytes of a SHA-256 digest
_HEADER_MAX = 4096


def index_path(record_path: Path) -> Path:
    """Return the index beside a record (`7.json` → `7.index`)."""
    return record_path.with_suffix(SUFFIX)


def write(record_path: Path, data: bytes, session_id: str, files: Mapping[str, str]) -> None:
    """Write the index of the record just written as `data` (a failure only costs speed)."""
    try:
        st = os.lstat(record_path)
        keys = sorted((p.encode("utf-8", "surrogatepass"), p) for p in files)
        digests = b"".join(bytes.fromhex(files[p]) for _, p in keys)
    except (OSError, ValueError):
        return
    if len(digests) != _DIGEST * len(keys):
        return
    offsets = array("I", [0])
    end = 0
    for key, _ in keys:
        end += len(key)
        offsets.append(end)
    header = {
        "v": VERSION,
        "session_id": session_id,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ino": st.st_ino,
        "crc32": zlib.crc32(data),
        "n": len(keys),
        "order": sys.byteorder,
    }
    body = [orjson.dumps(header), b"\n", offsets.tobytes(), *(k for k, _ in keys), digests]
    try:
        atomic_write_bytes(index_path(record_path), b"".join(body), durable=False)
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
        index = orjson.loads(raw[: raw.index(b"\n", 0, _HEADER_MAX)])
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
    return _lookup(raw, index, wanted)


def _lookup(raw: bytes, index: dict[str, Any], wanted: Iterable[str]) -> dict[str, str] | None:
    """Bisect the packed paths of `raw` for each wanted path (None: the body is damaged)."""
    n = index["n"]
    base = raw.index(b"\n") + 1
    offsets = array("I")
    offsets.frombytes(raw[base : base + offsets.itemsize * (n + 1)])
    if len(offsets) != n + 1 or offsets[0] != 0:
        return None
    names = base + offsets.itemsize * (n + 1)
    packed = names + offsets[n]
    if len(raw) != packed + _DIGEST * n:
        return None
    found: dict[str, str] = {}
    for path in wanted:
        try:
            key = path.encode("utf-8", "surrogatepass")
        except (AttributeError, UnicodeError):
            return None
        lo, hi = 0, n
        while lo < hi:  # offsets out of order only make a wrong hint, never an error
            mid = (lo + hi) // 2
            if raw[names + offsets[mid] : names + offsets[mid + 1]] < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < n and raw[names + offsets[lo] : names + offsets[lo + 1]] == key:
            found[path] = raw[packed + _DIGEST * lo : packed + _DIGEST * (lo + 1)].hex()
    return found


def _fits(index: Any, session_id: str, st: os.stat_result) -> bool:
    """Return True if `index` is a well-formed header, this session's, of the record as it is."""
    if not isinstance(index, dict) or index.get("v") != VERSION:
        return False
    numbers = ("size", "mtime_ns", "ino", "crc32", "n")
    if not all(type(index.get(k)) is int for k in numbers) or index["n"] < 0:
        return False
    if index.get("order") != sys.byteorder or index.get("session_id") != session_id:
        return False
    return (index["size"], index["mtime_ns"]) == (st.st_size, st.st_mtime_ns)
