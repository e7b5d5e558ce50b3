"""`agent-assist sessions migrate`: what it says before it reaches a database (no server needed).

The copy itself is tested against a real PostgreSQL server in `tests/pg/test_migrate.py`.
"""

from __future__ import annotations

import socket
from pathlib import Path

from session.local.manager import SessionManager

from .conftest import clean_env, run_cli

PASSWORD = "pw-never-shown-7f3a"  # noqa: S105 - a test password, checked to be never printed


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def one_session(workspace: Path, home: Path) -> str:
    session = SessionManager(workspace, home=home).create_session()
    session.append("turn/start", {"input": "hello"}, turn=1)
    session.append("turn/end", {"reason": "completed"}, turn=1)
    session.close()
    return session.session_id


def test_an_unreachable_database_is_named_by_host_never_by_password(tmp_path: Path) -> None:
    one_session(tmp_path, tmp_path / "home")
    dsn = f"postgresql://alice:{PASSWORD}@127.0.0.1:{closed_port()}/sessions"
    for direction in ("--to", "--from"):
        out = run_cli(
            "sessions",
            "migrate",
            direction,
            dsn,
            "--project",
            str(tmp_path),
            env=clean_env(tmp_path / "home"),
        )
        assert out.returncode == 1, out.stderr
        assert "cannot connect to the PostgreSQL store at 127.0.0.1:" in out.stderr
        assert "database sessions, role alice" in out.stderr
        assert PASSWORD not in out.stdout + out.stderr
        assert "Traceback" not in out.stderr


def test_usage_errors_exit_2_and_a_bad_dsn_is_not_echoed(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home")
    out = run_cli("sessions", "migrate", "--to", f"postgresql://a:{PASSWORD}@[::1", env=env)
    assert out.returncode == 2
    assert "cannot be parsed" in out.stderr and PASSWORD not in out.stderr
    out = run_cli("sessions", "migrate", "--project", str(tmp_path), env=env)
    assert out.returncode == 2 and "--to" in out.stderr  # one of --to / --from is needed
    dsn = "postgresql://localhost/x"
    out = run_cli("sessions", "migrate", "--to", dsn, "--from", dsn, env=env)
    assert out.returncode == 2 and "not allowed with" in out.stderr
    out = run_cli("sessions", "migrate", "--to", dsn, "--project", str(tmp_path / "no"), env=env)
    assert out.returncode == 2 and "is not a directory" in out.stderr


def test_a_project_without_sessions_is_a_problem_said_before_connecting(tmp_path: Path) -> None:
    dsn = f"postgresql://alice:{PASSWORD}@127.0.0.1:{closed_port()}/sessions"
    out = run_cli(
        "sessions",
        "migrate",
        "--to",
        dsn,
        "--project",
        str(tmp_path),
        env=clean_env(tmp_path / "home"),
    )
    assert out.returncode == 1
    assert "has no sessions of the project at" in out.stderr and "--project" in out.stderr
    assert "cannot connect" not in out.stderr  # said before the database is tried
