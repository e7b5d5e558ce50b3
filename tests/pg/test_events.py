"""Appending and reading events: dense seqs, order kept, concurrent appenders, scrubbing."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from session.errors import SessionError, SessionNotFoundError
from session.pg import PgStore
from session.pg.connection import configure
from session.pg.events import EventDraft, append_events
from session.redaction import REDACTED, Redactor
from tests.pg.conftest import connect, new_id

REPO = Path(__file__).resolve().parents[2]


def start(session_id: str) -> EventDraft:
    return EventDraft("session/start", {"session_id": session_id})


def turn(n: int, text: str) -> list[EventDraft]:
    return [
        EventDraft("turn/start", {"input": text}, turn=n),
        EventDraft("assistant/chunk", {"delta": f"re: {text}"}, turn=n, step=1),
        EventDraft("turn/end", {"reason": "completed"}, turn=n),
    ]


def test_append_gives_dense_seqs_in_order_and_reads_from_a_seq(store: PgStore) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj", workspace_root="/ws")
    with store.acquire_writer(session_id) as writer:
        first = writer.append([start(session_id)])
        later = writer.append(turn(1, "hello")) + writer.append(turn(2, "again"))
    assert [event.seq for event in first + later] == list(range(7))
    assert [event.type for event in later][:3] == ["turn/start", "assistant/chunk", "turn/end"]

    events = store.read_events(session_id)
    assert [event["seq"] for event in events] == list(range(7))
    assert events[1] == {
        "seq": 1,
        "ts": events[1]["ts"],
        "type": "turn/start",
        "turn": 1,
        "step": None,
        "data": {"input": "hello"},
    }
    assert events[1]["ts"].endswith("Z")  # the log's own form
    assert [event["data"].get("input") for event in store.read_events(session_id, 4)] == [
        "again",
        None,
        None,
    ]
    assert [event["seq"] for event in store.read_events(session_id, 2, limit=2)] == [2, 3]
    row = store.session(session_id)
    assert row is not None and row.next_seq == 7


def test_an_invalid_draft_appends_nothing(store: PgStore) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    with store.acquire_writer(session_id) as writer:
        writer.append([start(session_id)])
        with pytest.raises(ValidationError):
            writer.append([*turn(1, "ok"), EventDraft("turn/end", {"reason": "bogus"})])
        with pytest.raises(ValidationError):
            writer.append([EventDraft("no/such-type", {})])
        assert [event.seq for event in writer.append(turn(1, "ok"))] == [1, 2, 3]
    assert [event["seq"] for event in store.read_events(session_id)] == [0, 1, 2, 3]


def test_appending_to_a_session_that_does_not_exist_fails(store: PgStore) -> None:
    with (
        store.acquire_writer("0123456789ab") as writer,
        pytest.raises(SessionNotFoundError, match="0123456789ab"),
    ):
        writer.append([start("0123456789ab")])


def test_secrets_and_the_dsn_password_are_scrubbed_before_the_row(
    store: PgStore, pg_dsn: str
) -> None:
    password = store.info.password
    assert password  # the test DSN has one
    session_id = new_id()
    store.create_session(session_id, "proj")
    text = f"key sk-{'a' * 24} and my dsn {pg_dsn}"
    with store.acquire_writer(session_id, Redactor(["configured-key-1234"])) as writer:
        (event,) = writer.append(
            [EventDraft("turn/start", {"input": text + " configured-key-1234"})]
        )
    assert event.data.input.startswith("key sk-")  # in memory the text stays as typed
    stored = store.read_events(session_id)[0]["data"]["input"]
    assert "sk-aaaa" not in stored and password not in stored and "configured-key" not in stored
    assert stored.count(REDACTED) == 3


def test_u0000_which_jsonb_cannot_hold_becomes_u_fffd(store: PgStore) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    with store.acquire_writer(session_id) as writer:
        writer.append([EventDraft("turn/start", {"input": "a\x00b", "k\x00": 1, "lit": "\\u0000"})])
    data = store.read_events(session_id)[0]["data"]
    assert data == {"input": "a\ufffdb", "k\ufffd": 1, "lit": "\\u0000"}


def test_copied_events_keep_their_seqs_and_must_continue_the_log(store: PgStore) -> None:
    parent, child = new_id(), new_id()
    for session_id in (parent, child):
        store.create_session(session_id, "proj")
    with store.acquire_writer(parent) as writer:
        writer.append([start(parent), *turn(1, "one")])
    prefix = store.read_events(parent)
    with store.acquire_writer(child) as writer:
        with pytest.raises(SessionError, match="from seq 0, not be seqs 1..3"):
            writer.copy(prefix[1:])
        assert writer.copy(prefix) == 4
        with pytest.raises(SessionError, match="from seq 4, not be seqs 0..0"):
            writer.copy(prefix[:1])
        assert [event.seq for event in writer.append(turn(2, "two"))] == [4, 5, 6]
    copied = store.read_events(child)
    assert copied[:4] == prefix
    assert [event["seq"] for event in copied] == list(range(7))


def _check_dense_and_ordered(events: list[dict[str, object]], writers: int, each: int) -> None:
    assert [event["seq"] for event in events] == list(range(writers * each))
    for writer in range(writers):
        mine = [event["data"]["n"] for event in events if event["data"]["writer"] == writer]  # type: ignore[index]
        assert mine == list(range(each)), f"writer {writer}'s events out of order: {mine}"


def _drafts(writer: int, start_n: int, count: int) -> list[EventDraft]:
    return [
        EventDraft("session/decision", {"text": "x", "writer": writer, "n": n})
        for n in range(start_n, start_n + count)
    ]


def test_concurrent_appenders_on_threads_never_leave_gaps_or_duplicates(
    store: PgStore, pg_dsn: str
) -> None:
    # Appenders that bypass the writer lock (as a bug or a lost lock would): the log stays dense.
    session_id = new_id()
    store.create_session(session_id, "proj")
    writers, each = 4, 30
    errors: list[BaseException] = []
    barrier = threading.Barrier(writers)

    def append(writer: int) -> None:
        try:
            with psycopg.connect(pg_dsn, autocommit=True) as conn:
                configure(conn)
                barrier.wait()
                n = 0
                while n < each:
                    count = min(1 + (n + writer) % 3, each - n)  # batches of 1-3
                    append_events(
                        conn, store.schema, session_id, _drafts(writer, n, count), Redactor()
                    )
                    n += count
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=append, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    _check_dense_and_ordered(store.read_events(session_id), writers, each)


APPENDER = """
import os, sys
import psycopg
from session.pg.connection import configure
from session.pg.events import EventDraft, append_events
from session.redaction import Redactor
schema, session_id, writer, each = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with psycopg.connect(os.environ["AGENT_ASSIST_TEST_PG"], autocommit=True) as conn:
    configure(conn)
    for n in range(each):
        draft = EventDraft("session/decision", {"text": "x", "writer": writer, "n": n})
        append_events(conn, schema, session_id, [draft], Redactor())
