"""The store contract: the same behaviour from the local files and from PostgreSQL."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from session.checkpoints import CheckpointRecord
from session.errors import SessionError, SessionLockedError, SessionNotFoundError
from session.events import Event
from session.store.backend import SessionStore
from session.store.editor import EditorProcess
from session.store.session import Session
from tests.store.conftest import Backend

REPO = Path(__file__).resolve().parents[2]


def one_turn(writer: Session, text: str, *, chunks: int = 3) -> list[Event]:
    """Append a completed turn the way the runner records one."""
    turn = writer.state.turns + 1
    out = [writer.append("turn/start", {"input": text}, turn=turn)]
    out.append(writer.append("step/start", {"messages": []}, turn=turn, step=1))
    for n in range(chunks):
        out.append(writer.append("assistant/chunk", {"delta": f"{text}-{n} "}, turn=turn, step=1))
    out.append(writer.append("step/end", {"usage": {}}, turn=turn, step=1))
    out.append(writer.append("turn/end", {"reason": "completed"}, turn=turn))
    return out


def as_stored(event: Event) -> dict[str, Any]:
    """An event as a value, U+0000 as PostgreSQL keeps it (U+FFFD): what both stores return."""
    value: dict[str, Any] = _without_nul(event.model_dump(mode="json"))
    return value


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


def events_of(store: SessionStore, session_id: str, from_seq: int = 0) -> list[Event]:
    """The session's events from `from_seq` on."""
    return [e for e in store.read_events(session_id).events if e.seq >= from_seq]


