"""`agent-assist doctor` on a PostgreSQL store: what it reports, and that it only reads.

Against the real server (`AGENT_ASSIST_TEST_PG`); each test has a schema of its own, named
to doctor with `AGENT_ASSIST_STORE_SCHEMA` (a subprocess) or `--schema` (in-process).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from psycopg.conninfo import make_conninfo

from lsp_server.admin.doctor import DoctorReport, run_doctor
from lsp_server.admin.options import add_store_options
from session.pg import PgStore
from session.pg.migrations import MIGRATIONS
from session.pg.schema import known_version
from session.workspace.identity import project_identity
from tests.cli.conftest import clean_env
from tests.pg.conftest import connect, new_id
from tests.pg.test_unreachable import closed_port

TABLES = {
    "sessions",
    "events",
    "pointers",
    "blobs",
    "checkpoints",
    "checkpoint_files",
    "search_texts",
    "search_progress",
    "session_counts",
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root.resolve()


def doctor_process(
    dsn: str, schema: str, workspace: Path, home: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """Run `agent-assist doctor --offline ARGS` in the project, the store named by the env."""
    env = clean_env(home, {"AGENT_ASSIST_STORE": dsn, "AGENT_ASSIST_STORE_SCHEMA": schema})
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", "doctor", "--offline", *args],
        env=env,
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=60,
    )


def doctor_json(dsn: str, schema: str, workspace: Path, home: Path) -> tuple[int, dict[str, Any]]:
    done = doctor_process(dsn, schema, workspace, home, "--json")
    return done.returncode, json.loads(done.stdout)


def doctor_here(*argv: str) -> DoctorReport:
    """Run the checks in-process, with doctor's own options parsed from `argv`."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--offline", action="store_true")
    parser.add_argument("--timeout", type=float, default=1.0)
    add_store_options(parser)
    return run_doctor(parser.parse_args(["--offline", *argv]))


def messages(report: DoctorReport, level: str) -> list[str]:
    return [f.message for f in report.findings if f.area == "database" and f.level == level]


def schema_versions(dsn: str, schema: str) -> list[int]:
    with connect(dsn) as conn:
        rows = conn.execute(f'SELECT version FROM "{schema}".schema_version ORDER BY 1')  # noqa: S608
        return [int(str(row[0])) for row in rows.fetchall()]


def test_a_healthy_database(
    pg_dsn: str, schema: str, store: PgStore, workspace: Path, tmp_path: Path
) -> None:
    project = project_identity(workspace).key
    for _ in range(2):
        store.create_session(new_id(), project)
    store.create_session(new_id(), "elsewhere_0123abcd")
    password = store.info.password
    assert password

    code, data = doctor_json(pg_dsn, schema, workspace, tmp_path / "home")
    assert code == 0, data["problems"]
    database = data["database"]
    assert database["reachable"] is True and database["role"] == "agent_assist_test"
    assert database["serverVersion"][:2].isdigit()
    assert database["schemaVersion"] == database["knownSchemaVersion"] == known_version()
    assert set(database["rowLevelSecurity"]) == TABLES
    assert all(
        t == {"enabled": True, "forced": True} for t in database["rowLevelSecurity"].values()
    )
    assert database["superuser"] is False and database["bypassRls"] is False
    assert 0 < database["latencyMs"] < 1000
    assert (database["project"], database["sessions"], database["allSessions"]) == (project, 2, 3)
    where = f"{store.info.where}/{store.info.dbname}"
    label = f"postgresql://agent_assist_test@{where}"
    assert data["store"] == {"kind": "postgresql", "label": label, "schema": schema}
    assert data["root"] == {} and data["projects"] == []  # the local files are not the store

    human = doctor_process(pg_dsn, schema, workspace, tmp_path / "home")
    assert human.returncode == 0, human.stdout + human.stderr
    out = human.stdout
    assert "✓ database: PostgreSQL " in out and "role agent_assist_test" in out
    assert f"schema {schema}: version {known_version()} (current)" in out
    assert f"row-level security enabled and forced on all {len(TABLES)} tables" in out
    assert "latency " in out and " ms (median of 5 round trips)" in out
    assert f"2 sessions of this project ({project}) visible to role agent_assist_test" in out
    assert "No problems found." in out
    assert password not in out + human.stderr + json.dumps(data)


def test_another_role_sees_none_of_them(store: PgStore, pg_other_dsn: str, workspace: Path) -> None:
    store.create_session(new_id(), project_identity(workspace).key)
    report = doctor_here(
        "--store", pg_other_dsn, "--schema", store.schema, "--workspace", str(workspace)
    )
    assert not report.problems, report.findings
    assert report.database is not None
    assert report.database["role"] == "agent_assist_test_other"
    assert (report.database["sessions"], report.database["allSessions"]) == (0, 0)


