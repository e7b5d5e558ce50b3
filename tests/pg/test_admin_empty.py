"""`sessions list` / `sessions prune --empty` on a PostgreSQL store: sessions without a turn."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from session.pg.backend import PgSessionStore
from tests.cli.conftest import clean_env
from tests.cli.test_admin import record_session
from tests.pg.test_admin import cli, cli_json


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def pg_store(pg_dsn: str, schema: str, workspace: Path, tmp_path: Path) -> Iterator[PgSessionStore]:
    store = PgSessionStore.open(pg_dsn, workspace, home=tmp_path / "home", schema=schema)
    yield store
    store.close()


@pytest.fixture
def env(pg_dsn: str, schema: str, tmp_path: Path) -> dict[str, str]:
    return clean_env(
        tmp_path / "home", {"AGENT_ASSIST_STORE": pg_dsn, "AGENT_ASSIST_STORE_SCHEMA": schema}
    )


def without_a_turn(store: PgSessionStore) -> str:
    writer = store.create_session()
    store.write_snapshot(writer)
    writer.close()
    return writer.session_id


def test_list_folds_and_prune_empty_removes_the_sessions_without_a_turn(
    pg_store: PgSessionStore, workspace: Path, env: dict[str, str]
) -> None:
    here = ("--workspace", str(workspace))
    turn = record_session(pg_store, [("hello there", "General Kenobi")])
    empty, held = without_a_turn(pg_store), without_a_turn(pg_store)
    code, data = cli_json("sessions", "list", *here, env=env)
    assert code == 0 and data["total"] == 1 and "empty" not in data
    assert [row["sessionId"] for row in data["sessions"]] == [turn]
    code, data = cli_json("sessions", "list", "--empty", *here, env=env)
    assert [row["sessionId"] for row in data["sessions"]] == [held, empty, turn]
    code, out, _ = cli("sessions", "list", *here, env=env)
    assert out.endswith("\n2 sessions without a turn not shown (--empty shows them)\n")
    code, out, _ = cli("sessions", "list", "--all-projects", *here, env=env)
    assert out.endswith("\n2 sessions without a turn not shown (--empty shows them)\n")

    session = pg_store.open_session(held)  # as a running server holds its own
    try:
        code, data = cli_json("sessions", "prune", "--empty", "--yes", *here, env=env)
    finally:
        session.close()
    assert code == 0 and data["deleted"] == [empty] and data["skippedInUse"] == [held]
    assert not pg_store.exists(empty) and pg_store.exists(held) and pg_store.exists(turn)
