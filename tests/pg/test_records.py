"""Sessions, snapshots, pointers, checkpoints and blobs (deduplicated across sessions)."""

from __future__ import annotations

import hashlib

import psycopg
import pytest

from session.checkpoints import CheckpointRecord
from session.errors import SessionError, SessionNotFoundError
from session.pg import PgStore
from session.pg.events import EventDraft
from session.redaction import Redactor
from session.snapshot import SessionState
from tests.pg.conftest import connect, new_id

TABLES = ("sessions", "events", "pointers", "blobs", "checkpoints", "checkpoint_files")


def test_sessions_are_created_once_listed_newest_first_and_deleted_with_their_rows(
    store: PgStore,
) -> None:
    first, second = new_id(), new_id()
    row = store.create_session(first, "proj-a", workspace_root="/ws/a", instance_id="vscode-1")
    assert (row.owner, row.project, row.next_seq, row.persistence) == (
        "agent_assist_test",
        "proj-a",
        0,
        "full",
    )
    store.create_session(second, "proj-b", parent_session_id=first, fork_boundary=3)
    with pytest.raises(SessionError, match="already exists"):
        store.create_session(first, "proj-a")
    with pytest.raises(SessionError, match="invalid session id"):
        store.create_session("../etc", "proj-a")
    with store.acquire_writer(first) as writer:
        writer.append([EventDraft("session/start", {"session_id": first})])  # moves updated_at
    assert [r.session_id for r in store.list_sessions()] == [first, second]
    assert [r.session_id for r in store.list_sessions("proj-b")] == [second]
    child = store.session(second)
    assert child is not None and (child.parent_session_id, child.fork_boundary) == (first, 3)

    store.set_pointer("proj-a", "vscode-1", first)
    store.put_checkpoint(CheckpointRecord(number=1, session_id=first, seq=0))
    assert store.delete_session(first) is True
    assert store.session(first) is None and store.read_events(first) == []
    assert store.pointer("proj-a", "vscode-1") is None and store.checkpoints(first) == []
    assert store.delete_session(first) is False


def test_a_snapshot_is_stored_scrubbed_and_fills_the_listing_columns(store: PgStore) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    secret = "sk-" + "b" * 30
    state = SessionState(
        session_id=session_id, title=f"fix {secret}", turns=3, last_seq=11, summary="all good"
    )
    # A file named like an AWS key is a path, kept as the local snapshot keeps it.
    state.file_manifest = {"keys/AKIAIOSFODNN7EXAMPLE.pem": "a" * 64}
    store.put_snapshot(state)
    row = store.session(session_id)
    assert row is not None
    assert (row.turns, row.snapshot_seq, row.title) == (3, 11, "fix [REDACTED]")
    stored = store.snapshot(session_id)
    assert stored is not None and SessionState.model_validate(stored).summary == "all good"
    assert secret not in str(stored)
    assert SessionState.model_validate(stored).file_manifest == state.file_manifest

    store.put_snapshot(state, Redactor(metadata_only=True))
    stored = store.snapshot(session_id)
    assert stored is not None and stored["summary"].startswith("[not persisted: sha256:")
    with pytest.raises(SessionError, match="no session"):
        store.put_snapshot(SessionState(session_id=new_id()))


def test_pointers_move_and_go(store: PgStore) -> None:
    first, second = new_id(), new_id()
    for session_id in (first, second):
        store.create_session(session_id, "proj")
    assert store.pointer("proj", "nvim") is None
    store.set_pointer("proj", "nvim", first)
    store.set_pointer("proj", "nvim", second)
    store.set_pointer("other-proj", "nvim", first)
    assert store.pointer("proj", "nvim") == second
    assert store.pointer("other-proj", "nvim") == first
    with pytest.raises(SessionNotFoundError):
        store.set_pointer("proj", "nvim", new_id())
    with pytest.raises(SessionError, match="invalid instance id"):
        store.set_pointer("proj", "a/b", first)
    store.delete_pointer("proj", "nvim")
    assert store.pointer("proj", "nvim") is None