def open_within(store: SessionStore, session_id: str, seconds: float) -> Session:
    """Open for writing, retrying while a killed holder's lock is still going away."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return store.open_session(session_id)
        except SessionLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_a_new_session_starts_with_session_start_and_dense_ordered_seqs(backend: Backend) -> None:
    store = backend.store
    writer = store.create_session(instance_id="win-1")
    try:
        assert writer.next_seq == 1
        written = one_turn(writer, "hello", chunks=10) + one_turn(writer, "again")
    finally:
        writer.close()
    events = events_of(store, writer.session_id)
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[0].type == "session/start"
    assert events[0].data.session_id == writer.session_id
    assert [as_stored(e) for e in events[1:]] == [as_stored(e) for e in written]
    assert [e.seq for e in events_of(store, writer.session_id, 12)] == list(range(12, len(events)))
    assert events_of(store, writer.session_id, len(events)) == []


def test_a_reopened_session_continues_its_numbering(backend: Backend) -> None:
    writer = backend.store.create_session()
    one_turn(writer, "first")
    writer.close()
    writer.close()  # twice is harmless
    again = backend.reopen().open_session(writer.session_id)
    try:
        assert again.next_seq == writer.next_seq
        assert again.state.turns == 1
        second = one_turn(again, "second")
        assert second[0].seq == writer.next_seq and second[0].turn == 2
    finally:
        again.close()
    seqs = [e.seq for e in events_of(backend.store, writer.session_id)]
    assert seqs == list(range(len(seqs)))


def test_events_survive_a_reopen_as_the_same_values(backend: Backend) -> None:
    writer = backend.store.create_session()
    turn = 1
    awkward = {
        "input": 'nul \x00 here, emoji 🦀, エージェント, quotes " and \\ and \u2028',
    }
    written = [
        writer.append("turn/start", awkward, turn=turn),
        writer.append("step/start", {"messages": [{"kind": "request", "parts": []}]}, turn=turn),
        writer.append("assistant/chunk", {"delta": "\x00"}, turn=turn, step=1),
        writer.append("session/decision", {"text": "keep it"}),
        writer.append("turn/end", {"reason": "completed"}, turn=turn),
    ]
    writer.close()
    read = events_of(backend.reopen(), writer.session_id)[1:]
    assert [as_stored(e) for e in read] == [as_stored(e) for e in written]
    nul = read[0].data.input  # type: ignore[union-attr]
    # the documented difference: PostgreSQL has no U+0000
    assert nul.count("\x00" if backend.kind == "local" else "\ufffd") == 1


def test_events_stream_in_order_as_read_and_a_missing_session_is_said(
    backend: Backend,
) -> None:
    """`iter_events` (a replay of any length, bounded in memory) gives what `read_events` does."""
    writer = backend.store.create_session()
    for n in range(40):  # 7 events each: several of PostgreSQL's batches at batch=50
        one_turn(writer, f"turn {n}")
    writer.close()
    store = backend.reopen()
    whole = [as_stored(e) for e in store.read_events(writer.session_id).events]
    streamed = store.iter_events(writer.session_id)
    assert [as_stored(e) for e in streamed] == whole and len(whole) == 1 + 40 * 7
    if backend.kind == "postgresql":  # fetched a batch at a time, keyset on seq
        batched = store.iter_events(writer.session_id, 50)  # type: ignore[call-arg]
        assert [as_stored(e) for e in batched] == whole
    ends = store.iter_events(writer.session_id, types=frozenset({"turn/end", "turn/start"}))
    kept = [e for e in whole if e["type"] in ("turn/end", "turn/start")]
    assert [as_stored(e) for e in ends] == kept and len(kept) == 80
    missing = backend.store.new_session_id()
    with pytest.raises(SessionNotFoundError):
        list(store.iter_events(missing))


def test_a_second_writer_is_refused(backend: Backend) -> None:
    writer = backend.store.create_session()
    elsewhere = backend.reopen()
    with pytest.raises(SessionLockedError, match="in use"):
        elsewhere.open_session(writer.session_id)
    writer.close()
    again = elsewhere.open_session(writer.session_id)  # released by close
    again.close()


def test_the_lock_goes_with_a_killed_holder_and_its_open_turn_is_closed(
    backend: Backend,
) -> None:
    writer = backend.store.create_session()
    one_turn(writer, "before")
    writer.close()
    holder = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "tests.store.holder", *backend.holder_args, writer.session_id],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SessionLockedError):
            backend.store.open_session(writer.session_id)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
    again = open_within(backend.store, writer.session_id, 10)
    try:
        assert again.state.turns == 2
    finally:
        again.close()
    last = events_of(backend.store, writer.session_id)[-2:]
    assert [e.type for e in last] == ["turn/start", "turn/end"]
    assert last[1].turn == 2 and last[1].data.synthesized  # type: ignore[union-attr]


def test_snapshot_round_trip(backend: Backend) -> None:
    store = backend.store
    writer = store.create_session(instance_id="win-1")
    assert store.read_snapshot(writer.session_id) == (None, None)
    one_turn(writer, "name the session")
    writer.append("session/phase", {"phase": "design"})
    writer.append("session/decision", {"text": "use the contract"})
    store.write_snapshot(writer)
    writer.close()
    state, read_only = backend.reopen().read_snapshot(writer.session_id)
    assert read_only is None
    assert state is not None
    assert (state.session_id, state.turns, state.title, state.phase) == (
        writer.session_id,
        1,
        "name the session",
        "design",
    )
    assert state.decisions == ["use the contract"]
    assert state.last_seq == writer.next_seq - 1
    assert state.instance_id == "win-1"


def test_pointers_are_per_instance(backend: Backend) -> None:
    store = backend.store
    first, second = store.create_session(), store.create_session()
    first.close()
    second.close()
    assert store.read_pointer("win-1") is None
    store.write_pointer("win-1", first.session_id)
    store.write_pointer("win-2", second.session_id)
    assert store.read_pointer("win-1") == first.session_id
    store.write_pointer("win-1", second.session_id)  # moves
    assert backend.reopen().read_pointer("win-1") == second.session_id
    store.delete_pointer("win-1")
    assert store.read_pointer("win-1") is None
    assert store.read_pointer("win-2") == second.session_id
    # An instance named after its editor process: its pointer reads as any other.
    store.write_pointer("Ed-41", first.session_id, EditorProcess("Ed", 41))
    assert backend.reopen().read_pointer("Ed-41") == first.session_id
    with pytest.raises(SessionNotFoundError):
        store.write_pointer("win-3", "0123456789ab")
    with pytest.raises(SessionError):
        store.write_pointer("bad id!", first.session_id)


def test_listing_is_most_recently_active_first(backend: Backend) -> None:
    store = backend.store
    ids = []
    for text in ("older", "newer"):
        writer = store.create_session()
        one_turn(writer, text)
        store.write_snapshot(writer)
        writer.close()
        ids.append(writer.session_id)
        time.sleep(0.02)
    assert [row.session_id for row in store.list_sessions()] == ids[::-1]
    writer = store.open_session(ids[0])
    one_turn(writer, "older again")
    store.write_snapshot(writer)
    writer.close()
    rows = backend.reopen().list_sessions()
    assert [row.session_id for row in rows] == ids
    assert (rows[0].title, rows[0].turns) == ("older", 2)
    assert rows[0].updated_at >= rows[1].updated_at >= rows[1].created_at


def test_listing_pages_are_slices_of_the_whole_list(backend: Backend) -> None:
    """Paged on both stores (in SQL on PostgreSQL): the same rows as the whole list's."""
    store = backend.store
    for n in range(5):
        writer = store.create_session()
        one_turn(writer, f"session {n}")
        store.write_snapshot(writer)
        writer.close()
        time.sleep(0.01)
    whole = [row.session_id for row in store.list_sessions()]
    assert len(whole) == 5
    for offset, limit in ((0, 2), (2, 2), (4, 2), (1, None), (0, 0), (7, 3)):
        page, total = store.list_sessions_page(offset, limit)
        end = None if limit is None else offset + limit
        assert [row.session_id for row in page] == whole[offset:end] and total == 5


