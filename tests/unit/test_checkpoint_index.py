"""`checkpoints/<id>/<n>.index`: a derived hint beside each record, never the truth."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import orjson
import pytest

from session import checkpoint_index
from session.checkpoints import CheckpointRecord, CheckpointStore
from session.lifecycle import SessionLifecycle
from session.store.manager import SessionManager

from .conftest import make_lifecycle, run_turn


def saved(manager: SessionManager) -> tuple[SessionLifecycle, Path]:
    """A session with one turn and a save: checkpoint 1 keeps both tracked files."""
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    number = lc.explicit_save().checkpoint
    assert number == 1
    return lc, manager.checkpoints_dir / lc.session_id / "1.json"


def no_record_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make reading a record an error: what answers then came from the index."""

    def refuse(*args: object, **kwargs: object) -> CheckpointRecord:
        raise AssertionError("the record was parsed")

    monkeypatch.setattr(CheckpointRecord, "model_validate_json", refuse)


def test_a_checkpoint_writes_its_index_and_a_resume_reads_only_that(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    lc, record = saved(manager)
    index = checkpoint_index.index_path(record)
    assert index.is_file() and index.name == "1.index"
    assert json.loads(index.read_bytes())["paths"] == ["agent_spec.md", "templates/prompt.txt"]
    no_record_parse(monkeypatch)
    held = lc.checkpoints_holding(["agent_spec.md", "templates/prompt.txt", "new.txt"])
    assert held == {"agent_spec.md": 1, "templates/prompt.txt": 1, "new.txt": None}
    lc.close()


def test_a_missing_or_damaged_index_is_rebuilt_from_the_record(manager: SessionManager) -> None:
    lc, record = saved(manager)
    index = checkpoint_index.index_path(record)
    good = index.read_bytes()
    damage = [
        None,  # deleted
        b"{not json",
        orjson.dumps({**orjson.loads(good), "digests": "ab"}),  # digests do not fit the paths
        orjson.dumps({**orjson.loads(good), "paths": [1, 2]}),  # paths that are not strings
        orjson.dumps({**orjson.loads(good), "session_id": "ffffffffffff"}),  # another's
        orjson.dumps({**orjson.loads(good), "v": 99}),
    ]
    for bad in damage:
        if bad is None:
            index.unlink()
        else:
            index.write_bytes(bad)
        assert lc.checkpoints_holding(["agent_spec.md"]) == {"agent_spec.md": 1}, bad
        assert index.read_bytes() == good, bad  # written again from the record
    lc.close()


def test_a_record_changed_since_its_index_is_read_not_the_index(
    manager: SessionManager, workspace: Path
) -> None:
    lc, record = saved(manager)
    data = json.loads(record.read_bytes())
    del data["files"]["templates/prompt.txt"]  # the record now keeps one file
    record.write_text(json.dumps(data))
    assert lc.checkpoints_holding(["templates/prompt.txt", "agent_spec.md"]) == {
        "templates/prompt.txt": None,
        "agent_spec.md": 1,
    }
    lc.close()


def test_a_record_replaced_with_its_size_and_mtime_kept_is_caught_by_its_crc(
    manager: SessionManager,
) -> None:
    lc, record = saved(manager)
    st = record.stat()
    text = record.read_text()
    digest = json.loads(text)["files"]["agent_spec.md"]
    other = record.with_name("replacement")
    other.write_text(text.replace(digest, "0" * 64))  # same size; a blob that is not there
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime
    other.replace(record)  # another inode (a restored backup, a copy)
    assert lc.checkpoints_holding(["agent_spec.md"]) == {"agent_spec.md": None}
    lc.close()


def test_a_copied_store_uses_its_indexes_after_checking_their_records(
    manager: SessionManager, workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lc, _ = saved(manager)
    session_id = lc.session_id
    lc.close()
    copy = home.with_name("copied-home")
    shutil.copytree(home, copy, symlinks=True)  # new inodes, the same sizes and mtimes
    copied = SessionManager(workspace, home=copy)
    no_record_parse(monkeypatch)
    store = CheckpointStore(copied)
    assert store.holding(session_id, ["agent_spec.md"]) == {"agent_spec.md": 1}


def test_a_forged_index_is_only_a_hint_a_copy_comes_from_the_record(
    manager: SessionManager, workspace: Path
) -> None:
    """An index naming a file its record does not keep can claim a checkpoint, never content."""
    lc, record = saved(manager)
    index = checkpoint_index.index_path(record)
    forged = orjson.loads(index.read_bytes())
    spec_digest = forged["digests"][:64]
    forged["paths"] = ["agent_spec.md", "secret.txt"]
    forged["digests"] = spec_digest * 2
    index.write_bytes(orjson.dumps(forged))
    assert lc.checkpoints_holding(["secret.txt"]) == {"secret.txt": 1}  # the hint is wrong…
    assert lc.checkpoint_copy("secret.txt", 1) is None  # …and gives nothing away
    lc.close()


def test_records_listing_and_deletion_see_the_index_as_part_of_the_checkpoint(
    manager: SessionManager,
) -> None:
    lc, record = saved(manager)
    session_id = lc.session_id
    assert [r.number for r in lc.list_checkpoints()] == [1]  # the index is not a record
    lc.close()
    manager.delete_session(session_id)
    assert not record.parent.exists()  # record and index go together
