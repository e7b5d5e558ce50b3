"""`sessions list` and `sessions prune --empty`: the sessions without a turn (issue #39)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from session.local.manager import SessionManager

from .conftest import clean_env, run_cli
from .test_admin import age_session, cli_json, make_session


def without_a_turn(workspace: Path, home: Path) -> str:
    """A session as an exit without a turn saves it."""
    manager = SessionManager(workspace, home=home)
    writer = manager.create_session()
    manager.write_snapshot(writer)
    writer.close()
    return writer.session_id


def seed_session(workspace: Path, home: Path, **fields: Any) -> str:
    """A session file as the seed's tool writes it: no log, no `turns`, `fields` set."""
    manager = SessionManager(workspace, home=home)
    session_id = without_a_turn(workspace, home)
    path = manager.layout.snapshot_path(session_id)
    raw = json.loads(path.read_text())
    for key in ("turns", "last_seq", "log_offset", "title"):
        raw.pop(key, None)
    path.write_text(json.dumps(raw | fields))
    manager.layout.log_path(session_id).unlink()
    return session_id


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    return clean_env(home)


@pytest.fixture
def sessions(workspace: Path, home: Path) -> dict[str, str]:
    """One session with a turn and two without, here; one without in another project."""
    found = {"turn": make_session(workspace, home, [("hello there", "General Kenobi")])}
    found["empty"] = without_a_turn(workspace, home)
    found["empty 2"] = without_a_turn(workspace, home)
    other = workspace.parent / "other"
    other.mkdir()
    found["other"] = without_a_turn(other, home)
    return found


def test_list_folds_the_sessions_without_a_turn_and_says_how_many(
    workspace: Path, env: dict[str, str], sessions: dict[str, str]
) -> None:
    here = ("--workspace", str(workspace))
    code, data = cli_json("sessions", "list", *here, env=env)
    assert code == 0
    assert data == {"sessions": data["sessions"], "total": 1}  # nothing new in the JSON
    assert [row["sessionId"] for row in data["sessions"]] == [sessions["turn"]]
    code, data = cli_json("sessions", "list", "--empty", *here, env=env)
    listed = [row["sessionId"] for row in data["sessions"]]
    assert listed == [sessions["empty 2"], sessions["empty"], sessions["turn"]]
    assert data["total"] == 3 and data["sessions"][0]["turns"] == 0

    table = run_cli("sessions", "list", *here, env=env)
    assert table.returncode == 0 and sessions["turn"] in table.stdout
    assert sessions["empty"] not in table.stdout
    last = table.stdout.splitlines()[-1]
    assert last == "2 sessions without a turn not shown (--empty shows them)"
    table = run_cli("sessions", "list", "--empty", *here, env=env)
    assert sessions["empty"] in table.stdout and "without a turn" not in table.stdout

    table = run_cli("sessions", "list", "--all-projects", env=env)
    assert table.stdout.splitlines()[-1].startswith("3 sessions without a turn not shown")
    code, data = cli_json("sessions", "list", "--all-projects", "--empty", env=env)
    assert {row["sessionId"] for row in data["sessions"]} == set(sessions.values())


def test_list_says_so_when_every_session_is_without_a_turn(
    workspace: Path, home: Path, env: dict[str, str]
) -> None:
    without_a_turn(workspace, home)
    table = run_cli("sessions", "list", "--workspace", str(workspace), env=env)
    assert table.stdout == (
        "No sessions.\n1 session without a turn not shown (--empty shows them)\n"
    )


def test_prune_empty_removes_those_no_process_holds(
    workspace: Path, home: Path, env: dict[str, str], sessions: dict[str, str]
) -> None:
    manager = SessionManager(workspace, home=home)
    here = ("--workspace", str(workspace))
    assert run_cli("sessions", "prune", *here, env=env).returncode == 2  # what, then?
    lock = manager.acquire_lock(sessions["empty 2"])  # as a running server holds its own
    try:
        code, data = cli_json("sessions", "prune", "--empty", "--dry-run", *here, env=env)
        assert code == 0 and data["empty"] is True and data["olderThan"] is None
        assert data["candidates"] == [sessions["empty"]]
        assert data["skippedInUse"] == [sessions["empty 2"]] and data["deleted"] == []
        result = run_cli("sessions", "prune", "--empty", "--yes", *here, env=env)
        assert result.returncode == 0, result.stderr
        assert "Without a turn: 1 session in" in result.stdout
        assert f"{sessions['empty 2']}  in use: skipped" in result.stdout
        assert "Deleted 1 session." in result.stdout
    finally:
        lock.release()
    assert not manager.exists(sessions["empty"])
    assert manager.exists(sessions["empty 2"]) and manager.exists(sessions["turn"])
    assert SessionManager(workspace.parent / "other", home=home).exists(sessions["other"])


def test_prune_empty_and_older_than_takes_both_and_keeps_what_has_content(
    workspace: Path, home: Path, env: dict[str, str], sessions: dict[str, str]
) -> None:
    manager = SessionManager(workspace, home=home)
    here = ("--workspace", str(workspace))
    age_session(manager, sessions["empty"])
    age_session(manager, sessions["turn"])
    code, data = cli_json(
        "sessions", "prune", "--empty", "--older-than", "90d", "--yes", *here, env=env
    )
    assert code == 0 and data["deleted"] == [sessions["empty"]]  # old and without a turn
    assert manager.exists(sessions["turn"]) and manager.exists(sessions["empty 2"])
    # A seed's session file with only messages: folded by the listing, but not deleted.
    seed = seed_session(workspace, home, recent_messages=[{"role": "user", "content": "hi"}])
    summarised = seed_session(workspace, home, summary="What the seed's tool kept")
    code, data = cli_json("sessions", "list", *here, env=env)
    listed = [row["sessionId"] for row in data["sessions"]]
    assert listed == [summarised, sessions["turn"]]  # a summary is a title: listed
    code, data = cli_json("sessions", "prune", "--empty", "--yes", *here, env=env)
    assert code == 0 and data["deleted"] == [sessions["empty 2"]]
    assert data["skippedWithContent"] == [seed] and manager.exists(seed)
