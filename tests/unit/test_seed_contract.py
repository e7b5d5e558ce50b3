"""The session file is the seed's (schema v3): golden files in, files the seed can read out.

`seed/session_v3.schema.json` is the seed's field table (`000_…`) as a JSON Schema and
`seed/a1b2c3d4e5f6.json` a session file written by hand from that table, not by our code.
The manifest cache beside each file (`<id>.manifest-cache`) is derived: deleting, damaging,
or outliving its file changes nothing but speed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from session.local import snapshot_file
from session.local.manager import SessionManager
from session.workspace.packed import PackedFiles

from .conftest import make_lifecycle, request, response, run_turn

SEED = Path(__file__).parent / "seed"
SCHEMA = json.loads((SEED / "session_v3.schema.json").read_text())
SID = "a1b2c3d4e5f6"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def golden(workspace: Path) -> dict[str, Any]:
    text = (SEED / f"{SID}.json").read_text()
    prompt = (workspace / "templates" / "prompt.txt").read_text()
    return json.loads(text.replace("PROMPT_SHA256", sha(prompt)))


def place(manager: SessionManager, data: dict[str, Any]) -> Path:
    manager.layout.ensure_dirs()
    path = manager.layout.snapshot_path(data["session_id"])
    path.write_text(json.dumps(data, indent=2))
    manager.write_pointer("inst", data["session_id"])
    return path


def read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_the_schema_and_the_golden_file_agree(workspace: Path) -> None:
    """The golden file is valid, and the schema refuses what the seed's table does not allow."""
    data = golden(workspace)
    jsonschema.validate(data, SCHEMA)
    for field, bad in (
        ("schema_version", 4),
        ("file_manifest", {"paths": ["a"], "sha256": "0" * 64}),
        ("session_id", "A1B2C3D4E5F6"),
        ("decisions", "one decision"),
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**data, field: bad}, SCHEMA)
    del data["phase"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, SCHEMA)


def test_a_seed_file_is_read_resumed_and_written_back_as_the_seed_defines_it(
    manager: SessionManager, workspace: Path
) -> None:
    path = place(manager, golden(workspace))
    lc = make_lifecycle(manager)
    previous = lc.find_previous()
    assert previous is not None and previous.session_id == SID
    assert previous.prompt().startswith("Previous session found (last active: 2026-03-31 14:22 UTC")
    assert lc.resume_or_start(previous, accept=True) == "resumed"
    context = lc.resume_context
    assert "User designed a customer support agent with three tools." in context
    assert "- Chose REST API tools over SDK wrappers for portability" in context
    assert "- agent_spec.md: modified" in context  # its digest in the file is zeros
    assert "templates/prompt.txt" not in context  # unchanged
    assert lc.message_history()[:2] == [
        request("Write the spec for the support agent."),
        response("Saved agent_spec.md with three tools."),
    ]
    assert run_turn(lc, "go on", "done").number == 1
    before_save = datetime.now(UTC)
    lc.close()

    written = read(path)
    jsonschema.validate(written, SCHEMA)
    assert written["schema_version"] == 3
    spec = (workspace / "agent_spec.md").read_text()
    assert written["file_manifest"]["agent_spec.md"] == sha(spec)
    assert written["checkpoint_count"] >= 2 and written["phase"] == "design"
    assert written["created_at"].startswith("2026-03-30T10:15:00")
    # `updated_at` is the time of the last save, not of the last event
    assert datetime.fromisoformat(written["updated_at"]) >= before_save.replace(microsecond=0)


def test_a_v4_file_from_the_previous_version_is_written_back_as_3(
    manager: SessionManager, workspace: Path
) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    sid = lc.session_id
    lc.close()
    path = manager.layout.snapshot_path(sid)
    v4 = read(path)
    files = v4["file_manifest"]
    v4["schema_version"] = 4  # as 0.x wrote it: the manifest packed
    v4["file_manifest"] = {"paths": list(files), "sha256": "".join(files.values())}
    path.write_text(json.dumps(v4, indent=2))
    snapshot_file.remove(path)

    lc = make_lifecycle(manager)
    previous = lc.find_previous()
    assert previous is not None and lc.resume_or_start(previous, accept=True) == "resumed"
    assert "2 tracked file(s) unchanged" in lc.resume_context
    run_turn(lc, "two", "second")
    lc.close()
    written = read(path)
    jsonschema.validate(written, SCHEMA)
    assert written["file_manifest"] == files


