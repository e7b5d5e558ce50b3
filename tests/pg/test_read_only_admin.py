"""Admin commands that only read change nothing in the database, search included.

Each command runs as a role that may only read (`default_transaction_read_only`, through
PGOPTIONS: any write, DDL or ANALYZE fails the command), while a writer holds the session's
lock (a command that tried to lock would be refused "in use"), and every table's rows —
their `ctid` and `xmin` too, which any insert, update or delete changes — are the same
after it. What the search index has not caught up yet is read from the events, and said.
An older schema is refused, naming the version needed and how to upgrade; a newer one is
read as it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from session.lifecycle import SessionLifecycle
from session.pg import PgStore
from session.pg.backend import PgSessionStore
from session.pg.migrations import MIGRATIONS, Migration
from session.pg.schema import ensure_schema, known_version, read_version
from session.pg.search import search
from session.search import search_filter
from session.search.filters import NO_FILTER
from session.search.query import SearchHit
from tests.cli.conftest import clean_env, run_cli
from tests.cli.test_admin import record_session
from tests.pg.conftest import connect

READ_ONLY = {"PGOPTIONS": "-c default_transaction_read_only=on"}


def fingerprint(dsn: str, schema: str) -> dict[str, list[tuple[object, ...]]]:
    """Every table of the schema, row by row with its ctid and xmin (the role's rows)."""
    with connect(dsn) as conn:
        tables = [
            str(row[0])
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY 1", (schema,)
            )
        ]
        return {
            table: conn.execute(
                f'SELECT ctid::text, xmin::text, t::text FROM "{schema}"."{table}" t ORDER BY 1'
            ).fetchall()
            for table in tables
        }


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("hello\n")
    return root.resolve()


@pytest.fixture
def env(pg_dsn: str, schema: str, home: Path) -> dict[str, str]:
    return clean_env(
        home, {"AGENT_ASSIST_STORE": pg_dsn, "AGENT_ASSIST_STORE_SCHEMA": schema, **READ_ONLY}
    )


@pytest.fixture
def pg_store(pg_dsn: str, schema: str, workspace: Path, home: Path) -> Iterator[PgSessionStore]:
    store = PgSessionStore.open(pg_dsn, workspace, home=home, schema=schema)
    yield store
    store.close()


