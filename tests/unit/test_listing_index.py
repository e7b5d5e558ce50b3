"""The session list as a projection: the same rows as reading every snapshot, read less."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from session.snapshot import SessionState
from session.store.listing import SessionInfo, session_info
from session.store.listing_index import LISTING_FILE, ListingIndex
from session.store.manager import SessionManager

from .conftest import make_lifecycle, run_turn


def make_session(manager: SessionManager, text: str, turns: int = 1) -> str:
    lifecycle = make_lifecycle(manager, "inst")
    lifecycle.start_fresh()
    for n in range(turns):
        run_turn(lifecycle, f"{text} {n}", f"answer {n}")
    session_id = lifecycle.session_id
    lifecycle.close()
    return session_id


def every_snapshot(manager: SessionManager) -> list[SessionInfo]:
    """The listing as it was computed before: every snapshot read, every time."""
    infos = []
    for session_id in manager.session_ids():
        state, _ = manager.read_snapshot(session_id)
        info = session_info(session_id, state, manager.log_path(session_id))
        if info is not None:
            infos.append(info)
    return sorted(infos, key=lambda i: i.updated_at, reverse=True)


class CountingReader:
    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager
        self.read: list[str] = []

    def __call__(self, session_id: str) -> SessionState | None:
        self.read.append(session_id)
        return self.manager.read_snapshot(session_id)[0]


def test_the_listing_matches_every_snapshot_and_reads_only_what_changed(
    manager: SessionManager,
) -> None:
    ids = [make_session(manager, f"topic {n}") for n in range(5)]
    index = ListingIndex(manager.project_dir)
    reader = CountingReader(manager)
    assert index.sessions(manager.sessions_dir, reader) == every_snapshot(manager)
    assert sorted(reader.read) == sorted(ids)  # the first listing reads them all
    assert (manager.project_dir / LISTING_FILE).is_file()

    reader.read.clear()
    assert index.sessions(manager.sessions_dir, reader) == every_snapshot(manager)
    assert reader.read == []  # nothing changed: nothing read

    time.sleep(0.01)
    lifecycle = make_lifecycle(manager, "inst")
    lifecycle.resume(ids[1])
    run_turn(lifecycle, "one more", "reply")
    lifecycle.close()  # new snapshot: a new title? no, more turns
    manager.delete_session(ids[3])
    added = make_session(manager, "brand new", turns=2)
    listed = index.sessions(manager.sessions_dir, reader)
    assert listed == every_snapshot(manager)
    assert sorted(reader.read) == sorted([ids[1], added])
    assert listed[0].session_id in (added, ids[1]) and ids[3] not in [i.session_id for i in listed]
    assert next(i for i in listed if i.session_id == ids[1]).turns == 2


def test_a_log_that_grew_moves_updated_at_without_a_parse(manager: SessionManager) -> None:
    session_id = make_session(manager, "topic")
    index = ListingIndex(manager.project_dir)
    reader = CountingReader(manager)
    before = index.sessions(manager.sessions_dir, reader)[0].updated_at
    reader.read.clear()
    log = manager.log_path(session_id)
    later = time.time() + 60
    os.utime(log, (later, later))
    with open(log, "ab") as fh:  # a crash left an event past the snapshot
        fh.write(b"")
    os.utime(log, (later, later))
    listed = index.sessions(manager.sessions_dir, reader)
    assert reader.read == []
    assert listed[0].updated_at > before
    assert listed == every_snapshot(manager)


def test_a_session_without_snapshot_is_listed_from_its_log(manager: SessionManager) -> None:
    session_id = make_session(manager, "only a log")
    manager.snapshot_path(session_id).unlink()
    index = ListingIndex(manager.project_dir)
    listed = index.sessions(manager.sessions_dir, CountingReader(manager))
    assert [i.session_id for i in listed] == [session_id]
    assert listed == every_snapshot(manager)
    lifecycle = make_lifecycle(manager, "inst")  # more turns, still no snapshot
    lifecycle.resume(session_id)
    run_turn(lifecycle, "again", "reply")
    lifecycle.session = None  # gone without a save (a crash)
    assert index.sessions(manager.sessions_dir, CountingReader(manager))[0].turns == 2


@pytest.mark.parametrize("damage", ["garbage", "other_version", "symlink", "hard_link"])
def test_a_damaged_or_planted_listing_file_is_never_trusted(
    manager: SessionManager, tmp_path: Path, damage: str
) -> None:
    make_session(manager, "topic")
    path = manager.project_dir / LISTING_FILE
    outside = tmp_path / "outside.sqlite"
    if damage == "garbage":
        path.write_bytes(b"not a database at all" * 100)
    elif damage == "other_version":
        ListingIndex(manager.project_dir).sessions(manager.sessions_dir, CountingReader(manager))
        import sqlite3

        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE meta SET value = '999' WHERE key = 'version'")
            conn.execute("UPDATE sessions SET title = 'stale'")
    elif damage == "symlink":
        outside.write_bytes(b"")
        path.symlink_to(outside)
    else:
        outside.write_bytes(b"")
        os.link(outside, path)
    listed = ListingIndex(manager.project_dir).sessions(
        manager.sessions_dir, CountingReader(manager)
    )
    assert listed == every_snapshot(manager)
    assert listed[0].title != "stale"
    if damage in ("symlink", "hard_link"):
        assert outside.read_bytes() == b""  # never written through


def test_a_read_only_store_is_listed_without_a_cache(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_session(manager, "topic")
    os.chmod(manager.project_dir, 0o500)
    if os.access(manager.project_dir, os.W_OK):  # root writes anywhere: say it cannot
        monkeypatch.setattr("session.store.listing_index.os.access", lambda *a, **k: False)
    try:
        listed = ListingIndex(manager.project_dir).sessions(
            manager.sessions_dir, CountingReader(manager)
        )
        assert listed == every_snapshot(manager)
        assert not (manager.project_dir / LISTING_FILE).exists()
    finally:
        os.chmod(manager.project_dir, 0o700)


def test_manager_lists_through_the_projection(manager: SessionManager) -> None:
    ids = {make_session(manager, f"topic {n}") for n in range(3)}
    assert {i.session_id for i in manager.list_sessions()} == ids
    shutil.rmtree(manager.sessions_dir)
    assert manager.list_sessions() == []
