"""How many connections a server holds, and the store through PgBouncer.

A server with its session open holds one connection: its writer's, which holds the
session's advisory lock and lends itself to the rest of the server's work (listing,
search, checkpoints); the pool opens a connection only while no writer can lend (before
the session starts), and closes it when unused. Through PgBouncer in session mode a server
works as directly; in transaction mode the commands that only read work (they take no lock).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI
from tests.cli.conftest import clean_env, run_cli
from tests.pg.bouncer import Bouncer
from tests.pg.conftest import connect
from tests.pg.test_outage import editor_on

SERVER_CONNECTIONS = """SELECT count(*) FROM pg_stat_activity
    WHERE datname = current_database() AND application_name LIKE %s"""


def connections_of(dsn: str, pid: int) -> int:
    """The connections a server process holds now (named after its pid: connect_kwargs)."""
    with connect(dsn) as conn:
        row = conn.execute(SERVER_CONNECTIONS, (f"agent-assist %, pid {pid} on %",)).fetchone()
    assert row is not None
    return int(row[0])


async def settled_at_one(dsn: str, pid: int, seconds: float = 40) -> None:
    """Wait until the server holds one connection (a pooled one closes once unused)."""
    deadline = time.monotonic() + seconds
    while (held := connections_of(dsn, pid)) != 1:
        assert time.monotonic() < deadline, f"the server holds {held} connections"
        await asyncio.sleep(0.2)


@pytest.fixture
def session_bouncer(pg_dsn: str, pg_other_dsn: str) -> Iterator[Bouncer]:
    bouncer = Bouncer("session", pg_dsn, pg_other_dsn)
    yield bouncer
    bouncer.close()


@pytest.fixture
def transaction_bouncer(pg_dsn: str, pg_other_dsn: str) -> Iterator[Bouncer]:
    bouncer = Bouncer("transaction", pg_dsn, pg_other_dsn)
    yield bouncer
    bouncer.close()


async def test_a_server_with_its_session_open_holds_one_connection(
    pg_dsn: str, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    fake.add("first answer", "second answer")
    editor = editor_on(workspace, home, fake, pg_dsn, schema)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "first question"})
    pid = editor.process.pid
    await settled_at_one(pg_dsn, pid)
    # Everything else the server does now goes through its writer's connection.
    listed = await editor.request("agentAssist/sessions")
    assert [s["sessionId"] for s in listed["sessions"]] == [session_id]
    hits = (await editor.request("agentAssist/search", {"query": "first question"}))["results"]
    assert hits and hits[0]["sessionId"] == session_id
    reply = await editor.request("agentAssist/chat", {"text": "second question"})
    assert reply["sessionId"] == session_id
    status = await editor.request("agentAssist/status")
    assert status["store"]["online"] is True
    assert connections_of(pg_dsn, pid) == 1
    await editor.stop()


async def test_a_server_through_pgbouncer_in_session_mode(
    session_bouncer: Bouncer,
    pg_dsn: str,
    schema: str,
    workspace: Path,
    home: Path,
    fake: FakeOpenAI,
) -> None:
    fake.add("first answer", "second answer")
    through = session_bouncer.dsn(pg_dsn)
    editor = editor_on(workspace, home, fake, through, schema)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "through the bouncer"})
    hits = (await editor.request("agentAssist/search", {"query": "bouncer"}))["results"]
    assert hits and hits[0]["sessionId"] == session_id
    await editor.stop()
    again = editor_on(workspace, home, fake, through, schema)  # resumes it, as directly
    await again.start()
    assert (await again.ready())["sessionId"] == session_id
    reply = await again.request("agentAssist/chat", {"text": "once more"})
    assert reply["sessionId"] == session_id and reply["turn"] == 2
    await again.stop()


async def test_commands_that_only_read_through_pgbouncer_in_transaction_mode(
    transaction_bouncer: Bouncer,
    pg_dsn: str,
    schema: str,
    workspace: Path,
    home: Path,
    fake: FakeOpenAI,
) -> None:
    fake.add("an answer about zebras")
    editor = editor_on(workspace, home, fake, pg_dsn, schema)  # a server, direct
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "tell me about zebras"})
    await editor.stop()
    env = clean_env(
        home,
        {
            "AGENT_ASSIST_STORE": transaction_bouncer.dsn(pg_dsn),
            "AGENT_ASSIST_STORE_SCHEMA": schema,
        },
    )
    where = ["--workspace", str(workspace)]
    for command, expected in (
        (["sessions", "list", *where], session_id),
        (["sessions", "show", session_id, *where], "tell me about zebras"),
        (["sessions", "search", "zebras", *where], session_id),
        (["sessions", "stats", *where], "1"),
    ):
        done = run_cli(*command, env=env)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        assert expected in done.stdout and "Traceback" not in done.stderr