def test_blobs_are_deduplicated_across_sessions_and_verified(store: PgStore, pg_dsn: str) -> None:
    data = b"# Spec\nthree tools\n"
    digest = hashlib.sha256(data).hexdigest()
    sessions = [new_id(), new_id()]
    for number, session_id in enumerate(sessions, start=1):
        store.create_session(session_id, "proj")
        assert store.put_blob(data) == digest
        store.put_checkpoint(
            CheckpointRecord(
                number=number, session_id=session_id, seq=0, files={"agent_spec.md": digest}
            )
        )
    assert store.blob(digest) == data
    assert store.blob("0" * 64) is None
    with connect(pg_dsn) as conn:
        s = store.schema
        assert conn.execute(f'SELECT count(*) FROM "{s}".blobs').fetchone() == (1,)
        assert conn.execute(f'SELECT count(*) FROM "{s}".checkpoint_files').fetchone() == (2,)
        # the table itself holds digests to their content, and keeps what checkpoints use
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(
                f'INSERT INTO "{s}".blobs (digest, size, data) VALUES (%s, 3, %s)',
                ("f" * 64, b"abc"),
            )
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            conn.execute(f'DELETE FROM "{s}".blobs')
    assert [r.files for r in store.checkpoints(sessions[0])] == [{"agent_spec.md": digest}]


def test_checkpoints_are_listed_in_order_and_must_name_stored_blobs(store: PgStore) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    digest = store.put_blob(b"v1")
    for number in (2, 1):
        store.put_checkpoint(
            CheckpointRecord(
                number=number,
                session_id=session_id,
                seq=number * 4,
                title=f"checkpoint {number}",
                files={"templates/a.txt": digest},
                withheld={".env": "not kept: contains a secret"},
            )
        )
    records = store.checkpoints(session_id)
    assert [(r.number, r.seq, r.title) for r in records] == [
        (1, 4, "checkpoint 1"),
        (2, 8, "checkpoint 2"),
    ]
    assert records[0].withheld == {".env": "not kept: contains a secret"}
    with pytest.raises(SessionError, match="already has checkpoint 1"):
        store.put_checkpoint(CheckpointRecord(number=1, session_id=session_id, seq=0))
    with pytest.raises(SessionError, match="does not hold"):
        store.put_checkpoint(
            CheckpointRecord(number=3, session_id=session_id, seq=0, files={"x": "e" * 64})
        )
    assert [r.number for r in store.checkpoints(session_id)] == [1, 2]


def test_no_table_holds_the_dsn_password(store: PgStore, pg_dsn: str) -> None:
    password = store.info.password
    assert password
    session_id = new_id()
    store.create_session(session_id, "proj", workspace_root="/ws")
    pasted = f"connect with {pg_dsn} please"
    with store.acquire_writer(session_id) as writer:
        writer.append([EventDraft("turn/start", {"input": pasted}, turn=1)])
    store.put_snapshot(SessionState(session_id=session_id, title=pasted, summary=pasted))
    digest = store.put_blob(b"file body")
    store.put_checkpoint(
        CheckpointRecord(number=1, session_id=session_id, seq=0, title=pasted, files={"f": digest})
    )
    store.set_pointer("proj", "inst", session_id)
    with connect(pg_dsn) as conn:
        for table in (*TABLES, "schema_version"):
            dump = conn.execute(
                f"SELECT coalesce(string_agg(t::text, '\\n'), '') FROM \"{store.schema}\".{table} t"
            ).fetchone()
            assert dump is not None and password not in dump[0], table
        assert (
            "please"
            in conn.execute(f'SELECT event::text FROM "{store.schema}".events').fetchone()[0]
        )  # type: ignore[index]


def test_how_the_last_turn_ended_is_read_from_the_events(store: PgStore) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    assert store.last_turn_end(session_id) is None  # no turn at all
    with store.acquire_writer(session_id) as writer:
        writer.append([EventDraft("session/start", {"session_id": session_id})])
        writer.append([EventDraft("turn/start", {"input": "one"}, turn=1)])
        assert store.last_turn_end(session_id) == "interrupted"  # open: its process died
        writer.append([EventDraft("turn/end", {"reason": "completed"}, turn=1)])
        assert store.last_turn_end(session_id) is None
        writer.append([EventDraft("turn/start", {"input": "two"}, turn=2)])
        writer.append([EventDraft("turn/end", {"reason": "aborted"}, turn=2)])
        assert store.last_turn_end(session_id) == "aborted"
