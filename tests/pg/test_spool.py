"""Nothing lost when the database goes away: the spool takes the events, in order, and gives
them back when it returns; a process killed while spooling loses no completed turn."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from session.pg.backend import PgSessionStore
from session.pg.spool import spooled_sessions
from session.store.session import Session
from tests.pg.proxy import CuttableProxy

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def proxy(pg_dsn: str) -> Iterator[CuttableProxy]:
    through = CuttableProxy(pg_dsn)
    yield through
    through.close()


def open_store(dsn: str, schema: str, tmp_path: Path) -> PgSessionStore:
    (tmp_path / "ws").mkdir(exist_ok=True)
    return PgSessionStore.open(dsn, tmp_path / "ws", home=tmp_path / "home", schema=schema)


def turn(session: Session, text: str) -> None:
    number = session.state.turns + 1
    session.append("turn/start", {"input": text}, turn=number)
    session.append("step/start", {"messages": []}, turn=number, step=1)
    for n in range(5):
        session.append("assistant/chunk", {"delta": f"{text}-{n} "}, turn=number, step=1)
    session.append("step/end", {"usage": {}}, turn=number, step=1)
    session.append("turn/end", {"reason": "completed"}, turn=number)


def inputs(store: PgSessionStore, session_id: str) -> list[str]:
    events = store.read_events(session_id).events
    assert [e.seq for e in events] == list(range(len(events)))  # dense, in order
    return [e.data.input for e in events if e.type == "turn/start"]  # type: ignore[union-attr]


def wait_online(session: Session, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not session.log.retry():
        assert time.monotonic() < deadline, "the spool was not sent"
        time.sleep(0.2)


def test_events_spool_while_the_database_is_away_and_go_back_in_order(
    proxy: CuttableProxy, pg_dsn: str, schema: str, tmp_path: Path
) -> None:
    store = open_store(proxy.dsn, schema, tmp_path)
    direct = open_store(pg_dsn, schema, tmp_path)
    session = store.create_session(instance_id="w")
    turn(session, "before the outage")
    proxy.cut()
    turn(session, "during the outage")  # no error: the turn completes
    turn(session, "still away")
    assert not session.log.online and session.log.pending == 18
    assert list(spooled_sessions(store.spool_dir)) == [session.session_id]
    assert inputs(direct, session.session_id) == ["before the outage"]
    proxy.restore()
    wait_online(session)
    assert session.log.online and session.log.pending == 0
    turn(session, "after")
    session.close()
    assert inputs(direct, session.session_id) == [
        "before the outage",
        "during the outage",
        "still away",
        "after",
    ]
    assert list(spooled_sessions(store.spool_dir)) == []
    rows = direct.list_sessions()
    assert (rows[0].turns, rows[0].title) == (4, "before the outage")
    store.close()
    direct.close()


def test_a_new_session_started_while_the_database_is_away_gets_its_row_later(
    proxy: CuttableProxy, pg_dsn: str, schema: str, tmp_path: Path
) -> None:
    store = open_store(proxy.dsn, schema, tmp_path)
    session = store.create_session(write_start=False)
    proxy.cut()
    store.start_log(session)
    turn(session, "offline from the start")
    proxy.restore()
    wait_online(session)
    session.close()
    direct = open_store(pg_dsn, schema, tmp_path)
    assert inputs(direct, session.session_id) == ["offline from the start"]
    direct.close()
    store.close()


SPOOLER = """
import sys, time
from pathlib import Path
from session.pg.backend import PgSessionStore
dsn, schema, home, ws = sys.argv[1:5]
store = PgSessionStore.open(dsn, Path(ws), home=Path(home), schema=schema)
session = store.create_session()
for text in ("one", "two"):
    n = session.state.turns + 1
    session.append("turn/start", {"input": text}, turn=n)
    session.append("turn/end", {"reason": "completed"}, turn=n)
    if text == "one":
        print(session.session_id, flush=True)
        sys.stdin.readline()  # the test cuts the database here
print("spooled" if not session.log.online else "online", flush=True)
time.sleep(600)
"""


def test_kill_while_spooling_loses_no_completed_turn(
    proxy: CuttableProxy, pg_dsn: str, schema: str, tmp_path: Path
) -> None:
    (tmp_path / "ws").mkdir()
    child = subprocess.Popen(  # noqa: S603 - our interpreter, our script
        [
            sys.executable,
            "-c",
            SPOOLER,
            proxy.dsn,
            schema,
            str(tmp_path / "home"),
            str(tmp_path / "ws"),
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        session_id = child.stdout.readline().strip()
        proxy.cut()
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "spooled"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    proxy.restore()
    store = open_store(pg_dsn, schema, tmp_path)
    assert inputs(store, session_id) == ["one"]
    assert store.replay_spools() == [f"session {session_id}: 2 spooled events sent to the database"]
    assert inputs(store, session_id) == ["one", "two"]
    assert list(spooled_sessions(store.spool_dir)) == []
    reopened = store.open_session(session_id)  # and it goes on from there
    assert reopened.state.turns == 2 and reopened.next_seq == 5
    reopened.close()
    store.close()


def test_the_spool_is_one_directory_whatever_the_projects_key(
    pg_dsn: str, schema: str, tmp_path: Path
) -> None:
    """A remote's path may hold `..`: the spool must not follow it out of the store."""
    workspace = tmp_path / "hostile"
    workspace.mkdir()
    hostile = "https://example.com/a/../../../../../../tmp/escaped"
    commit = ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "--allow-empty", "-mx"]
    for args in (["init", "-q"], ["remote", "add", "origin", hostile], commit):  # proved: a root
        subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True)
    home = tmp_path / "home"
    store = PgSessionStore.open(pg_dsn, workspace, home=home, schema=schema)
    try:
        assert ".." in store.project  # the key is as the remote says (it names the project)
        assert store.spool_dir.parent == home / "spool"
        assert "/" not in store.spool_dir.name and ".." not in store.spool_dir.name
        assert store.spool_dir.resolve().is_relative_to((home / "spool").resolve())
    finally:
        store.close()


def test_a_spool_where_an_earlier_version_kept_it_is_taken_over(
    pg_dsn: str, schema: str, tmp_path: Path
) -> None:
    (tmp_path / "ws").mkdir()
    home = tmp_path / "home"
    first = open_store(pg_dsn, schema, tmp_path)
    key, ours = first.project, first.spool_dir
    first.close()
    legacy = home / "spool" / key  # `spool/<key>/`: nested directories for a path key
    legacy.mkdir(parents=True)
    (legacy / "0123456789ab.events.jsonl").write_bytes(b'{"seq": 3}\n')
    (legacy / "not-a-session.events.jsonl").write_bytes(b"left alone\n")
    store = open_store(pg_dsn, schema, tmp_path)
    try:
        assert list(spooled_sessions(store.spool_dir)) == ["0123456789ab"]
        assert (ours / "0123456789ab.events.jsonl").read_bytes() == b'{"seq": 3}\n'
        assert not (legacy / "0123456789ab.events.jsonl").exists()
        assert (legacy / "not-a-session.events.jsonl").exists()
    finally:
        store.close()
