"""`agent-assist sessions list/show/export/search/rm/prune/reindex` on a PostgreSQL store.

Against the real server (`AGENT_ASSIST_TEST_PG`); each test has a schema of its own, named
to the command with `AGENT_ASSIST_STORE_SCHEMA` (or the hidden `--schema`). Sessions are
recorded through the session core (`SessionLifecycle`) on a `PgSessionStore`; a local
session in the same home shows that each store sees only its own.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from psycopg.conninfo import make_conninfo

from lsp_server.admin.targets import store_spec
from session.local.manager import SessionManager
from session.pg import PgStore
from session.pg.backend import PgSessionStore
from session.store.choose import store_kind
from tests.cli.conftest import clean_env, run_cli
from tests.cli.test_admin import age_session, record_session
from tests.pg.conftest import connect, new_id
from tests.pg.test_unreachable import closed_port

OLD = datetime(2020, 1, 2, 3, 4, tzinfo=UTC)


def age(dsn: str, schema: str, session_id: str, when: datetime = OLD) -> None:
    """Make a database session look last used at `when`."""
    with connect(dsn) as conn:
        conn.execute(
            f'UPDATE "{schema}".sessions SET created_at = %s, updated_at = %s'
            " WHERE session_id = %s",
            (when, when, session_id),
        )


def count(dsn: str, schema: str, table: str, session_id: str) -> int:
    with connect(dsn) as conn:
        row = conn.execute(
            f'SELECT count(*) FROM "{schema}".{table} WHERE session_id = %s', (session_id,)
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def other_project(tmp_path: Path) -> Path:
    root = tmp_path / "other"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def pg_store(pg_dsn: str, schema: str, workspace: Path, home: Path) -> Iterator[PgSessionStore]:
    store = PgSessionStore.open(pg_dsn, workspace, home=home, schema=schema)
    yield store
    store.close()


@pytest.fixture
def env(pg_dsn: str, schema: str, home: Path) -> dict[str, str]:
    """The environment of a server configured with the PostgreSQL store."""
    return clean_env(home, {"AGENT_ASSIST_STORE": pg_dsn, "AGENT_ASSIST_STORE_SCHEMA": schema})


@pytest.fixture
def sessions(
    pg_dsn: str,
    schema: str,
    pg_store: PgSessionStore,
    workspace: Path,
    other_project: Path,
    home: Path,
) -> dict[str, str]:
    """Two database sessions here (one 2020-old), one in another project; one local here."""
    recent = record_session(pg_store, [("hello there", "General Kenobi")])
    old = record_session(pg_store, [("ancient question", "ancient answer")], instance="b")
    age(pg_dsn, schema, old)
    elsewhere = PgSessionStore.open(pg_dsn, other_project, home=home, schema=schema)
    try:
        other = record_session(elsewhere, [("elsewhere", "other project")])
    finally:
        elsewhere.close()
    age(pg_dsn, schema, other)
    local = record_session(
        SessionManager(workspace, home=home), [("local question", "localonly answer")]
    )
    return {"recent": recent, "old": old, "other": other, "local": local}


def cli(*args: str, env: dict[str, str], input: str | None = None) -> tuple[int, str, str]:
    done = run_cli(*args, env=env, input=input)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def cli_json(*args: str, env: dict[str, str]) -> tuple[int, Any]:
    code, out, err = cli(*args, "--json", env=env)
    return code, json.loads(out) if out.strip() else {"stderr": err}


# -- choosing the store ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "environment", "expected"),
    [
        (None, None, None),
        (None, "local", None),
        (None, "  ", None),
        ("local", "postgresql://a@h/d", None),  # --store wins
        (None, " postgresql://a@h/d ", "postgresql://a@h/d"),
        ("host=h dbname=d", "local", "host=h dbname=d"),
        ("", "postgresql://a@h/d", "postgresql://a@h/d"),  # an empty --store: as unset
    ],
)
def test_the_store_is_chosen_as_the_server_chooses_it(
    monkeypatch: pytest.MonkeyPatch, flag: str | None, environment: str | None, expected: str | None
) -> None:
    if environment is None:
        monkeypatch.delenv("AGENT_ASSIST_STORE", raising=False)
    else:
        monkeypatch.setenv("AGENT_ASSIST_STORE", environment)
    spec = store_spec(argparse.Namespace(store=flag))
    assert spec == expected
    assert (spec is None) == (store_kind(flag or environment) == "local")


# -- list / show / export --------------------------------------------------------------------


def test_list_reads_the_database_and_not_the_local_files(
    workspace: Path, home: Path, env: dict[str, str], sessions: dict[str, str],
    pg_store: PgSessionStore,
) -> None:  # fmt: skip
    code, data = cli_json("sessions", "list", "--workspace", str(workspace), env=env)
    assert code == 0, data
    assert [r["sessionId"] for r in data["sessions"]] == [sessions["recent"], sessions["old"]]
    assert data["total"] == 2
    first = data["sessions"][0]
    assert first["title"] == "hello there" and first["turns"] == 1
    assert first["inUse"] is False
    assert first["project"] == pg_store.project and first["workspace"] == str(workspace)
    stored = pg_store.list_sessions()[0]  # the times as the local listing writes them
    assert first["updatedAt"].endswith("Z") and first["createdAt"].endswith("Z")
    assert datetime.fromisoformat(first["updatedAt"]) == stored.updated_at
    assert datetime.fromisoformat(first["createdAt"]) == stored.created_at

    code, table, _ = cli("sessions", "list", "--workspace", str(workspace), env=env)
    assert code == 0
    assert sessions["recent"] in table and "hello there" in table
    assert sessions["local"] not in table and "No sessions" not in table

    code, data = cli_json(
        "sessions", "list", "--limit", "1", "--workspace", str(workspace), env=env
    )
    assert [r["sessionId"] for r in data["sessions"]] == [sessions["recent"]]
    assert data["total"] == 2
    code, data = cli_json(
        "sessions", "list", "--limit", "1", "--offset", "1", "--workspace", str(workspace),
        env=env,
    )  # fmt: skip
    assert [r["sessionId"] for r in data["sessions"]] == [sessions["old"]]
    assert data["total"] == 2
    code, data = cli_json("sessions", "list", "--all-projects", "--offset", "1", env=env)
    _, whole = cli_json("sessions", "list", "--all-projects", env=env)
    assert code == 0 and data["sessions"] == whole["sessions"][1:]

    # The other way round: `--store local` (or no store) lists the local session only.
    code, data = cli_json(
        "sessions", "list", "--store", "local", "--workspace", str(workspace), env=env
    )
    assert code == 0 and [r["sessionId"] for r in data["sessions"]] == [sessions["local"]]
    code, data = cli_json("sessions", "list", "--workspace", str(workspace), env=clean_env(home))
    assert code == 0 and [r["sessionId"] for r in data["sessions"]] == [sessions["local"]]


def test_store_and_schema_options_choose_the_database(
    pg_dsn: str, schema: str, workspace: Path, home: Path, sessions: dict[str, str]
) -> None:
    code, data = cli_json(
        "sessions", "list", "--store", pg_dsn, "--schema", schema, "--workspace", str(workspace),
        env=clean_env(home),
    )  # fmt: skip
    assert code == 0, data
    assert {r["sessionId"] for r in data["sessions"]} == {sessions["recent"], sessions["old"]}


def test_all_projects_lists_every_project_of_the_role(
    workspace: Path, env: dict[str, str], sessions: dict[str, str], pg_store: PgSessionStore
) -> None:
    code, data = cli_json("sessions", "list", "--all-projects", env=env)
    assert code == 0, data
    rows = {r["sessionId"]: r for r in data["sessions"]}
    assert set(rows) == {sessions["recent"], sessions["old"], sessions["other"]}
    assert data["total"] == 3
    assert rows[sessions["recent"]]["project"] == pg_store.project
    assert rows[sessions["other"]]["project"] != pg_store.project
    assert rows[sessions["other"]]["workspace"].endswith("other")
    code, table, _ = cli("sessions", "list", "--all-projects", env=env)
    assert code == 0 and sessions["other"] in table and "elsewhere" in table


def test_show_and_export_read_the_database(
    pg_dsn: str, workspace: Path, env: dict[str, str], sessions: dict[str, str],
    pg_store: PgSessionStore, tmp_path: Path,
) -> None:  # fmt: skip
    password = PgStore(pg_dsn).info.password
    code, out, err = cli(
        "sessions", "show", sessions["recent"][:6], "--workspace", str(workspace), env=env
    )
    assert code == 0, err
    assert "You (turn 1): hello there" in out and "Assistant: General Kenobi" in out
    assert f"log: {pg_store.label} (session {sessions['recent']})" in out
    assert not password or password not in out + err

    code, data = cli_json(
        "sessions", "show", sessions["recent"], "--workspace", str(workspace), env=env
    )
    assert code == 0
    assert data["items"][0] == {"turn": 1, "role": "user", "text": "hello there"}
    assert data["log"] == f"{pg_store.label} (session {sessions['recent']})"
    assert data["problems"] == [] and data["readOnly"] is None

    out_file = tmp_path / "export.md"
    code, _, err = cli(
        "sessions", "export", sessions["recent"], "--format", "md", "-o", str(out_file),
        "--workspace", str(workspace), env=env,
    )  # fmt: skip
    assert code == 0, err
    text = out_file.read_text()
    assert text.startswith(f"# Session {sessions['recent']}: hello there")
    assert "**Assistant:**\n\nGeneral Kenobi" in text

    code, out, err = cli(
        "sessions", "export", sessions["recent"], "--format", "json",
        "--workspace", str(workspace), env=env,
    )  # fmt: skip
    assert code == 0, err
    exported = json.loads(out)
    assert exported["session"]["sessionId"] == sessions["recent"]
    stored = pg_store.read_events(sessions["recent"]).events
    assert [e["seq"] for e in exported["events"]] == [e.seq for e in stored]
    assert [e["type"] for e in exported["events"]] == [e.type for e in stored]

    # A local session is not in the database, whatever its id.
    code, _, err = cli(
        "sessions", "show", sessions["local"], "--workspace", str(workspace), env=env
    )
    assert code == 1 and f"no session {sessions['local']} in project" in err
    assert pg_store.label in err


# -- search / reindex ------------------------------------------------------------------------


def test_search_and_reindex(
    workspace: Path, env: dict[str, str], sessions: dict[str, str], pg_store: PgSessionStore
) -> None:
    code, data = cli_json("sessions", "search", "Kenobi", "--workspace", str(workspace), env=env)
    assert code == 0, data
    assert [r["sessionId"] for r in data["results"]] == [sessions["recent"]]
    assert "[Kenobi]" in data["results"][0]["snippet"]
    assert data["results"][0]["project"] == pg_store.project

    code, data = cli_json("sessions", "search", "localonly", "--workspace", str(workspace), env=env)
    assert code == 0 and data["results"] == []  # the local session is not searched
    code, data = cli_json("sessions", "search", "elsewhere", "--workspace", str(workspace), env=env)
    assert code == 0 and data["results"] == []  # nor another project's, without --all-projects

    code, data = cli_json("sessions", "search", "elsewhere", "--all-projects", env=env)
    assert code == 0 and [r["sessionId"] for r in data["results"]] == [sessions["other"]]
    code, table, _ = cli("sessions", "search", "Kenobi", "--workspace", str(workspace), env=env)
    assert code == 0 and sessions["recent"] in table and "Kenobi" in table

    code, out, _ = cli("sessions", "reindex", "--workspace", str(workspace), env=env)
    assert code == 0 and "kept by the database" in out
    code, data = cli_json("sessions", "reindex", "--workspace", str(workspace), env=env)
    assert code == 0 and data["store"] == "postgresql" and data["projects"] == []


# -- in use, rm, prune -----------------------------------------------------------------------


def test_held_locks_reads_the_writers_locks(
    pg_dsn: str, schema: str, pg_store: PgSessionStore, sessions: dict[str, str], home: Path,
    other_project: Path,
) -> None:  # fmt: skip
    ids = [sessions["recent"], sessions["old"], new_id(), "not-an-id"]
    assert pg_store.held_locks(ids) == set()
    session = pg_store.open_session(sessions["recent"])  # a writer holds its lock
    try:
        assert pg_store.held_locks(ids) == {sessions["recent"]}
        # any project's view of the role sees it; the lock is the session's
        elsewhere = PgSessionStore.open(pg_dsn, other_project, home=home, schema=schema)
        try:
            assert elsewhere.held_locks(ids) == {sessions["recent"]}
        finally:
            elsewhere.close()
    finally:
        session.close()
    assert pg_store.held_locks(ids) == set()


def test_rm_refuses_a_session_in_use_and_deletes_it_otherwise(
    pg_dsn: str, schema: str, workspace: Path, home: Path, env: dict[str, str],
    sessions: dict[str, str], pg_store: PgSessionStore,
) -> None:  # fmt: skip
    target = sessions["recent"]
    pg_store.write_pointer("win-1", target)
    session = pg_store.open_session(target)  # as a running server holds it
    try:
        code, data = cli_json("sessions", "list", "--workspace", str(workspace), env=env)
        assert {r["sessionId"]: r["inUse"] for r in data["sessions"]} == {
            target: True,
            sessions["old"]: False,
        }
        code, table, _ = cli("sessions", "list", "--workspace", str(workspace), env=env)
        assert "in use" in table
        code, _, err = cli(
            "sessions", "rm", target, "--yes", "--workspace", str(workspace), env=env
        )
        assert code == 1 and "in use" in err
        assert pg_store.exists(target)
    finally:
        session.close()

    code, _, err = cli(
        "sessions", "rm", target, "--workspace", str(workspace), env=env, input="n\n"
    )
    assert code == 1 and "nothing was deleted" in err
    assert pg_store.exists(target)

    # A spool left by a server that stopped while the database was away goes with it.
    spool = pg_store.spool_dir / f"{target}.events.jsonl"
    spool.parent.mkdir(parents=True, exist_ok=True)
    spool.write_bytes(b'{"seq": 99}\n')
    code, data = cli_json("sessions", "rm", target, "--yes", "--workspace", str(workspace), env=env)
    assert code == 0, data
    assert data["deleted"] == [target]
    assert str(spool) in data["removed"] and not spool.exists()
    assert not pg_store.exists(target)
    assert count(pg_dsn, schema, "events", target) == 0
    assert pg_store.read_pointer("win-1") is None
    assert pg_store.exists(sessions["old"])
    manager = SessionManager(workspace, home=home)
    assert manager.exists(sessions["local"])  # the local store is untouched

    # A local session's id is not the database's to delete.
    code, _, err = cli(
        "sessions", "rm", sessions["local"], "-y", "--workspace", str(workspace), env=env
    )
    assert code == 1 and "no session" in err
    assert manager.exists(sessions["local"])


def test_prune_dry_run_then_for_real_this_project_only(
    pg_dsn: str, schema: str, workspace: Path, home: Path, env: dict[str, str],
    sessions: dict[str, str], pg_store: PgSessionStore,
) -> None:  # fmt: skip
    busy = record_session(pg_store, [("busy", "still writing")], instance="c")
    age(pg_dsn, schema, busy)
    manager = SessionManager(workspace, home=home)
    local_old = record_session(manager, [("old local", "kept")], instance="d")
    age_session(manager, local_old)
    session = pg_store.open_session(busy)
    try:
        args = ("sessions", "prune", "--older-than", "90d", "--workspace", str(workspace))
        code, data = cli_json(*args, "--dry-run", env=env)
        assert code == 0, data
        assert data["candidates"] == [sessions["old"]] and data["deleted"] == []
        assert data["skippedInUse"] == [busy] and data["project"] == pg_store.project
        assert pg_store.exists(sessions["old"])

        code, out, _ = cli(*args, "--dry-run", env=env)
        assert code == 0 and "Would delete: 1 session in" in out and f"{busy}  in use" in out

        code, _, _ = cli(*args, env=env, input="")
        assert code == 1  # no answer: not confirmed
        assert pg_store.exists(sessions["old"])

        code, data = cli_json(*args, "--yes", env=env)
        assert code == 0 and data["deleted"] == [sessions["old"]]
        assert data["skippedInUse"] == [busy]
    finally:
        session.close()
    assert not pg_store.exists(sessions["old"])
    assert pg_store.exists(busy) and pg_store.exists(sessions["recent"])
    other = [r.session_id for r in pg_store.pg.list_sessions(None)]
    assert sessions["other"] in other  # another project's old session: never touched
    assert manager.exists(local_old) and manager.exists(sessions["local"])

    # And the local prune leaves the database alone.
    code, data = cli_json(*args, "--yes", "--store", "local", env=env)
    assert code == 0 and data["deleted"] == [local_old]
    assert pg_store.exists(busy) and pg_store.exists(sessions["recent"])


# -- an unreachable database -----------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["sessions", "list"],
        ["sessions", "list", "--all-projects"],
        ["sessions", "show", "abcdefabcdef"],
        ["sessions", "export", "abcdefabcdef"],
        ["sessions", "search", "anything"],
        ["sessions", "rm", "abcdefabcdef", "--yes"],
        ["sessions", "prune", "--older-than", "1d", "--yes"],
    ],
)
def test_an_unreachable_database_is_one_line_naming_the_host(
    pg_dsn: str, workspace: Path, home: Path, command: list[str]
) -> None:
    password = PgStore(pg_dsn).info.password or "secret-pw"
    port = closed_port()
    dsn = make_conninfo(pg_dsn, host="127.0.0.1", port=str(port), password=password)
    env = clean_env(home, {"AGENT_ASSIST_STORE": dsn})
    code, out, err = cli(*command, "--workspace", str(workspace), env=env)
    assert code == 1, (out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("agent-assist: cannot connect to the PostgreSQL store at")
    assert f"127.0.0.1:{port}" in lines[0] and "--store local" in lines[0]
    assert password not in err


def test_a_connection_string_that_cannot_be_parsed_is_a_usage_error(
    workspace: Path, home: Path
) -> None:
    env = clean_env(home, {"AGENT_ASSIST_STORE": "postgresql://u:hunter2secret@[bad"})
    code, out, err = cli("sessions", "list", "--workspace", str(workspace), env=env)
    assert code == 2 and "cannot be parsed" in err and "hunter2secret" not in err


# -- commands that read never create or upgrade the schema ----------------------------------


def schema_version(dsn: str, schema: str) -> int | None:
    with connect(dsn) as conn:
        from session.pg.schema import read_version

        return read_version(conn, schema)


@pytest.mark.parametrize(
    "command",
    [["sessions", "list"], ["sessions", "search", "hello"], ["sessions", "show", "abcd1234abcd"]],
)
def test_a_database_without_the_schema_is_said_and_left_as_it_is(
    pg_dsn: str, schema: str, workspace: Path, env: dict[str, str], command: list[str]
) -> None:
    code, _out, err = cli(*command, "--workspace", str(workspace), env=env)
    assert code == 1, err
    assert f"has no agent-assist schema '{schema}'" in err and "database name" in err
    assert schema_version(pg_dsn, schema) is None  # nothing was created


def test_an_older_schema_is_not_upgraded_by_a_listing(
    pg_dsn: str, schema: str, workspace: Path, env: dict[str, str]
) -> None:
    from session.pg.migrations import MIGRATIONS
    from session.pg.schema import ensure_schema

    with connect(pg_dsn) as conn:
        ensure_schema(conn, schema, MIGRATIONS[:2])
    code, _out, err = cli("sessions", "list", "--workspace", str(workspace), env=env)
    assert code == 1 and "schema version 2, older than this agent-assist needs" in err, err
    assert schema_version(pg_dsn, schema) == 2  # left for a server to upgrade
    PgStore.open(pg_dsn, schema=schema).close()  # a server's start upgrades it
    code, out, err = cli("sessions", "list", "--workspace", str(workspace), env=env)
    assert code == 0 and "No sessions." in out, err
