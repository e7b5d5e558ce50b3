"""The admin commands' wording: counts, untitled sessions, workspaces, hints to other projects."""

from __future__ import annotations

import json
from pathlib import Path

from session.local.manager import SessionManager

from .conftest import clean_env, run_cli
from .test_admin import make_session


def test_rm_names_an_untitled_session_and_counts_one_turn(workspace: Path, home: Path) -> None:
    env = clean_env(home)
    empty = make_session(workspace, home, [], instance="empty")
    snapshot = SessionManager(workspace, home=home).layout.snapshot_path(empty)
    assert json.loads(snapshot.read_text()).get("title") is None
    here = ("--workspace", str(workspace))
    result = run_cli("sessions", "rm", empty, *here, env=env, input="n\n")
    assert f"Delete session {empty} (untitled, 0 turns)?" in result.stderr, result.stderr
    one = make_session(workspace, home, [("hello", "hi")])
    result = run_cli("sessions", "rm", one, *here, env=env, input="n\n")
    assert f"Delete session {one} ('hello', 1 turn)?" in result.stderr, result.stderr
    shown = run_cli("sessions", "show", one, *here, env=env)
    assert " · 1 turn · " in shown.stdout and "1 turns" not in shown.stdout


def test_list_in_a_folder_without_sessions_points_to_the_other_projects(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    env = clean_env(home)
    for name, count in (("a", 2), ("b", 1)):
        other = tmp_path / name
        other.mkdir()
        for n in range(count):
            make_session(other, home, [(f"q{n}", "a")], instance=f"i{n}")
    result = run_cli("sessions", "list", "--workspace", str(workspace), env=env)
    assert result.returncode == 0
    assert result.stdout == (
        "No sessions.\n"
        "3 sessions in 2 other projects: agent-assist sessions list --all-projects lists them\n"
    )


def test_list_with_no_other_project_adds_no_hint(workspace: Path, home: Path) -> None:
    result = run_cli("sessions", "list", "--workspace", str(workspace), env=clean_env(home))
    assert result.stdout == "No sessions.\n"


def test_doctor_names_the_workspace_of_a_project_without_sessions(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    env = clean_env(home)
    session_id = make_session(workspace, home, [("hello", "hi")])
    removed = run_cli("sessions", "rm", session_id, "--yes", "--workspace", str(workspace), env=env)
    assert removed.returncode == 0, removed.stderr
    here = run_cli("doctor", "--offline", "--workspace", str(workspace), env=env)
    (line,) = [x for x in here.stdout.splitlines() if "projects:" in x]
    assert "unknown workspace" not in line
    assert f"0 sessions, {workspace} (this folder; no session records it)" in line
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    there = run_cli("doctor", "--offline", "--workspace", str(elsewhere), env=env)
    (line,) = [x for x in there.stdout.splitlines() if "projects:" in x]
    assert f"{workspace} (the last folder that used it" in line