def test_checkpoints_and_blobs_are_content_addressed_and_deduplicated(backend: Backend) -> None:
    store = backend.store
    writer = store.create_session()
    one_turn(writer, "spec")
    writer.close()
    data = b"# agent spec\n\x00binary too\n"
    digest = store.put_blob(data)
    assert digest == hashlib.sha256(data).hexdigest()
    assert store.put_blob(data) == digest  # the same bytes again add nothing
    other = store.put_blob(b"templates")
    assert backend.blob_count() == 2
    assert store.read_blob(digest) == data
    assert store.read_blob(hashlib.sha256(b"never stored").hexdigest()) is None
    sid = writer.session_id
    records = [
        CheckpointRecord(number=1, session_id=sid, seq=3, turn=1, title="one", files={"a": digest}),
        CheckpointRecord(
            number=2, session_id=sid, seq=6, files={"a": digest, "t/x": other}, auto=True
        ),
    ]
    for record in reversed(records):
        store.put_checkpoint(record)
    assert backend.reopen().checkpoints(sid) == records
    with pytest.raises(SessionError, match="already has checkpoint 1"):
        store.put_checkpoint(records[0])
    missing = hashlib.sha256(b"not a blob").hexdigest()
    with pytest.raises(SessionError, match="does not hold"):
        store.put_checkpoint(
            CheckpointRecord(number=3, session_id=sid, seq=6, files={"b": missing})
        )
    assert [r.number for r in store.checkpoints(sid)] == [1, 2]


