"""The session list as a projection: the same rows as reading every snapshot, read less."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from session.local import listing_files, listing_index
from session.local.listing import session_info
from session.local.listing_db import LISTING_FILE
from session.local.listing_index import ListingIndex
from session.local.locks import take_lock
from session.local.manager import SessionManager
from session.snapshot import SessionState
from session.store.rows import SessionInfo

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
    for session_id in manager.layout.session_ids():
        state, _ = manager.read_snapshot(session_id)
        info = session_info(session_id, state, manager.layout.log_path(session_id))
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
    index = ListingIndex(manager.layout.project_dir)
    reader = CountingReader(manager)
    assert index.sessions(manager.layout.sessions_dir, reader) == every_snapshot(manager)
    assert sorted(reader.read) == sorted(ids)  # the first listing reads them all
    assert (manager.layout.project_dir / LISTING_FILE).is_file()

    reader.read.clear()
    assert index.sessions(manager.layout.sessions_dir, reader) == every_snapshot(manager)
    assert reader.read == []  # nothing changed: nothing read

    time.sleep(0.01)
    lifecycle = make_lifecycle(manager, "inst")
    lifecycle.resume(ids[1])
    run_turn(lifecycle, "one more", "reply")
    lifecycle.close()  # new snapshot: a new title? no, more turns
    manager.delete_session(ids[3])
    added = make_session(manager, "brand new", turns=2)
    listed = index.sessions(manager.layout.sessions_dir, reader)
    assert listed == every_snapshot(manager)
    assert sorted(reader.read) == sorted([ids[1], added])
    assert listed[0].session_id in (added, ids[1]) and ids[3] not in [i.session_id for i in listed]
    assert next(i for i in listed if i.session_id == ids[1]).turns == 2


def test_a_log_that_grew_moves_updated_at_without_a_parse(manager: SessionManager) -> None:
    session_id = make_session(manager, "topic")
    index = ListingIndex(manager.layout.project_dir)
    reader = CountingReader(manager)
    before = index.sessions(manager.layout.sessions_dir, reader)[0].updated_at
    reader.read.clear()
    log = manager.layout.log_path(session_id)
    later = time.time() + 60
    os.utime(log, (later, later))
    with open(log, "ab") as fh:  # a crash left an event past the snapshot
        fh.write(b"")
    os.utime(log, (later, later))
    manager.layout.lock_path(session_id).write_bytes(b"")  # and its lock file, held by no one now
    listed = index.sessions(manager.layout.sessions_dir, reader)
    assert reader.read == []
    assert listed[0].updated_at > before
    assert listed == every_snapshot(manager)


def test_a_session_without_snapshot_is_listed_from_its_log(manager: SessionManager) -> None:
    session_id = make_session(manager, "only a log")
    manager.layout.snapshot_path(session_id).unlink()
    index = ListingIndex(manager.layout.project_dir)
    listed = index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    assert [i.session_id for i in listed] == [session_id]
    assert listed == every_snapshot(manager)
    lifecycle = make_lifecycle(manager, "inst")  # more turns, still no snapshot
    lifecycle.resume(session_id)
    run_turn(lifecycle, "again", "reply")
    lifecycle.session = None  # gone without a save (a crash)
    assert index.sessions(manager.layout.sessions_dir, CountingReader(manager))[0].turns == 2


@pytest.mark.parametrize("damage", ["garbage", "other_version", "symlink", "hard_link"])
def test_a_damaged_or_planted_listing_file_is_never_trusted(
    manager: SessionManager, tmp_path: Path, damage: str
) -> None:
    make_session(manager, "topic")
    path = manager.layout.project_dir / LISTING_FILE
    outside = tmp_path / "outside.sqlite"
    if damage == "garbage":
        path.write_bytes(b"not a database at all" * 100)
    elif damage == "other_version":
        ListingIndex(manager.layout.project_dir).sessions(
            manager.layout.sessions_dir, CountingReader(manager)
        )
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE meta SET value = '999' WHERE key = 'version'")
            conn.execute("UPDATE sessions SET title = 'stale'")
    elif damage == "symlink":
        outside.write_bytes(b"")
        path.symlink_to(outside)
    else:
        outside.write_bytes(b"")
        os.link(outside, path)
    listed = ListingIndex(manager.layout.project_dir).sessions(
        manager.layout.sessions_dir, CountingReader(manager)
    )
    assert listed == every_snapshot(manager)
    assert listed[0].title != "stale"
    if damage in ("symlink", "hard_link"):
        assert outside.read_bytes() == b""  # never written through


def test_a_read_only_store_is_listed_without_a_cache(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_session(manager, "topic")
    os.chmod(manager.layout.project_dir, 0o500)
    if os.access(manager.layout.project_dir, os.W_OK):  # root writes anywhere: say it cannot
        monkeypatch.setattr("session.local.listing_db.os.access", lambda *a, **k: False)
    try:
        listed = ListingIndex(manager.layout.project_dir).sessions(
            manager.layout.sessions_dir, CountingReader(manager)
        )
        assert listed == every_snapshot(manager)
        assert not (manager.layout.project_dir / LISTING_FILE).exists()
    finally:
        os.chmod(manager.layout.project_dir, 0o700)


def test_manager_lists_through_the_projection(manager: SessionManager) -> None:
    ids = {make_session(manager, f"topic {n}") for n in range(3)}
    assert {i.session_id for i in manager.list_sessions()} == ids
    shutil.rmtree(manager.layout.sessions_dir)
    assert manager.list_sessions() == []


# -- while sessions/ is unchanged, only the logs are stat'ed ---------------------------------


@pytest.fixture
def no_scan(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each scan of sessions/ (a listing that reads the directory, not only logs)."""
    scans: list[str] = []
    real_files, real_names = listing_index.scan_files, listing_index.scan_names

    def spy_files(sessions_dir: Path, locked: set[str] | None = None) -> listing_index.Files:
        scans.append(str(sessions_dir))
        return real_files(sessions_dir, locked)

    def spy_names(sessions_dir: Path) -> dict[str, int] | None:
        scans.append(str(sessions_dir))
        return real_names(sessions_dir)

    monkeypatch.setattr(listing_index, "scan_files", spy_files)
    monkeypatch.setattr(listing_index, "scan_names", spy_names)
    return scans


