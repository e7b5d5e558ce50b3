"""`sessions import` into PostgreSQL: the seed's sessions become the database's, verified.

The seed's store is laid out by hand (`tests/cli/test_seed_import.py`'s golden file); the
database is the real one (`AGENT_ASSIST_TEST_PG`), a schema per test.
"""

from __future__ import annotations

import json
from pathlib import Path

from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from session.pg.backend import PgSessionStore
from tests.cli.conftest import clean_env, run_cli
from tests.cli.test_seed_import import OLDER, SID, seed_home, seed_sessions, snapshot_of, workspace

__all__ = ["seed_home", "seed_sessions", "workspace"]  # fixtures


def test_import_into_the_database_resumes_there_as_the_seed_left_it(
    tmp_path: Path, pg_dsn: str, schema: str, workspace: Path, seed_sessions: Path
) -> None:
    seed_home = seed_sessions.parents[2]
    home = tmp_path / "home"
    env = clean_env(
        home,
        {
            "AGENT_ASSIST_SEED_HOME": str(seed_home),
            "AGENT_ASSIST_STORE": pg_dsn,
            "AGENT_ASSIST_STORE_SCHEMA": schema,
        },
    )
    before = snapshot_of(seed_home)
    ws = ["--workspace", str(workspace)]
    dry = run_cli("sessions", "import", SID, "--dry-run", *ws, env=env)
    assert dry.returncode == 0, dry.stderr
    assert "1 would be imported" in dry.stdout and "Dry run: nothing was written." in dry.stdout

    (workspace / "agent_spec.md").write_text("# Spec\nchanged after the seed's last save\n")
    done = run_cli("sessions", "import", SID, *ws, env=env)
    assert done.returncode == 0, done.stderr
    assert "1 imported into" in done.stdout and schema in done.stdout
    assert "1 damaged (skipped)" in done.stdout
    assert not SessionManager(workspace, home=home).exists(SID)  # nothing kept locally
    listed = json.loads(run_cli("sessions", "list", "--json", *ws, env=env).stdout)
    assert [(r["sessionId"], r.get("source")) for r in listed["sessions"]] == [
        (SID, None),
        (OLDER, "seed"),  # not imported yet: after the database's own
    ]

    again = run_cli("sessions", "import", "--all", "--json", *ws, env=env)
    assert again.returncode == 0, again.stderr
    statuses = {r["sessionId"]: r["status"] for r in json.loads(again.stdout)["sessions"]}
    assert statuses == {SID: "already-imported", OLDER: "imported"}
    assert snapshot_of(seed_home) == before  # the seed's store is only read
    listed = json.loads(run_cli("sessions", "list", "--json", *ws, env=env).stdout)
    assert {(r["sessionId"], r.get("source")) for r in listed["sessions"]} == {
        (SID, None),
        (OLDER, None),
    }  # the database's own now, the seed's not listed again

    store = PgSessionStore.open(pg_dsn, workspace, home=home, schema=schema)
    try:
        lifecycle = SessionLifecycle(store, "editor")
        lifecycle.resume(SID)
        context = lifecycle.resume_context
        assert "User designed a customer support agent with three tools." in context
        assert "Selected GPT-5 as the agent model" in context
        drift = lifecycle.last_drift
        assert drift is not None and drift.modified == ["agent_spec.md"]  # since the seed's save
        assert lifecycle.current.history.messages()  # the seed's recent messages
        lifecycle.close()
    finally:
        store.close()
