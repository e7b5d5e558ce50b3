"""The manifest cache beside a session file (`<id>.manifest-cache`): derived, never wrong.

Whatever becomes of it (stale, truncated, damaged, pointing elsewhere, deleted, of an
older version), a read gives what parsing the whole file gives, and the cache is written
again.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from session.local import snapshot_file
from session.local.manager import SessionManager
from session.workspace.packed import PackedFiles
from session.workspace.stat_cache import unpack_stat_cache

from .conftest import make_lifecycle, run_turn


def saved(manager: SessionManager, workspace: Path) -> Path:
    """Save a session of a few tracked files; return its file (its cache beside it)."""
    for index in range(12):
        (workspace / "templates" / f"t{index}.md").write_text(f"template {index}\n")
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    sid = lc.session_id
    lc.close()
    return manager.layout.snapshot_path(sid)


def whole(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_bytes())
    return data


def as_read(raw: Any) -> dict[str, Any]:
    """A read's result as plain JSON (the manifest as `{path: sha256}`)."""
    assert isinstance(raw, dict)
    return {**raw, "file_manifest": dict(raw["file_manifest"].items())}


def parts(path: Path) -> tuple[snapshot_file.CacheHeader, bytes]:
    found = snapshot_file.cache_parts(snapshot_file.cache_path(path).read_bytes())
    assert found is not None
    return found[0], bytes(found[1])


def test_a_saved_file_reads_from_its_cache_as_parsing_it_whole_would(
    manager: SessionManager, workspace: Path
) -> None:
    path = saved(manager, workspace)
    header, _ = parts(path)
    assert header.stats > 0 and header.stat_start > 0  # written here: its stat cache too
    raw = snapshot_file.read(path)
    files = raw["file_manifest"]
    assert isinstance(files, PackedFiles) and files.proven_stats is not None
    assert as_read(raw) == whole(path)
    assert list(raw) == list(whole(path))  # the same keys, in the same order


def test_the_cached_stat_cache_unpacks_as_the_files_own_text(
    manager: SessionManager, workspace: Path
) -> None:
    path = saved(manager, workspace)
    raw = snapshot_file.read(path)
    text, files, dirs = raw["stat_cache"], raw["file_manifest"], raw["dir_stats"]
    args = (dirs, raw["manifest_recorded_ns"], tuple(raw["tracked_patterns"]))
    proven = unpack_stat_cache(text, files, *args)
    checked = unpack_stat_cache(text, PackedFiles.of(dict(files.items())), *args)
    assert proven is not None and checked is not None
    assert dict(proven.stats.items()) == dict(checked.stats.items())
    assert proven.listing == checked.listing and proven.orphans == checked.orphans
    # A text other than the one proven is checked as any other.
    other = text[:40] + ("1" if text[40] == "0" else "0") + text[41:]  # a size changed
    assert unpack_stat_cache(other, files, *args) is None


def damage_body(header: snapshot_file.CacheHeader, body: bytes) -> bytes:
    """The cache with one byte of its stat cache changed (its crc no longer fits)."""
    at = len(body) - header.stats // 2
    forged = body[:at] + bytes([body[at] ^ 0x40]) + body[at + 1 :]
    return snapshot_file.cache_blob(header, body)[: -len(body)] + forged


@pytest.mark.parametrize(
    "damage",
    ["deleted", "truncated", "a byte of its body", "a byte of its header", "span elsewhere"],
)
def test_a_damaged_cache_reads_as_the_whole_file_and_is_written_again(
    manager: SessionManager, workspace: Path, damage: str
) -> None:
    path = saved(manager, workspace)
    cache = snapshot_file.cache_path(path)
    header, body = parts(path)
    blob = cache.read_bytes()
    if damage == "deleted":
        cache.unlink()
    elif damage == "truncated":
        cache.write_bytes(blob[: len(blob) // 2])
    elif damage == "a byte of its body":
        cache.write_bytes(damage_body(header, body))
    elif damage == "a byte of its header":
        cache.write_bytes(blob[:20] + bytes([blob[20] ^ 0x01]) + blob[21:])
    else:  # intact, but naming another place for the stat cache's text
        moved = header._replace(stat_start=header.stat_start - 5)
        cache.write_bytes(snapshot_file.cache_blob(moved, body))
    raw = snapshot_file.read(path)
    assert as_read(raw) == whole(path)
    assert snapshot_file.cache_parts(cache.read_bytes()) is not None  # written again
    assert as_read(snapshot_file.read(path)) == whole(path)


def test_a_file_another_version_wrote_is_cached_without_its_stats(
    manager: SessionManager, workspace: Path
) -> None:
    path = saved(manager, workspace)
    snapshot_file.cache_path(path).write_text('{"cache": 1}')  # the JSON cache of 0.x
    raw = snapshot_file.read(path)
    assert isinstance(raw["file_manifest"], dict)  # parsed whole
    header, _ = parts(path)
    assert header.stats == 0  # its stat cache is checked as the file has it, when used
    cached = snapshot_file.read(path)
    assert isinstance(cached["file_manifest"], PackedFiles)
    assert cached["file_manifest"].proven_stats is None
    assert as_read(cached) == whole(path)


def test_a_copied_store_reads_its_caches_after_checking_the_bytes(
    manager: SessionManager, workspace: Path, tmp_path: Path
) -> None:
    path = saved(manager, workspace)
    copy = tmp_path / "copy"
    shutil.copytree(path.parent, copy)  # new inodes: the crc of the file says it is the same
    raw = snapshot_file.read(copy / path.name)
    assert isinstance(raw["file_manifest"], PackedFiles)
    assert as_read(raw) == whole(path)
    text = (copy / path.name).read_bytes()
    st = (copy / path.name).stat()
    (copy / path.name).write_bytes(text.replace(b'"stat_cache": "', b'"stat_cache": "0', 1)[:-1])
    os.utime(copy / path.name, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and mtime kept
    assert as_read(snapshot_file.read(copy / path.name)) == whole(copy / path.name)