def test_a_newer_unknown_version_stays_read_only(manager: SessionManager, workspace: Path) -> None:
    data = {**golden(workspace), "schema_version": 9}
    path = place(manager, data)
    before = path.read_bytes()
    lc = make_lifecycle(manager)
    previous = lc.find_previous()
    assert previous is not None
    lc.resume_or_start(previous, accept=True)
    lc.close()
    assert path.read_bytes() == before


def saved(manager: SessionManager) -> tuple[str, Path]:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    sid = lc.session_id
    lc.close()
    return sid, manager.layout.snapshot_path(sid)


def resumed_manifest(manager: SessionManager, sid: str) -> dict[str, str]:
    state, _read_only = manager.read_snapshot(sid)
    assert state is not None
    return dict(state.file_manifest)


def test_the_manifest_cache_is_used_only_for_the_file_it_was_taken_from(
    manager: SessionManager,
) -> None:
    sid, path = saved(manager)
    cache = snapshot_file.cache_path(path)
    assert cache.exists()
    files = read(path)["file_manifest"]
    assert resumed_manifest(manager, sid) == files

    # The file edited by hand (same size: only its ctime and mtime tell): the edit is read.
    text = path.read_text()
    name = next(iter(files))
    edited = text.replace(files[name], "f" * 64)
    assert len(edited) == len(text)
    path.write_text(edited)
    assert resumed_manifest(manager, sid)[name] == "f" * 64
    # ...and the cache was taken again, from the edited file.
    data = path.read_bytes()
    st = path.stat()
    header = cache_header(cache)
    assert (header.size, header.mtime_ns, header.crc32) == (
        st.st_size,
        st.st_mtime_ns,
        zlib.crc32(data),
    )
    assert header.head == read_head(path)
    assert resumed_manifest(manager, sid)[name] == "f" * 64


def test_an_edit_that_keeps_size_and_mtime_is_still_seen(manager: SessionManager) -> None:
    sid, path = saved(manager)
    files = read(path)["file_manifest"]
    st = path.stat()
    name = next(iter(files))
    path.write_text(path.read_text().replace(files[name], "e" * 64))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # as it was
    assert path.stat().st_size == st.st_size
    assert resumed_manifest(manager, sid)[name] == "e" * 64


def test_a_copy_of_the_store_that_keeps_mtimes_keeps_its_caches(
    manager: SessionManager, tmp_path: Path
) -> None:
    sid, path = saved(manager)
    cache = snapshot_file.cache_path(path)
    before = cache.read_bytes()
    copy = tmp_path / "restored"
    shutil.copytree(manager.layout.sessions_dir, copy)  # copy2: mtimes kept, inodes new
    written = (copy / cache.name).stat().st_mtime_ns
    manifest = snapshot_file.read(copy / path.name)["file_manifest"]
    assert isinstance(manifest, PackedFiles)  # taken from the cache, not parsed
    assert (copy / cache.name).stat().st_mtime_ns == written
    assert (copy / cache.name).read_bytes() == before
    # A plain read of the manifest parses it (what a file without a fitting cache costs).
    (copy / cache.name).unlink()
    assert isinstance(snapshot_file.read(copy / path.name)["file_manifest"], dict)


@pytest.mark.parametrize("damage", ["delete", "garbage", "other file", "wrong head"])
def test_a_missing_or_damaged_cache_changes_nothing_but_speed(
    manager: SessionManager, damage: str
) -> None:
    sid, path = saved(manager)
    files = read(path)["file_manifest"]
    cache = snapshot_file.cache_path(path)
    parts = snapshot_file.cache_parts(cache.read_bytes())
    assert parts is not None
    header, body = parts
    if damage == "delete":
        cache.unlink()
    elif damage == "garbage":
        cache.write_bytes(os.urandom(200))
    elif damage == "other file":
        names = header.names
        digests = b"\xee" * (32 * header.files)
        forged = bytes(body[:names]) + digests + bytes(body[names + len(digests) :])
        other = header._replace(size=header.size + 1)  # the size of another file
        cache.write_bytes(snapshot_file.cache_blob(other, forged))
    else:
        cache.write_bytes(snapshot_file.cache_blob(header._replace(head=3), bytes(body)))
    assert resumed_manifest(manager, sid) == files
    assert cache_header(cache).head == read_head(path)  # rebuilt


