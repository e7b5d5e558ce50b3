"""The real server on PostgreSQL when the database goes away mid-session.

Through `CuttableProxy` the database disappears for the server only: its turns still
complete, the user is told once, status says how many events wait, the events reach the
database in order when it is back, and a `kill -9` while spooling loses no completed turn.
Away when the server starts: `test_offline_start.py`.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI
from session.pg.backend import PgSessionStore
from session.store.choose import SCHEMA_ENV, STORE_ENV
from tests.e2e.harness import Editor
from tests.fixtures import make_workspace
from tests.pg.proxy import CuttableProxy


@pytest.fixture
def proxy(pg_dsn: str) -> Iterator[CuttableProxy]:
    through = CuttableProxy(pg_dsn)
    yield through
    through.close()


def editor_on(
    workspace: Path, home: Path, fake: FakeOpenAI, dsn: str, schema: str, **kwargs: Any
) -> Editor:
    model = {"name": "test-model", "baseUrl": fake.base_url, "apiKey": "sk-test-0123456789abcdef"}
    return Editor(
        workspace,
        home,
        options={"instanceId": "w", "model": model},
        env={STORE_ENV: dsn, SCHEMA_ENV: schema},
        **kwargs,
    )


def messages(editor: Editor, kind: types.MessageType | None = None) -> list[str]:
    return [
        m.message
        for m in editor.client.messages
        if isinstance(m, types.ShowMessageParams) and (kind is None or m.type == kind)
    ]


async def until(condition: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


def password_of(dsn: str) -> str:
    password = urlsplit(dsn).password
    assert password
    return password


def turn_inputs(dsn: str, schema: str, workspace: Path, session_id: str) -> list[str]:
    store = PgSessionStore.open(dsn, workspace, schema=schema)
    try:
        events = store.read_events(session_id).events
    finally:
        store.close()
    assert [e.seq for e in events] == list(range(len(events)))  # dense, in order
    return [e.data.input for e in events if e.type == "turn/start"]  # type: ignore[union-attr]


async def test_a_turn_completes_while_the_database_is_away_and_its_events_follow(
    proxy: CuttableProxy, pg_dsn: str, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    fake.add("first answer", "second answer", "third answer")
    editor = editor_on(workspace, home, fake, proxy.dsn, schema)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "before"})
    proxy.cut()
    reply = await editor.request("agentAssist/chat", {"text": "during the outage"})
    assert reply["text"] == "second answer"  # the model was there: the turn completed
    status = await editor.request("agentAssist/status")
    assert status["store"]["kind"] == "postgresql" and not status["store"]["online"]
    assert status["store"]["pending"] > 0
    assert status["store"]["location"].startswith("postgresql://agent_assist_test@127.0.0.1")
    assert password_of(pg_dsn) not in str(status)
    await until(lambda: any("cannot be reached" in m for m in messages(editor)))
    await editor.request("agentAssist/chat", {"text": "still away"})
    proxy.restore()
    await until(lambda: any("spooled events are stored" in m for m in messages(editor)))
    status = await editor.request("agentAssist/status")
    assert status["store"]["online"] and status["store"]["pending"] == 0, (
        status["store"],
        messages(editor),
    )
    warnings = [m for m in messages(editor) if "cannot be reached" in m]
    assert len(warnings) == 1  # told once
    await editor.stop()
    assert turn_inputs(pg_dsn, schema, workspace, session_id) == [
        "before",
        "during the outage",
        "still away",
    ]


async def test_kill_9_while_spooling_then_a_restart_sends_the_spool(
    proxy: CuttableProxy, pg_dsn: str, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    fake.add("one", "two", "three")
    editor = editor_on(workspace, home, fake, proxy.dsn, schema)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "stored"})
    proxy.cut()
    await editor.request("agentAssist/chat", {"text": "spooled"})
    await editor.kill()
    assert list((home / "spool").rglob("*.events.jsonl"))  # kept on disk
    proxy.restore()
    again = editor_on(workspace, home, fake, pg_dsn, schema)
    await again.start()
    changed = await again.ready()
    assert changed["sessionId"] == session_id and changed["reason"] == "resumed"
    reply = await again.request("agentAssist/chat", {"text": "after the restart"})
    assert reply["text"] == "three"
    history = await again.request("agentAssist/history")
    users = [item["text"] for item in history["items"] if item["role"] == "user"]
    assert users == ["stored", "spooled", "after the restart"]
    await again.stop()
    assert turn_inputs(pg_dsn, schema, workspace, session_id) == users
    assert not list((home / "spool").rglob("*.events.jsonl"))


async def test_the_database_cut_mid_turn_keeps_every_event_in_order(
    proxy: CuttableProxy, pg_dsn: str, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    answer = "streamed while the database went away and came back " * 4
    fake.add("warm up", {"text": answer, "chunk": 6, "delay": 0.05})
    editor = editor_on(workspace, home, fake, proxy.dsn, schema)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "first"})
    _, reply = editor.start_request("agentAssist/chat", {"text": "long answer"})
    await until(lambda: len(editor.notifications["agentAssist/chatDelta"]) >= 3)
    proxy.cut()
    await until(lambda: len(editor.notifications["agentAssist/chatDelta"]) >= 10)
    proxy.restore()
    assert (await reply)["text"] == answer
    await until(lambda: any("spooled events are stored" in m for m in messages(editor)))
    await editor.stop()
    store = PgSessionStore.open(pg_dsn, workspace, schema=schema)
    try:
        events = store.read_events(session_id).events
    finally:
        store.close()
    assert [e.seq for e in events] == list(range(len(events)))
    chunks = [e.data.delta for e in events if e.type == "assistant/chunk" and e.turn == 2]  # type: ignore[union-attr]
    assert "".join(chunks) == answer  # every streamed piece, in order
    assert [e.type for e in events if e.turn == 2][-1] == "turn/end"


async def test_two_servers_with_different_homes_share_one_database(
    pg_dsn: str, schema: str, workspace: Path, tmp_path: Path, fake: FakeOpenAI
) -> None:
    fake.add("from the first home", "from the second home")
    first = editor_on(workspace, tmp_path / "home-a", fake, pg_dsn, schema)
    await first.start()
    session_id = (await first.ready())["sessionId"]
    await first.request("agentAssist/chat", {"text": "written at home A"})
    await first.stop()
    second = editor_on(workspace, tmp_path / "home-b", fake, pg_dsn, schema)
    await second.start()
    changed = await second.ready()
    assert (changed["sessionId"], changed["reason"]) == (session_id, "resumed")
    await second.request("agentAssist/chat", {"text": "written at home B"})
    status = await second.request("agentAssist/status")
    assert status["turns"] == 2
    history = await second.request("agentAssist/history")
    assert [i["text"] for i in history["items"] if i["role"] == "user"] == [
        "written at home A",
        "written at home B",
    ]
    await second.stop()
    assert not (tmp_path / "home-b" / "projects").exists()  # nothing in local files


async def test_a_schema_newer_than_the_server_is_read_only_and_says_why(
    pg_dsn: str, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    fake.add("recorded")
    editor = editor_on(workspace, home, fake, pg_dsn, schema)
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "before the upgrade elsewhere"})
    await editor.stop()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(
            f'INSERT INTO "{schema}".schema_version (version, description) VALUES (99, %s)',
            ("from a newer agent-assist",),
        )
    again = editor_on(workspace, home, fake, pg_dsn, schema)
    await again.start()
    await again.ready()
    await until(lambda: any("newer than this agent-assist" in m for m in messages(again)))
    status = await again.request("agentAssist/status")
    assert status["readOnly"] and not status["store"]["online"]
    sessions = await again.request("agentAssist/sessions")
    assert sessions["total"] == 1  # still readable
    await again.stop()


async def test_through_the_server_another_role_sees_nothing_of_a_roles_sessions(
    pg_dsn: str, pg_other_dsn: str, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    fake.add("a private answer about kestrels")
    mine = editor_on(workspace, home, fake, pg_dsn, schema)
    await mine.start()
    session_id = (await mine.ready())["sessionId"]
    await mine.request("agentAssist/chat", {"text": "remember the kestrel plan"})
    await mine.stop()
    theirs = editor_on(workspace, home, fake, pg_other_dsn, schema)  # same project, same window
    await theirs.start()
    changed = await theirs.ready()
    assert changed["reason"] == "new" and changed["sessionId"] != session_id  # nothing offered
    assert not theirs.questions  # no "Resume previous session?"
    listed = await theirs.request("agentAssist/sessions")
    assert session_id not in [s["sessionId"] for s in listed["sessions"]]
    assert (await theirs.request("agentAssist/search", {"query": "kestrel"}))["results"] == []
    with pytest.raises(Exception, match=f"no session {session_id}"):
        await theirs.request("agentAssist/open", {"sessionId": session_id})
    await theirs.stop()


async def test_another_machine_is_offered_the_latest_session_and_continues_it(
    pg_dsn: str, schema: str, tmp_path: Path, fake: FakeOpenAI
) -> None:
    fake.add("written on the laptop", "continued on the workstation")
    # One repository: a bare origin in a temp dir, cloned at two paths (two machines).
    (tmp_path / "src").mkdir()
    source = make_workspace(tmp_path / "src")
    bare = tmp_path / "origin.git"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args, where in (
        (["init", "-q", "--bare", "-b", "main", str(bare)], tmp_path),
        (["init", "-q", "-b", "main"], source),
        (["add", "."], source),
        (["commit", "-q", "-m", "first"], source),
        (["push", "-q", str(bare), "main"], source),
        (["clone", "-q", str(bare), "laptop"], tmp_path),
        (["clone", "-q", str(bare), "desk"], tmp_path),
    ):
        subprocess.run([*git, *args], cwd=where, check=True, capture_output=True)
    laptop_clone, desk_clone = tmp_path / "laptop", tmp_path / "desk"
    env = {STORE_ENV: pg_dsn, SCHEMA_ENV: schema}
    model = {"name": "test-model", "baseUrl": fake.base_url, "apiKey": "sk-test-0123456789abcdef"}
    laptop = Editor(
        laptop_clone,
        tmp_path / "laptop-home",
        options={"instanceId": "laptop-window", "model": model},
        env={**env, "AGENT_ASSIST_HOST": "laptop"},
    )
    await laptop.start()
    session_id = (await laptop.ready())["sessionId"]
    await laptop.request("agentAssist/chat", {"text": "start on the laptop"})
    await laptop.stop()
    # On the workstation the template differs: same size, same mtime, other bytes. The
    # laptop's stat cache must not vouch for it: drift is computed on this machine's files.
    laptop_file, desk_file = (c / "templates" / "reply.txt" for c in (laptop_clone, desk_clone))
    desk_file.write_text(laptop_file.read_text().replace("Dear", "Hiya"))
    stat = laptop_file.stat()
    os.utime(desk_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    desk = Editor(
        desk_clone,
        tmp_path / "desk-home",
        options={"instanceId": "desk-window", "model": model},  # no session of its own
        env={**env, "AGENT_ASSIST_HOST": "workstation"},
    )
    await desk.start()
    changed = await desk.ready()
    [question] = desk.questions
    assert "on laptop)" in question.message and "Resume previous session?" in question.message
    assert (changed["sessionId"], changed["reason"]) == (session_id, "resumed")
    resumed = await desk.request("agentAssist/resume")
    assert [f["path"] for f in resumed["changedFiles"]] == ["templates/reply.txt"]
    await desk.request("agentAssist/chat", {"text": "continue on the workstation"})
    assert (await desk.request("agentAssist/status"))["turns"] == 2
    await desk.stop()


async def a_turn_stored_then_one_spooled(
    proxy: CuttableProxy, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> tuple[Editor, str]:
    """A server with one turn in the database, then the database cut and a turn spooled."""
    fake.add("stored", "spooled")
    editor = editor_on(workspace, home, fake, proxy.dsn, schema)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "stored"})
    proxy.cut()
    await editor.request("agentAssist/chat", {"text": "spooled"})  # the log goes to its spool
    return editor, session_id


async def test_the_server_ends_promptly_while_the_database_is_away(
    proxy: CuttableProxy, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    editor, _ = await a_turn_stored_then_one_spooled(proxy, schema, workspace, home, fake)
    started = time.monotonic()
    await editor.stop()  # shutdown + exit while the spool holds the last turn
    assert editor.process.returncode == 0
    assert time.monotonic() - started < 5  # no waiting on the pool or on reconnecting
    assert list((home / "spool").rglob("*.events.jsonl"))  # kept for the next start


async def test_while_the_database_is_away_reads_are_refused_at_once_then_served(
    proxy: CuttableProxy, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    editor, session_id = await a_turn_stored_then_one_spooled(proxy, schema, workspace, home, fake)
    started = time.monotonic()
    with pytest.raises(JsonRpcException):  # the first to find the database gone...
        await editor.request("agentAssist/sessions", {})
    assert time.monotonic() - started < 4  # ...waits a moment and probes, not the pool's ~6 s
    for request, params in (("agentAssist/sessions", {}), ("agentAssist/search", {"query": "x"})):
        started = time.monotonic()
        with pytest.raises(JsonRpcException) as refused:
            await editor.request(request, params)
        assert time.monotonic() - started < 4  # not the pool's whole wait again (~6 s)
        assert "127.0.0.1" in str(refused.value) and "cannot connect" in str(refused.value)
    proxy.restore()
    listed = await editor.request("agentAssist/sessions", {})  # served again, straight away
    assert [s["sessionId"] for s in listed["sessions"]] == [session_id]
    assert (await editor.request("agentAssist/search", {"query": "stored"}))["results"]
    await editor.stop()