"""


def test_concurrent_appenders_in_processes_never_leave_gaps_or_duplicates(
    store: PgStore, pg_dsn: str
) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    writers, each = 3, 25
    env = {**os.environ, "AGENT_ASSIST_TEST_PG": pg_dsn}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", APPENDER, store.schema, session_id, str(w), str(each)],
            cwd=REPO,
            env=env,
        )
        for w in range(writers)
    ]
    assert [proc.wait(timeout=120) for proc in procs] == [0] * writers
    _check_dense_and_ordered(store.read_events(session_id), writers, each)


def test_events_are_append_only_even_for_the_tables_owner(store: PgStore, pg_dsn: str) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    with store.acquire_writer(session_id) as writer:
        writer.append([start(session_id)])
    with connect(pg_dsn) as conn, pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        conn.execute(f'UPDATE "{store.schema}".events SET type = %s', ("turn/start",))
    assert store.read_events(session_id)[0]["type"] == "session/start"


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(texts=st.lists(st.text(max_size=200), min_size=1, max_size=4))
def test_any_text_reads_back_as_written(store: PgStore, texts: list[str]) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    with store.acquire_writer(session_id) as writer:
        written = writer.append([EventDraft("turn/start", {"input": t}, turn=1) for t in texts])
    events = store.read_events(session_id)
    assert [event["seq"] for event in events] == [event.seq for event in written]
    assert [event["data"]["input"] for event in events] == [
        Redactor().scrub(t).replace("\x00", "\ufffd") for t in texts
    ]


def test_a_writer_numbered_batch_must_continue_the_log(store: PgStore) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    with store.acquire_writer(session_id) as writer:
        writer.append([start(session_id)], durable=False)
        raw = {"seq": 1, "ts": "2024-01-01T00:00:00Z", "type": "session/phase", "turn": None}
        writer.write([{**raw, "step": None, "data": {"phase": "a"}}], durable=False)
        with pytest.raises(SessionError, match="does not continue the log at seq 2"):
            writer.write([{**raw, "seq": 5, "step": None, "data": {"phase": "b"}}], durable=True)
        writer.sync()  # a durable commit with nothing new to write
        assert writer.open_turn() is None
        writer.append([EventDraft("turn/start", {"input": "x"}, turn=1)])
        assert writer.open_turn() == 1
    assert [e["seq"] for e in store.read_events(session_id)] == [0, 1, 2]
    row = store.session(session_id)
    assert row is not None and row.next_seq == 3  # the refused batch gave its seqs back