def cache_header(cache: Path) -> snapshot_file.CacheHeader:
    parts = snapshot_file.cache_parts(cache.read_bytes())
    assert parts is not None
    return parts[0]


def read_head(path: Path) -> int:
    return path.read_bytes().rfind(b',\n  "file_manifest": ')


def test_a_cache_from_an_older_save_is_not_used(manager: SessionManager, workspace: Path) -> None:
    sid, path = saved(manager)
    old = snapshot_file.cache_path(path).read_bytes()
    (workspace / "agent_spec.md").write_text("changed\n")
    lc = make_lifecycle(manager)
    previous = lc.find_previous()
    assert previous is not None and lc.resume_or_start(previous, accept=True) == "resumed"
    lc.explicit_save()
    lc.close()
    snapshot_file.cache_path(path).write_bytes(old)  # the cache of the previous save
    assert resumed_manifest(manager, sid)["agent_spec.md"] == sha("changed\n")


def test_reset_removes_the_cache_with_the_session(manager: SessionManager) -> None:
    sid, path = saved(manager)
    assert snapshot_file.cache_path(path).exists()
    manager.delete_session(sid)
    assert not snapshot_file.cache_path(path).exists() and not path.exists()


# -- the seed's exit: saved, and the pointer names the session -------------------------------


def assert_saved_and_pointed(manager: SessionManager, session_id: str) -> None:
    written = read(manager.layout.snapshot_path(session_id))
    jsonschema.validate(written, SCHEMA)
    assert written["session_id"] == session_id
    assert manager.read_pointer("inst") == session_id


def test_a_fresh_launch_that_ends_without_a_turn_is_saved(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    assert lc.find_previous() is None
    sid = lc.session_id
    assert lc.close()
    assert_saved_and_pointed(manager, sid)
    assert set(read(manager.layout.snapshot_path(sid))["file_manifest"]) == {
        "agent_spec.md",
        "templates/prompt.txt",
    }  # the baseline the next launch measures drift from
    assert make_lifecycle(manager).find_previous() is None  # nothing in it to resume


def first_session(manager: SessionManager) -> tuple[str, bytes]:
    lc = make_lifecycle(manager)
    run_turn(lc, "design an agent", "Sure.")
    sid = lc.session_id
    lc.close()
    return sid, manager.layout.log_path(sid).read_bytes()


def test_declining_then_exiting_saves_the_new_session_and_moves_the_pointer(
    manager: SessionManager,
) -> None:
    old, old_log = first_session(manager)
    lc = make_lifecycle(manager)
    previous = lc.find_previous()
    assert previous is not None and previous.session_id == old
    assert lc.resume_or_start(previous, accept=False) == "new"
    new = lc.session_id
    assert new != old
    assert lc.close()
    assert_saved_and_pointed(manager, new)
    assert make_lifecycle(manager).find_previous() is None  # the declined one is not offered again
    # The declined session stays whole, listed and openable.
    assert manager.layout.log_path(old).read_bytes() == old_log
    assert old in {info.session_id for info in manager.list_sessions()}
    again = make_lifecycle(manager)
    again.resume(old)
    assert again.session_id == old and again.message_history()
    again.close()


def test_new_then_exiting_saves_the_new_session_and_moves_the_pointer(
    manager: SessionManager,
) -> None:
    old, old_log = first_session(manager)
    lc = make_lifecycle(manager)
    previous = lc.find_previous()
    assert previous is not None and lc.resume_or_start(previous, accept=True) == "resumed"
    previous_id, new = lc.new_session()
    assert previous_id == old and new != old
    assert lc.close()
    assert_saved_and_pointed(manager, new)
    assert manager.layout.log_path(old).read_bytes().startswith(old_log)  # only appended to
    assert manager.layout.snapshot_path(old).exists()
