"""`checkpoints/<id>/<n>.index`: a derived hint beside each record, never the truth."""

from __future__ import annotations

import json
import os
import random
import shutil
from array import array
from pathlib import Path

import orjson
import pytest

from session import checkpoint_index
from session.checkpoints import CheckpointRecord
from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager

from .conftest import make_lifecycle, run_turn


def saved(manager: SessionManager) -> tuple[SessionLifecycle, Path]:
    """A session with one turn and a save: checkpoint 1 keeps both tracked files."""
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    number = lc.explicit_save().checkpoint
    assert number == 1
    return lc, manager.layout.checkpoints_dir / lc.session_id / "1.json"


def parts(index: Path) -> tuple[dict[str, object], list[str], list[str]]:
    """Read an index back: its header, its paths and their digests (hex)."""
    raw = index.read_bytes()
    head, _, body = raw.partition(b"\n")
    header = orjson.loads(head)
    n = header["n"]
    offsets = array("I")
    offsets.frombytes(body[: offsets.itemsize * (n + 1)])
    names = body[offsets.itemsize * (n + 1) :]
    paths = [names[offsets[i] : offsets[i + 1]].decode() for i in range(n)]
    packed = names[offsets[n] :]
    return header, paths, [packed[32 * i : 32 * (i + 1)].hex() for i in range(n)]


def forge(header: dict[str, object], paths: list[str], digests: list[str]) -> bytes:
    """An index as `checkpoint_index.write` lays one out, from given parts."""
    offsets = array("I", [0])
    for path in paths:
        offsets.append(offsets[-1] + len(path.encode()))
    body = b"".join(p.encode() for p in paths) + b"".join(bytes.fromhex(d) for d in digests)
    return orjson.dumps({**header, "n": len(paths)}) + b"\n" + offsets.tobytes() + body


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
    assert parts(index)[1] == ["agent_spec.md", "templates/prompt.txt"]
    no_record_parse(monkeypatch)
    held = lc.checkpoints_holding(["agent_spec.md", "templates/prompt.txt", "new.txt"])
    assert held == {"agent_spec.md": 1, "templates/prompt.txt": 1, "new.txt": None}
    lc.close()


def test_a_missing_or_damaged_index_is_rebuilt_from_the_record(manager: SessionManager) -> None:
    lc, record = saved(manager)
    index = checkpoint_index.index_path(record)
    good = index.read_bytes()
    header, paths, digests = parts(index)
    damage = [
        None,  # deleted
        b"{not json",
        b"",
        good[: len(good) - 1],  # cut short: the digests do not fit the paths
        good + b"x",
        forge({**header, "n": 5}, paths, digests)[: len(good)],  # a count that does not fit
        forge({**header, "n": "2"}, paths, digests),
        forge({**header, "session_id": "ffffffffffff"}, paths, digests),  # another's
        forge({**header, "v": 1}, paths, digests),  # the JSON layout of the first version
        forge({**header, "order": "middle"}, paths, digests),  # another machine's
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
    store = copied.checkpoint_store()
    assert store.holding(session_id, ["agent_spec.md"]) == {"agent_spec.md": 1}


def test_a_forged_index_is_only_a_hint_a_copy_comes_from_the_record(
    manager: SessionManager, workspace: Path
) -> None:
    """An index naming a file its record does not keep can claim a checkpoint, never content."""
    lc, record = saved(manager)
    index = checkpoint_index.index_path(record)
    header, _, digests = parts(index)
    index.write_bytes(forge(header, ["agent_spec.md", "secret.txt"], [digests[0]] * 2))
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


def test_an_index_with_scrambled_offsets_or_bytes_never_raises(manager: SessionManager) -> None:
    """Its body is bisected in place, unchecked: garbage there is a wrong hint at worst."""
    lc, record = saved(manager)
    index = checkpoint_index.index_path(record)
    good = index.read_bytes()
    head_end = good.index(b"\n") + 1
    rng = random.Random(42)
    for _ in range(200):
        body = bytearray(good[head_end:])
        for _ in range(rng.randint(1, 8)):
            body[rng.randrange(len(body))] = rng.randrange(256)
        index.write_bytes(good[:head_end] + bytes(body))
        held = lc.checkpoints_holding(["agent_spec.md", "templates/prompt.txt", "ü/é.txt"])
        assert set(held) == {"agent_spec.md", "templates/prompt.txt", "ü/é.txt"}
        assert all(v in (None, 1) for v in held.values())
    lc.close()