def test_delete_removes_the_session_and_what_goes_with_it(backend: Backend) -> None:
    store = backend.store
    keep, gone = store.create_session(), store.create_session()
    for writer in (keep, gone):
        one_turn(writer, "text")
        store.write_snapshot(writer)
        writer.close()
    digest = store.put_blob(b"kept by a checkpoint")
    store.put_checkpoint(CheckpointRecord(number=1, session_id=gone.session_id, seq=1, files={}))
    store.write_pointer("win-1", gone.session_id)
    assert store.delete_session(gone.session_id)
    assert store.exists(gone.session_id) is False
    assert store.exists(keep.session_id) is True
    assert store.read_pointer("win-1") is None
    assert store.checkpoints(gone.session_id) == []
    assert [row.session_id for row in store.list_sessions()] == [keep.session_id]
    with pytest.raises(SessionNotFoundError):
        events_of(store, gone.session_id)
    with pytest.raises(SessionNotFoundError):
        store.open_session(gone.session_id)
    assert not store.delete_session(gone.session_id)
    assert store.read_blob(digest) is not None  # blobs are cleaned up on their own
    assert len(events_of(store, keep.session_id)) == 8


def test_an_existing_id_is_not_created_twice(backend: Backend) -> None:
    writer = backend.store.create_session()
    writer.close()
    with pytest.raises(SessionError, match="already exists"):
        backend.store.create_session(session_id=writer.session_id)
    assert len(events_of(backend.store, writer.session_id)) == 1


def test_secrets_are_scrubbed_on_both_stores(backend: Backend) -> None:
    writer = backend.store.create_session()
    key = "sk-" + "a1b2c3d4" * 5
    event = writer.append("turn/start", {"input": f"my key is {key}"}, turn=1)
    writer.append("turn/end", {"reason": "completed"}, turn=1)
    writer.close()
    assert key in event.data.input  # type: ignore[union-attr]  # in memory, as typed
    stored = events_of(backend.store, writer.session_id)[1].data.input  # type: ignore[union-attr]
    assert key not in stored and "[REDACTED]" in stored


def test_listing_folds_the_sessions_without_a_turn(backend: Backend) -> None:
    """Saved at an exit without a turn: listed only when asked, else counted (issue #39)."""
    store = backend.store
    ids: dict[str, str] = {}
    for name in ("old turn", "empty 1", "seed", "empty 2", "new turn"):
        writer = store.create_session()
        if "turn" in name:
            one_turn(writer, name)
        if name == "seed":  # a seed's session file: no `turns`, a summary
            writer.state.summary = "What the seed's tool summarised"
        store.write_snapshot(writer)
        writer.close()
        ids[name] = writer.session_id
        time.sleep(0.02)
    newest = [ids[n] for n in ("new turn", "empty 2", "seed", "empty 1", "old turn")]
    listed = [ids[n] for n in ("new turn", "seed", "old turn")]
    assert [row.session_id for row in store.list_sessions()] == newest  # every one
    for reader in (store, backend.reopen()):
        page, total = reader.list_sessions_page()
        assert ([row.session_id for row in page], total) == (listed, 3)
        rows, total, folded = reader.list_rows_page()
        assert ([row[0] for row in rows], total, folded) == (listed, 3, 2)
        rows, total, folded = reader.list_rows_page(empty=True)
        assert ([row[0] for row in rows], total, folded) == (newest, 5, 0)
    # The current session is listed even without a turn, in its place; the other is counted.
    rows, total, folded = store.list_rows_page(keep=ids["empty 2"])
    assert ([row[0] for row in rows], total, folded) == (newest[:3] + newest[4:], 4, 1)
    for offset, limit in ((0, 1), (1, 1), (1, None), (2, 5), (3, 1)):
        rows, total, folded = store.list_rows_page(offset, limit)
        end = None if limit is None else offset + limit
        assert ([row[0] for row in rows], total, folded) == (listed[offset:end], 3, 2)
    page, total = store.list_sessions_page(1, 10, empty=True)
    assert ([row.session_id for row in page], total) == (newest[1:], 5)
    writer = store.open_session(ids["empty 1"])  # a turn at last: listed
    one_turn(writer, "at last")
    store.write_snapshot(writer)
    writer.close()
    rows, total, folded = backend.reopen().list_rows_page()
    assert (rows[0][0], rows[0][1], total, folded) == (ids["empty 1"], "at last", 4, 1)
