"""One writer per session: the advisory lock, refused to a second writer, gone with its holder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from session.errors import SessionError, SessionLockedError
from session.pg import DatabaseUnreachableError, PgStore, SessionWriter
from session.pg.events import EventDraft
from tests.pg.conftest import connect, new_id

REPO = Path(__file__).resolve().parents[2]

HOLDER = """
import os, sys, time
from session.pg import PgStore
from session.pg.events import EventDraft
schema, session_id = sys.argv[1], sys.argv[2]
store = PgStore.open(os.environ["AGENT_ASSIST_TEST_PG"], schema=schema, pool_size=1)
writer = store.acquire_writer(session_id)
writer.append([EventDraft("session/start", {"session_id": session_id})])
print("held", flush=True)
time.sleep(600)
"""


def acquire_within(store: PgStore, session_id: str, seconds: float) -> SessionWriter:
    """Acquire the writer, retrying while the old holder's backend is still going away."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return store.acquire_writer(session_id)
        except SessionLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_a_second_writer_is_refused_until_the_first_releases(store: PgStore, pg_dsn: str) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    with PgStore.open(pg_dsn, schema=store.schema) as elsewhere:  # another server
        first = store.acquire_writer(session_id)
        assert first.holds_lock()
        with pytest.raises(SessionLockedError, match=f"{session_id} is in use") as refused:
            elsewhere.acquire_writer(session_id)
        assert f"pid {os.getpid()}" in str(refused.value)  # says who holds it
        other_session = new_id()
        elsewhere.create_session(other_session, "proj")
        with elsewhere.acquire_writer(other_session) as unrelated:  # other sessions are free
            assert unrelated.holds_lock()
        first.release()
        assert first.closed and not first.holds_lock()
        first.release()  # twice is harmless
        with elsewhere.acquire_writer(session_id) as second:
            assert second.append([EventDraft("session/start", {"session_id": session_id})])


def test_the_lock_goes_when_its_holder_is_killed(store: PgStore, pg_dsn: str) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, store.schema, session_id],
        cwd=REPO,
        env={**os.environ, "AGENT_ASSIST_TEST_PG": pg_dsn},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SessionLockedError, match=f"pid {holder.pid}"):
            store.acquire_writer(session_id)
        os.kill(holder.pid, signal.SIGKILL)
        assert holder.wait(timeout=30) == -signal.SIGKILL
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    with acquire_within(store, session_id, 15) as writer:
        # what the killed writer committed is there, and the log goes on from it
        assert [
            event.seq for event in writer.append([EventDraft("turn/start", {"input": "x"})])
        ] == [1]
    assert [event["type"] for event in store.read_events(session_id)] == [
        "session/start",
        "turn/start",
    ]


def test_a_writer_whose_connection_dies_has_lost_the_lock_and_says_so(
    store: PgStore, pg_dsn: str
) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    writer = store.acquire_writer(session_id)
    writer.append([EventDraft("session/start", {"session_id": session_id})])
    with connect(pg_dsn) as admin:  # a role may end its own backends
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name LIKE 'agent-assist writer%%' AND usename = current_user"
            " AND application_name LIKE %s",
            (f"%pid {os.getpid()} %",),
        )
    with pytest.raises(DatabaseUnreachableError, match="127.0.0.1"):
        writer.append([EventDraft("turn/start", {"input": "lost"})])
    assert writer.closed and not writer.holds_lock()
    with pytest.raises(SessionError, match="lock is gone"):
        writer.append([EventDraft("turn/start", {"input": "lost"})])
    with acquire_within(store, session_id, 15) as again:  # another writer may take over
        assert [
            event.seq for event in again.append([EventDraft("turn/start", {"input": "x"})])
        ] == [1]
