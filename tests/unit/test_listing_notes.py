"""After `sessions/` changed: its names and inodes, the lock files and the writers' notes say
which sessions to look at again; every other file is left unstat'ed."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from session.local import listing_db, listing_files, listing_index
from session.local.listing_db import LISTING_FILE
from session.local.listing_index import ListingIndex
from session.local.locks import take_lock
from session.local.manager import SessionManager

from .conftest import make_lifecycle, run_turn
from .test_listing_index import CountingReader, every_snapshot, make_session


def touch_directory(manager: SessionManager) -> None:
    """Change sessions/ itself, as a save, a new session or a lock file does."""
    marker = manager.layout.sessions_dir / ".marker"
    marker.write_bytes(b"")
    marker.unlink()


def rewrite_in_place(manager: SessionManager, session_id: str, title: str) -> None:
    """A snapshot with a new title under the inode it had, as a second save can leave it
    (the file system gives the first save's freed inode to the second)."""
    path = manager.layout.snapshot_path(session_id)
    raw = json.loads(path.read_text())
    raw["title"] = title
    with open(path, "r+b") as fh:
        fh.write(json.dumps(raw).encode())
        fh.truncate()


@pytest.fixture
def stated(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The session files stat'ed one by one (a full scan's lstats are `scan_files`')."""
    names: list[str] = []
    real = listing_files.file_key

    def spy(dir_fd: int, name: str) -> tuple[int, int, int] | None:
        names.append(name)
        return real(dir_fd, name)

    monkeypatch.setattr(listing_files, "file_key", spy)
    return names


def test_after_a_change_only_the_changed_sessions_are_stated(
    manager: SessionManager, stated: list[str]
) -> None:
    ids = [make_session(manager, f"topic {n}") for n in range(6)]
    index = ListingIndex(manager.layout.project_dir)
    index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    stated.clear()
    touch_directory(manager)
    reader = CountingReader(manager)
    assert index.sessions(manager.layout.sessions_dir, reader) == every_snapshot(manager)
    assert stated == [] and reader.read == []  # nothing but the directory was read

    lifecycle = make_lifecycle(manager, "inst")  # a new turn: a new snapshot (another inode)
    lifecycle.resume(ids[2])
    run_turn(lifecycle, "more", "reply")
    lifecycle.close()
    manager.delete_session(ids[4])
    added = make_session(manager, "added")
    stated.clear()
    listed = index.sessions(manager.layout.sessions_dir, reader)
    assert listed == every_snapshot(manager)
    assert {name.split(".")[0] for name in stated} == {ids[2], ids[4], added}
    assert sorted(reader.read) == sorted([ids[2], added])


def test_a_snapshot_whose_inode_came_back_is_read_again_from_its_writers_note(
    manager: SessionManager,
) -> None:
    session_id = make_session(manager, "first title")
    index = ListingIndex(manager.layout.project_dir)
    index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    lock = manager.acquire_lock(session_id)  # the writer of a session, as the store takes it
    rewrite_in_place(manager, session_id, "second title")
    touch_directory(manager)  # its saves renamed files into sessions/
    lock.release()  # notes the session, then removes the lock file
    assert index.sessions(manager.layout.sessions_dir, CountingReader(manager))[0].title == (
        "second title"
    )
    with sqlite3.connect(manager.layout.project_dir / LISTING_FILE) as conn:
        assert conn.execute("SELECT count(*) FROM touched").fetchone() == (0,)  # taken in

    # The control: a writer that notes nothing (an older version) is not seen.
    raw = take_lock(manager.layout.lock_path(session_id))
    rewrite_in_place(manager, session_id, "third title")
    touch_directory(manager)
    raw.release()
    assert index.sessions(manager.layout.sessions_dir, CountingReader(manager))[0].title == (
        "second title"
    )


def test_a_writer_that_died_is_noted_when_a_probe_removes_its_lock_file(
    manager: SessionManager,
) -> None:
    session_id = make_session(manager, "topic", turns=1)
    index = ListingIndex(manager.layout.project_dir)
    before = index.sessions(manager.layout.sessions_dir, CountingReader(manager))[0].updated_at
    lifecycle = make_lifecycle(manager, "inst")
    lifecycle.resume(session_id)
    time.sleep(0.01)
    run_turn(lifecycle, "unsaved", "reply")
    assert lifecycle.session is not None
    lock = lifecycle.session.lock
    lifecycle.session = None  # killed: no save, its lock file left behind
    os.close(lock._lock._fd)  # type: ignore[union-attr]  # the kernel lets go of the flock
    # Another window asks which sessions are in use: the probe removes the dead lock file.
    assert manager.held_locks([session_id]) == set()
    assert not manager.layout.lock_path(session_id).exists()
    listed = index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    assert listed[0].updated_at > before and listed == every_snapshot(manager)


def test_a_note_that_cannot_be_written_makes_the_next_listing_start_again(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = make_session(manager, "first title")
    index = ListingIndex(manager.layout.project_dir)
    index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    monkeypatch.setattr(listing_db, "_BUSY_S", 0.05)
    lock = manager.acquire_lock(session_id)
    rewrite_in_place(manager, session_id, "second title")
    touch_directory(manager)
    blocker = sqlite3.connect(manager.layout.project_dir / LISTING_FILE, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another listing's transaction, for too long
    started = time.monotonic()
    lock.release()
    assert time.monotonic() - started < 1.5  # the writer waited, briefly, then went on
    assert not manager.layout.lock_path(session_id).exists()
    blocker.close()
    assert not (manager.layout.project_dir / LISTING_FILE).exists()  # what it could not say, undone
    reader = CountingReader(manager)
    assert index.sessions(manager.layout.sessions_dir, reader)[0].title == "second title"
    assert reader.read == [session_id]  # from scratch


def test_a_listing_file_of_another_shape_is_rebuilt_without_a_traceback(
    manager: SessionManager,
) -> None:
    make_session(manager, "topic")
    index = ListingIndex(manager.layout.project_dir)
    index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    with sqlite3.connect(manager.layout.project_dir / LISTING_FILE) as conn:
        conn.execute("DROP TABLE sessions")
        conn.execute("CREATE TABLE sessions (session_id TEXT)")  # same version, other columns
    touch_directory(manager)
    assert index.sessions(manager.layout.sessions_dir, CountingReader(manager)) == every_snapshot(
        manager
    )
    assert index.sessions(manager.layout.sessions_dir, CountingReader(manager)) == every_snapshot(
        manager
    )
    with sqlite3.connect(manager.layout.project_dir / LISTING_FILE) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (1,)


@pytest.mark.parametrize("seed", range(6))
def test_any_mix_of_writers_lists_as_every_snapshot_read_again(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Saves, new sessions, deletions, crashes and probes, listed between them at random:
    each listing equals reading every snapshot (both the changed- and unchanged-directory
    ways: with seeds >= 3 the directory is trusted at once)."""
    rng = random.Random(seed)
    if seed >= 3:
        monkeypatch.setattr(listing_index, "_DIR_MARGIN_NS", -(10**15))
    index = ListingIndex(manager.layout.project_dir)
    ids = [make_session(manager, "first")]
    for step in range(40):
        action = rng.choice(["turn", "turn", "new", "delete", "crash", "probe", "list"])
        if action == "turn" or (action == "delete" and len(ids) == 1):
            lifecycle = make_lifecycle(manager, "inst")
            lifecycle.resume(rng.choice(ids))
            run_turn(lifecycle, f"step {step}", "reply")
            lifecycle.close()
        elif action == "new":
            added = make_session(manager, f"new at {step}", turns=rng.randint(0, 2))
            if manager.exists(added):  # a session left with no turn is not kept
                ids.append(added)
        elif action == "delete":
            manager.delete_session(ids.pop(rng.randrange(len(ids))))
        elif action == "crash":  # a turn past the snapshot, its lock file left behind
            lifecycle = make_lifecycle(manager, "inst")
            lifecycle.resume(rng.choice(ids))
            run_turn(lifecycle, f"crash {step}", "reply")
            assert lifecycle.session is not None
            os.close(lifecycle.session.lock._lock._fd)  # type: ignore[union-attr]
            lifecycle.session = None
        elif action == "probe":
            manager.held_locks(ids)
        if rng.random() < 0.5:
            listed = index.sessions(manager.layout.sessions_dir, CountingReader(manager))
            assert listed == every_snapshot(manager), (seed, step, action)
    assert index.sessions(manager.layout.sessions_dir, CountingReader(manager)) == every_snapshot(
        manager
    )


WRITER = """
import random, sys
from pathlib import Path
from session.lifecycle import LifecycleConfig, SessionLifecycle
from session.local.manager import SessionManager

manager = SessionManager(Path(sys.argv[1]), home=Path(sys.argv[2]))
rng = random.Random(int(sys.argv[3]))
ids = []
for n in range(int(sys.argv[4])):
    lifecycle = SessionLifecycle(manager, "writer", LifecycleConfig())
    if len(ids) >= 2 or (ids and rng.random() < 0.5):  # a few sessions, saved again and again
        lifecycle.resume(rng.choice(ids))
    else:
        lifecycle.start_fresh()
    turn = lifecycle.begin_turn(f"question {n}")
    turn.start_step([{"kind": "request", "parts": []}])
    turn.chunk(f"answer {n}")
    turn.end_step({"input_tokens": 1, "output_tokens": 1})
    turn.end("completed")
    if lifecycle.session_id not in ids:
        ids.append(lifecycle.session_id)
    lifecycle.close()
"""


def test_a_writer_in_another_process_is_listed_as_it_wrote(
    manager: SessionManager, workspace: Path, home: Path, tmp_path: Path
) -> None:
    """Listings while another process writes: never an error, and the last one, once it
    stopped, is the same as reading every snapshot. Between two listings a session is saved
    again and again: on ext4 its snapshot's inode comes back every second save."""
    make_session(manager, "first")
    index = ListingIndex(manager.layout.project_dir)
    index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    writer = subprocess.Popen(
        [sys.executable, str(script), str(workspace), str(home), "7", "40"],
        cwd=Path(__file__).resolve().parents[2],
        stderr=subprocess.PIPE,
    )
    listings = 0
    while writer.poll() is None:
        index.sessions(manager.layout.sessions_dir, CountingReader(manager))
        listings += 1
        time.sleep(0.05)
    assert writer.returncode == 0, writer.stderr.read().decode() if writer.stderr else ""
    assert listings > 1
    assert index.sessions(manager.layout.sessions_dir, CountingReader(manager)) == every_snapshot(
        manager
    )
    assert len(every_snapshot(manager)) == 3


@pytest.mark.parametrize("later", ["an hour later", "a clock set back"])
def test_a_file_changed_by_hand_shows_once_every_file_is_looked_at_again(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch, stated: list[str], later: str
) -> None:
    session_id = make_session(manager, "first title")
    index = ListingIndex(manager.layout.project_dir)
    index.sessions(manager.layout.sessions_dir, CountingReader(manager))
    rewrite_in_place(manager, session_id, "edited by hand")  # no lock, no note, same inode
    touch_directory(manager)
    assert (
        index.sessions(manager.layout.sessions_dir, CountingReader(manager))[0].title
        == "first title 0"
    )
    stated.clear()
    if later == "an hour later":
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() + listing_index.VERIFY_S + 1)
    else:
        with sqlite3.connect(manager.layout.project_dir / LISTING_FILE) as conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'verified'", (time.time() + 1e6,))
    assert index.sessions(manager.layout.sessions_dir, CountingReader(manager))[0].title == (
        "edited by hand"
    )
    stated.clear()
    assert index.sessions(manager.layout.sessions_dir, CountingReader(manager)) == every_snapshot(
        manager
    )
    assert stated == []  # checked again from then on, not every time
