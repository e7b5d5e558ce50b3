"""Blobs in PostgreSQL are collected whatever their age, and never under a checkpoint being written.

A checkpoint's blobs and record are one transaction holding the role's blob lock shared;
the collector (reset, `sessions rm`, `prune`) holds it alone.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

import pytest

from session.checkpoints import CheckpointRecord
from session.errors import SessionError
from session.lifecycle import SessionLifecycle
from session.pg import PgStore
from session.pg.backend import PgSessionStore
from session.pg.events import EventDraft
from tests.pg.conftest import connect, new_id

DEADLINE_S = 60.0  # waits are on events; this only ends a hung test


def wait_until(what: str, check: object) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def waiting_on_advisory_lock(dsn: str) -> bool:
    """True once some backend of this database waits for an advisory lock."""
    with connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'"
            " AND datname = current_database() AND application_name LIKE %s",
            (f"agent-assist %, pid {os.getpid()} %",),  # this process's: tests run side by side
        ).fetchone()
    return row is not None and row[0] > 0


def test_a_blob_no_checkpoint_keeps_is_collected_at_once(store: PgStore) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    kept = store.put_blob(b"kept\n")
    store.put_checkpoint(
        CheckpointRecord(number=1, session_id=session_id, seq=0, files={"a.txt": kept})
    )
    orphan = store.put_blob(b"written a moment ago, named by no checkpoint\n")
    assert store.collect_blobs() == [orphan]  # no grace: its age does not matter
    assert store.blob(orphan) is None
    assert store.blob(kept) == b"kept\n"


def test_the_stores_collector_keeps_what_a_logged_file_change_names(store: PgStore) -> None:
    """`PgStore.collect_blobs` and the checkpoint store's collector are one: events count."""
    session_id = new_id()
    store.create_session(session_id, "proj")
    before, after = store.put_blob(b"name: demo\n"), store.put_blob(b"name: demo\nport: 1\n")
    orphan = store.put_blob(b"named by nothing\n")
    change = {"path": "config.yaml", "before": before, "after": after}
    result = {"tool_call_id": "c1", "name": "write_file", "content": "ok", "files": [change]}
    with store.acquire_writer(session_id) as writer:
        writer.append([EventDraft("tool/result", result, turn=1, step=1)])
    assert store.collect_blobs() == [orphan]
    assert store.blob(before) == b"name: demo\n" and store.blob(after) is not None
    store.delete_session(session_id)
    assert sorted(store.collect_blobs()) == sorted([before, after])  # named by no log now


def test_the_collector_waits_for_a_checkpoint_being_written(store: PgStore, pg_dsn: str) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    data = b"the content a checkpoint is about to name\n"
    digest = hashlib.sha256(data).hexdigest()
    blob_written, go_on = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def write_checkpoint() -> None:
        try:
            with store.checkpoint_writing() as writer:
                writer.put_blob(data)
                blob_written.set()
                go_on.wait(DEADLINE_S)
                writer.put_checkpoint(
                    CheckpointRecord(number=1, session_id=session_id, seq=0, files={"a": digest})
                )
        except BaseException as exc:  # reported below
            errors.append(exc)

    collected: list[str] = []
    writer = threading.Thread(target=write_checkpoint)
    collector = threading.Thread(target=lambda: collected.extend(store.collect_blobs()))
    writer.start()
    assert blob_written.wait(DEADLINE_S)
    collector.start()
    wait_until("the collector to wait for the writer", lambda: waiting_on_advisory_lock(pg_dsn))
    go_on.set()
    writer.join(DEADLINE_S)
    collector.join(DEADLINE_S)
    assert not errors, errors
    assert digest not in collected
    assert store.blob(digest) == data
    assert [r.files for r in store.checkpoints(session_id)] == [{"a": digest}]


def test_a_checkpoint_that_fails_leaves_no_blob_behind(store: PgStore) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    store.put_checkpoint(CheckpointRecord(number=1, session_id=session_id, seq=0))
    data = b"copied for a checkpoint that is then refused\n"
    with pytest.raises(SessionError, match="already has checkpoint 1"):
        with store.checkpoint_writing() as writer:
            digest = writer.put_blob(data)
            writer.put_checkpoint(
                CheckpointRecord(number=1, session_id=session_id, seq=0, files={"b": digest})
            )
    assert store.blob(hashlib.sha256(data).hexdigest()) is None  # rolled back with the record


def test_reset_right_after_a_save_leaves_none_of_the_sessions_copies(
    tmp_path: Path, pg_dsn: str, schema: str
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "agent_spec.md").write_text("# Spec\nonly this session ever saw this line\n")
    digest = hashlib.sha256((root / "agent_spec.md").read_bytes()).hexdigest()
    store = PgSessionStore.open(pg_dsn, root, home=tmp_path / "home", schema=schema)
    try:
        lifecycle = SessionLifecycle(store, "editor")
        lifecycle.resume_or_start(None, True)
        lifecycle.record_decision("Keep the spec short.")
        assert lifecycle.explicit_save().checkpoint == 1
        assert store.read_blob(digest) is not None
        lifecycle.reset()  # within a second of the checkpoint
        assert store.read_blob(digest) is None
        lifecycle.close()
    finally:
        store.close()