def cli(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    done = run_cli(*args, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def no_digest(command: list[str], err: str) -> bool:
    """`request` of a turn recorded without a model: read, and said (exit 1)."""
    return command[1] == "request" and "no digest was recorded for this request" in err


def commands(workspace: Path, session_id: str) -> list[list[str]]:
    where = ["--workspace", str(workspace)]
    return [
        ["sessions", "list", *where],
        ["sessions", "list", "--all-projects", *where],
        ["sessions", "show", session_id, *where],
        ["sessions", "export", session_id, *where],
        ["sessions", "search", "Kenobi", *where],
        ["sessions", "search", "--all-projects", "question", *where],
        ["sessions", "stats", *where],
        ["sessions", "file-history", "notes.txt", *where],
        ["sessions", "request", session_id, "--turn", "1", *where],
    ]


def test_read_only_commands_change_nothing_and_search_reads_what_is_not_indexed(
    pg_dsn: str, schema: str, workspace: Path, env: dict[str, str], pg_store: PgSessionStore
) -> None:
    first = record_session(pg_store, [("hello there", "General Kenobi")])
    # A server's search indexes the first session; the second is recorded after it.
    assert [h.session_id for h in pg_store.open_search().search("Kenobi")] == [first]
    second = record_session(pg_store, [("second question", "Kenobi again")], instance="b")
    before = fingerprint(pg_dsn, schema)
    with pg_store.acquire_lock(second):  # in use: a command that locked would be refused
        for command in commands(workspace, second):
            code, out, err = cli(*command, env=env)
            assert code == 0 or no_digest(command, err), (command, out, err)
    assert fingerprint(pg_dsn, schema) == before

    code, out, err = cli("sessions", "search", "Kenobi", "--workspace", str(workspace), env=env)
    assert code == 0 and first in out and second in out, (out, err)
    assert "events not indexed yet: searched from the events" in err, err
    code, out, _err = cli(
        "sessions", "search", "Kenobi", "--json", "--workspace", str(workspace), env=env
    )
    found = json.loads(out)
    assert {r["sessionId"] for r in found["results"]} == {first, second}
    assert found["notIndexed"] > 0
    # What a server's search then indexes is found the same way, and nothing is left to say.
    assert {h.session_id for h in pg_store.open_search().search("Kenobi")} == {first, second}
    code, out, err = cli("sessions", "search", "Kenobi", "--workspace", str(workspace), env=env)
    assert code == 0 and first in out and second in out and "not indexed" not in err


def test_an_older_schema_is_refused_by_each_command_and_left_as_it_is(
    pg_dsn: str, schema: str, workspace: Path, env: dict[str, str]
) -> None:
    with connect(pg_dsn) as conn:
        ensure_schema(conn, schema, MIGRATIONS[:4])
    before = fingerprint(pg_dsn, schema)
    for command in commands(workspace, "abcdef012345"):
        code, _out, err = cli(*command, env=env)
        assert code == 1, (command, err)
        assert "schema version 4, older than this agent-assist needs" in err, err
        assert f"({known_version()})" in err and "sessions migrate" in err, err
    assert fingerprint(pg_dsn, schema) == before
    with connect(pg_dsn) as conn:
        assert read_version(conn, schema) == 4


def test_a_newer_schema_is_read_as_it_is(
    pg_dsn: str, schema: str, workspace: Path, home: Path, env: dict[str, str]
) -> None:
    store = PgSessionStore.open(pg_dsn, workspace, home=home, schema=schema)
    try:
        session_id = record_session(store, [("hello there", "General Kenobi")])
    finally:
        store.close()
    future = Migration(len(MIGRATIONS) + 1, "a later version", ("CREATE TABLE {s}.later (x int)",))
    with connect(pg_dsn) as conn:
        ensure_schema(conn, schema, (*MIGRATIONS, future))
    before = fingerprint(pg_dsn, schema)
    for command in commands(workspace, session_id):
        code, out, err = cli(*command, env=env)
        assert code == 0 or no_digest(command, err), (command, out, err)
        assert "newer than this agent-assist knows" in err, err
    code, out, _err = cli("sessions", "search", "Kenobi", "--workspace", str(workspace), env=env)
    assert session_id in out
    assert fingerprint(pg_dsn, schema) == before


def hits_of(found: list[SearchHit]) -> list[tuple[object, ...]]:
    return [(h.session_id, h.seq, h.turn, h.type, h.snippet, h.step, h.ts) for h in found]


def test_a_read_only_search_finds_what_a_catch_up_would_index(
    pg_dsn: str, schema: str, pg_store: PgSessionStore
) -> None:
    """The same hits, before the index caught up (read from the events) as after it."""
    first = record_session(pg_store, [("zebra question", "zebra answer one")])
    lifecycle = SessionLifecycle(pg_store, "streaming")
    lifecycle.start_fresh()
    recorder = lifecycle.begin_turn("tell me of zebra stripes")
    recorder.start_step([])
    recorder.chunk("a partial zebra ")
    assert lifecycle.session is not None
    lifecycle.session.log.sync()
    assert pg_store.open_search().search("zebra")  # indexed, the stream so far as a provisional row
    recorder.chunk("with stripes")  # the stream goes on after the index caught up
    lifecycle.session.log.sync()
    record_session(pg_store, [("another zebra", "zebra answer two")], instance="c")
    queries = [
        ("zebra", NO_FILTER),
        ("stripes", NO_FILTER),
        ("partial zebra with", NO_FILTER),
        ("zebra", search_filter(kind="user")),
        ("zebra", search_filter(kind="assistant")),
    ]
    with PgStore.open(pg_dsn, schema=schema, read_only=True) as reader:
        before = [
            hits_of(search(reader, pg_store.project, query, None, 50, where))
            for query, where in queries
        ]
        assert reader.unindexed > 0
        assert before[1] and {h[0] for h in before[1]} == {lifecycle.session_id}
        assert len(before[2]) == 1  # the stream once: its stale provisional row is not shown
        assert first in {h[0] for h in before[0]}
    after = [
        hits_of(search(pg_store.pg, pg_store.project, query, None, 50, where))
        for query, where in queries
    ]
    assert before == after
    lifecycle.close()