def test_an_unreachable_database_is_named_and_the_password_never_shown(
    pg_dsn: str, workspace: Path, tmp_path: Path
) -> None:
    password = PgStore(pg_dsn).info.password
    assert password
    port = closed_port()
    dsn = make_conninfo(pg_dsn, host="127.0.0.1", port=str(port))  # the password kept
    assert password in dsn
    done = doctor_process(dsn, "aat_unused", workspace, tmp_path / "home")
    assert done.returncode == 1
    out = done.stdout
    assert f"✗ database: cannot connect to the PostgreSQL store at 127.0.0.1:{port}" in out
    assert "database agent_assist_test, role agent_assist_test" in out and "refused" in out
    assert "set store to local" in out and "1 problem found." in out
    assert password not in out + done.stderr

    code, data = doctor_json(dsn, "aat_unused", workspace, tmp_path / "home")
    assert code == 1 and data["database"]["reachable"] is False
    assert any("cannot connect" in p for p in data["problems"])
    assert password not in json.dumps(data)


def test_a_newer_schema_is_read_only_and_left_alone(
    pg_dsn: str, schema: str, store: PgStore, workspace: Path
) -> None:
    newer = known_version() + 1
    with connect(pg_dsn) as conn:
        conn.execute(
            f'INSERT INTO "{schema}".schema_version (version, description) VALUES (%s, %s)',  # noqa: S608
            (newer, "from a newer agent-assist"),
        )
    report = doctor_here("--store", pg_dsn, "--schema", schema, "--workspace", str(workspace))
    [problem] = messages(report, "problem")
    assert f"version {newer}, this agent-assist knows {known_version()}" in problem
    assert "read-only: newer than this agent-assist" in problem
    assert schema_versions(pg_dsn, schema) == [*range(1, known_version() + 1), newer]


def test_row_level_security_off_on_a_table_is_a_problem(
    pg_dsn: str, schema: str, store: PgStore, workspace: Path, tmp_path: Path
) -> None:
    with connect(pg_dsn) as conn:  # as the tables' owner
        conn.execute(f'ALTER TABLE "{schema}".events NO FORCE ROW LEVEL SECURITY')
        conn.execute(f'ALTER TABLE "{schema}".blobs DISABLE ROW LEVEL SECURITY')
    code, data = doctor_json(pg_dsn, schema, workspace, tmp_path / "home")
    assert code == 1
    assert data["problems"] == [
        "database: row-level security is not enabled on blobs: every role that may connect "
        "sees all its rows",
        "database: row-level security is not forced on events: the tables' owner "
        "(agent_assist_test) is not bound by it and sees every role's rows there",
    ]
    assert data["database"]["rowLevelSecurity"]["events"] == {"enabled": True, "forced": False}
    assert data["database"]["rowLevelSecurity"]["blobs"] == {"enabled": False, "forced": True}


def test_no_schema_yet_is_said_and_not_created(pg_dsn: str, schema: str, workspace: Path) -> None:
    report = doctor_here("--store", pg_dsn, "--schema", schema, "--workspace", str(workspace))
    assert not report.problems, report.findings
    assert f"schema {schema}: no schema yet" in " ".join(messages(report, "info"))
    with connect(pg_dsn) as conn:
        row = conn.execute("SELECT to_regnamespace(%s)", (schema,)).fetchone()
    assert row == (None,)


def test_an_older_schema_will_be_migrated_by_its_owner_only(
    pg_dsn: str, pg_other_dsn: str, schema: str, workspace: Path
) -> None:
    PgStore.open(pg_dsn, schema=schema, migrations=MIGRATIONS[:2]).close()
    report = doctor_here("--store", pg_dsn, "--schema", schema, "--workspace", str(workspace))
    assert not report.problems, report.findings
    [said] = [m for m in messages(report, "info") if m.startswith(f"schema {schema}")]
    assert said.endswith(
        f"version 2, this agent-assist knows {known_version()}: will be migrated on first start"
    )
    other = doctor_here("--store", pg_other_dsn, "--schema", schema)
    assert any("role agent_assist_test_other cannot" in m for m in messages(other, "warning"))
    assert schema_versions(pg_dsn, schema) == [1, 2]


def test_store_local_checks_the_files_whatever_the_environment(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_ASSIST_STORE", pg_dsn)
    monkeypatch.setenv("AGENT_ASSIST_HOME", str(tmp_path / "home"))
    report = doctor_here("--store", "local")
    assert report.database is None and report.store == {"kind": "local"}
    assert report.root["path"] == str(tmp_path / "home")
    on_pg = doctor_here("--schema", "aat_unused")  # no --store: the environment's
    assert on_pg.database is not None and on_pg.database["reachable"] is True