def trust_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if every change to sessions/ were older than the racy margin."""
    monkeypatch.setattr(listing_index, "_DIR_MARGIN_NS", -(10**15))


def freeze_directory_times(monkeypatch: pytest.MonkeyPatch, manager: SessionManager) -> None:
    """As with coarse timestamps: later changes leave sessions/ times as they are now."""
    frozen = listing_files.dir_key(manager.layout.sessions_dir)
    monkeypatch.setattr(listing_index, "dir_key", lambda path: frozen)


def retitle(manager: SessionManager, session_id: str, title: str) -> None:
    """Replace a snapshot as the store does (a new file renamed over it), with a new title."""
    path = manager.layout.snapshot_path(session_id)
    raw = json.loads(path.read_text())
    raw["title"] = title
    replacement = path.with_name(f".{path.name}.new")
    replacement.write_text(json.dumps(raw))
    os.replace(replacement, path)


def test_an_unchanged_directory_is_listed_by_its_logs_alone(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch, no_scan: list[str]
) -> None:
    trust_at_once(monkeypatch)
    ids = [make_session(manager, f"topic {n}") for n in range(3)]
    index = ListingIndex(manager.layout.project_dir)
    reader = CountingReader(manager)
    assert index.sessions(manager.layout.sessions_dir, reader) == every_snapshot(manager)
    assert len(no_scan) == 1
    reader.read.clear()
    for _ in range(2):
        assert index.sessions(manager.layout.sessions_dir, reader) == every_snapshot(manager)
    assert len(no_scan) == 1 and reader.read == []
    manager.delete_session(ids[0])  # an entry removed: the directory says so
    assert index.sessions(manager.layout.sessions_dir, reader) == every_snapshot(manager)
    assert len(no_scan) == 2 and ids[0] not in {i.session_id for i in every_snapshot(manager)}


def test_a_log_appended_to_in_place_is_seen_though_the_directory_did_not_change(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch, no_scan: list[str]
) -> None:
    trust_at_once(monkeypatch)
    template = make_session(manager, "two turns", turns=2)
    lines = manager.layout.log_path(template).read_bytes().splitlines(keepends=True)
    cut = next(n for n, line in enumerate(lines) if b'"turn/end"' in line) + 1
    log_only, empty = "0123456789ab", "ba9876543210"  # a log and no snapshot; an empty log
    manager.layout.log_path(log_only).write_bytes(
        b"".join(lines[:cut]).replace(template.encode(), log_only.encode())
    )
    manager.layout.log_path(empty).write_bytes(b"")  # no event yet: no row
    # Their writers hold their locks: a log is appended to only then.
    locks = [take_lock(manager.layout.lock_path(sid)) for sid in (log_only, empty, template)]
    index = ListingIndex(manager.layout.project_dir)
    first = {
        i.session_id: i
        for i in index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    }
    assert first[log_only].turns == 1 and empty not in first
    before = listing_files.dir_key(manager.layout.sessions_dir)
    with open(manager.layout.log_path(log_only), "ab") as fh:  # the turn a crash left unsaved
        fh.write(b"".join(lines[cut:]).replace(template.encode(), log_only.encode()))
    with open(manager.layout.log_path(empty), "ab") as fh:
        fh.write(b"".join(lines).replace(template.encode(), empty.encode()))
    later = time.time() + 60
    os.utime(manager.layout.log_path(template), (later, later))
    assert listing_files.dir_key(manager.layout.sessions_dir) == before
    listed = index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    assert len(no_scan) == 1  # the directory was not read again
    (manager.layout.project_dir / LISTING_FILE).unlink()  # the same as a listing from scratch
    assert listed == index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    rows = {i.session_id: i for i in listed}
    assert rows[log_only].turns == 2 and rows[empty].turns == 2
    assert rows[template].updated_at.timestamp() == pytest.approx(later, abs=1e-3)
    for lock in locks:
        lock.release()


def test_with_the_directory_unchanged_only_the_logs_being_written_are_stated(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch, no_scan: list[str]
) -> None:
    trust_at_once(monkeypatch)
    idle, open_one = make_session(manager, "idle"), make_session(manager, "open")
    lock = take_lock(manager.layout.lock_path(open_one))
    index = ListingIndex(manager.layout.project_dir)
    index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    stated: list[str] = []
    real_stat = os.stat

    def spy(path: object, *args: object, **kwargs: object) -> os.stat_result:
        stated.append(str(path))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    def no_listing(*args: object, **kwargs: object) -> None:
        raise AssertionError("sessions/ read although it is unchanged")

    monkeypatch.setattr(listing_index.os, "stat", spy)
    monkeypatch.setattr(listing_index.os, "listdir", no_listing)
    later = time.time() + 60
    for n, sid in enumerate((open_one, idle)):  # both logs grow in place
        with open(manager.layout.log_path(sid), "ab") as fh:
            fh.write(b"")
        os.utime(manager.layout.log_path(sid), (later + n, later + n))
    reader = CountingReader(manager)
    listed = {i.session_id: i for i in index.sessions(manager.layout.sessions_dir, reader)}
    logs = [path for path in stated if path.endswith(".events.jsonl")]
    assert len(no_scan) == 1 and logs == [f"{open_one}.events.jsonl"]
    assert index.locked == {open_one}  # from the scan that trusted sessions/
    assert listed[open_one].updated_at.timestamp() == pytest.approx(later, abs=1e-3)
    # A log appended to by hand, no writer holding its lock, is not looked at, not even
    # when the directory changes (here: the other writer letting go, its lock file removed)...
    assert listed[idle].updated_at.timestamp() < later - 30
    lock.release()
    monkeypatch.undo()
    trust_at_once(monkeypatch)
    relisted = {i.session_id: i for i in index.sessions(manager.layout.sessions_dir, reader)}
    assert index.locked == set() and relisted[open_one] == listed[open_one]
    assert relisted[idle].updated_at.timestamp() < later - 30
    # ... until a writer of that session lets go of its lock: it notes it for the listing.
    manager.acquire_lock(idle).release()
    assert index.sessions(manager.layout.sessions_dir, CountingReader(manager)) == every_snapshot(
        manager
    )


def test_a_snapshot_rewritten_in_place_with_its_log_is_read_again(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch, no_scan: list[str]
) -> None:
    trust_at_once(monkeypatch)
    session_id = make_session(manager, "old title")
    lock = take_lock(manager.layout.lock_path(session_id))  # its writer, saving
    index = ListingIndex(manager.layout.project_dir)
    index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    path = manager.layout.snapshot_path(session_id)
    raw = json.loads(path.read_text())
    raw["title"] = "new title"
    with open(path, "r+b") as fh:  # same inode: the directory does not change
        fh.write(json.dumps(raw).encode())
        fh.truncate()
    with open(manager.layout.log_path(session_id), "ab") as fh:  # saved with its log, as a rule
        fh.write(b"")
    os.utime(manager.layout.log_path(session_id), (time.time() + 5, time.time() + 5))
    listed = index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    assert len(no_scan) == 1 and listed[0].title == "new title"
    lock.release()


@pytest.mark.parametrize("clock", ["right", "a day ahead", "a day behind"])
def test_a_snapshot_replaced_right_after_a_listing_is_seen_whatever_the_clock(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch, no_scan: list[str], clock: str
) -> None:
    session_id = make_session(manager, "first title")
    index = ListingIndex(manager.layout.project_dir)
    assert index.sessions(manager.layout.sessions_dir, CountingReader(manager))[0].title
    # The directory changed less than the margin ago: its times prove nothing yet, even
    # if the next replacement (same tick) leaves them as they are, and whatever this
    # process's clock says (only the file system's is used).
    freeze_directory_times(monkeypatch, manager)
    offset = {"right": 0, "a day ahead": 86_400, "a day behind": -86_400}[clock]
    real_time, real_time_ns = time.time, time.time_ns
    monkeypatch.setattr(time, "time", lambda: real_time() + offset)
    monkeypatch.setattr(time, "time_ns", lambda: real_time_ns() + offset * 10**9)
    for n in range(3):
        retitle(manager, session_id, f"title {n}")
        listed = index.sessions(manager.layout.sessions_dir, CountingReader(manager))
        assert listed[0].title == f"title {n}" and listed == every_snapshot(manager)
    assert len(no_scan) == 4  # each listing read the directory again


def test_a_file_system_clock_behind_the_directory_never_makes_it_trusted(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch, no_scan: list[str]
) -> None:
    session_id = make_session(manager, "first title")
    monkeypatch.setattr(listing_index, "file_system_now", lambda path, device: 0)
    index = ListingIndex(manager.layout.project_dir)
    index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    freeze_directory_times(monkeypatch, manager)
    retitle(manager, session_id, "second title")
    assert (
        index.sessions(manager.layout.sessions_dir, CountingReader(manager))[0].title
        == "second title"
    )
    assert len(no_scan) == 2


@pytest.mark.parametrize(
    "record", ["garbage", "another directory trusted", "", "1 2 3 4 trusted extra"]
)
def test_a_damaged_directory_record_is_not_trusted(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch, no_scan: list[str], record: str
) -> None:
    trust_at_once(monkeypatch)
    session_id = make_session(manager, "first title")
    index = ListingIndex(manager.layout.project_dir)
    index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    freeze_directory_times(monkeypatch, manager)
    retitle(manager, session_id, "second title")
    if record == "another directory trusted":
        record = "1 2 3 4 trusted"
    with sqlite3.connect(manager.layout.project_dir / LISTING_FILE) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'dir'", (record,))
    assert (
        index.sessions(manager.layout.sessions_dir, CountingReader(manager))[0].title
        == "second title"
    )
    assert len(no_scan) == 2


def test_a_directory_moved_into_place_is_scanned(
    manager: SessionManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_scan: list[str]
) -> None:
    trust_at_once(monkeypatch)
    make_session(manager, "first")
    index = ListingIndex(manager.layout.project_dir)
    index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    other = tmp_path / "other-sessions"
    shutil.copytree(manager.layout.sessions_dir, other)
    shutil.rmtree(manager.layout.sessions_dir)
    make_session(manager, "second")  # a new directory (another inode) with other files
    shutil.rmtree(other)
    listed = index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    assert len(no_scan) == 2 and listed == every_snapshot(manager) and len(listed) == 1


@pytest.mark.parametrize("cached", [True, False])
def test_the_sessions_without_a_turn_are_folded_with_the_cache_or_without(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch, cached: bool
) -> None:
    ids = [make_session(manager, f"topic {n}", turns=n % 2) for n in range(4)]
    time.sleep(0.01)
    if not cached:  # the listing computed without `listing.sqlite` (a read-only store)
        monkeypatch.setattr("session.local.listing_db.ListingFile._open", lambda self: None)
    index = ListingIndex(manager.layout.project_dir)
    reader = CountingReader(manager)
    newest = ids[::-1]
    rows, total, folded = index.rows(manager.layout.sessions_dir, reader)  # every one by default
    assert ([row[0] for row in rows], total, folded) == (newest, 4, 0)
    rows, total, folded = index.rows(manager.layout.sessions_dir, reader, empty=False)
    assert ([row[0] for row in rows], total, folded) == ([ids[3], ids[1]], 2, 2)
    rows, total, folded = index.rows(
        manager.layout.sessions_dir, reader, 1, 1, empty=False, keep=ids[2]
    )
    assert ([row[0] for row in rows], total, folded) == ([ids[2]], 3, 1)
    assert [row[4] for row in manager.list_rows_page(keep=ids[0])[0]] == [1, 1, 0]
    assert manager.listing.list_rows_in_use(empty=True)[1:] == (4, set(), 0)
    assert (manager.listing.list_rows_in_use()[1], manager.listing.list_rows_in_use()[3]) == (2, 2)
    assert len(manager.list_sessions()) == 4  # every one: `rm`, `prune` find them
