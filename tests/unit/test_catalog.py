"""The store's catalog: projects and the workspace each recorded, pointer files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from session.local import project_listing as listing_module
from session.local.catalog import list_projects, pointer_files, pointers_to, recorded_workspace_root
from session.local.manager import SessionManager

from .conftest import make_lifecycle, run_turn


def make_session(workspace: Path, home: Path, instance: str = "inst") -> str:
    lifecycle = make_lifecycle(SessionManager(workspace, home=home), instance)
    lifecycle.start_fresh()
    run_turn(lifecycle, "hello", "hi there")
    session_id = lifecycle.session_id
    lifecycle.close()
    return session_id


def test_projects_are_listed_with_the_workspace_their_sessions_recorded(
    tmp_path: Path, home: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    one = make_session(first, home)
    two = make_session(second, home)
    (home / "projects" / "linked").symlink_to(SessionManager(first, home=home).layout.project_dir)

    projects = {p.workspace_root: p for p in list_projects(home)}
    assert set(projects) == {str(first.resolve()), str(second.resolve())}  # no symlink
    entry = projects[str(first.resolve())]
    assert entry.workspace_exists and entry.name.startswith("first_")
    assert entry.manager.layout.project_dir == SessionManager(first, home=home).layout.project_dir
    assert list(entry.manager.layout.session_ids()) == [one]
    assert list(projects[str(second.resolve())].manager.layout.session_ids()) == [two]


def test_a_moved_workspace_keeps_its_project_directory(tmp_path: Path, home: Path) -> None:
    workspace = tmp_path / "before"
    workspace.mkdir()
    session_id = make_session(workspace, home)
    workspace.rename(tmp_path / "after")

    (entry,) = list_projects(home)
    assert entry.workspace_root == str(workspace.resolve()) and not entry.workspace_exists
    assert entry.manager.exists(session_id)  # the directory as it is, not a new one


def test_the_workspace_is_read_from_the_log_or_the_snapshot(workspace: Path, home: Path) -> None:
    manager = SessionManager(workspace, home=home)
    session_id = make_session(workspace, home)
    manager.layout.snapshot_path(session_id).unlink()
    assert recorded_workspace_root(manager) == str(workspace.resolve())

    other = make_session(workspace, home, instance="other")
    manager.layout.log_path(session_id).unlink()
    manager.layout.log_path(other).unlink()
    assert recorded_workspace_root(manager) == str(workspace.resolve())  # snapshot only

    manager.layout.snapshot_path(other).unlink()
    assert recorded_workspace_root(manager) is None


def test_pointer_files_and_the_pointers_naming_a_session(workspace: Path, home: Path) -> None:
    manager = SessionManager(workspace, home=home)
    first = make_session(workspace, home, instance="a")
    second = make_session(workspace, home, instance="b")
    manager.write_pointer("c", first)
    (manager.layout.sessions_dir / "active_bad name!.json").write_text("{}")

    pointers = pointer_files(manager)
    assert [(p.instance_id, p.valid) for p in pointers] == [
        ("a", True),
        ("b", True),
        ("bad name!", False),
        ("c", True),
    ]
    assert [p.instance_id for p in pointers_to(manager, first)] == ["a", "c"]
    assert [p.instance_id for p in pointers_to(manager, second)] == ["b"]
    os.unlink(manager.layout.sessions_dir / "active_b.json")
    assert pointers_to(manager, second) == []


@pytest.mark.parametrize("by_name", [True, False], ids=["probed-by-name", "listed-first"])
def test_held_locks_names_the_sessions_a_process_is_writing(
    tmp_path: Path, home: Path, by_name: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few sessions' locks are opened by name; many are first found in one listing."""
    monkeypatch.setattr(listing_module, "_PROBE_BY_NAME", 200 if by_name else 0)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    idle, busy, never = make_session(workspace, home), make_session(workspace, home), "0" * 12
    manager = SessionManager(workspace, home=home)
    assert not manager.layout.lock_path(idle).exists()  # its writer removed it as it let go
    manager.layout.lock_path(idle).touch()  # as a writer that died leaves it
    held = manager.acquire_lock(busy)
    try:
        assert manager.held_locks([idle, busy, never]) == {busy}
        assert manager.held_locks([idle]) == set()
    finally:
        held.release()
    assert manager.held_locks([idle, busy, never]) == set()
    assert not manager.layout.lock_path(never).exists()  # probing creates nothing
    assert not manager.layout.lock_path(idle).exists()  # a lock file no process holds is removed
    os.symlink(manager.layout.lock_path(busy), manager.layout.lock_path(idle))
    held = manager.acquire_lock(busy)
    try:  # a symlinked lock file is never followed
        assert manager.held_locks([idle, busy]) == {busy}
    finally:
        held.release()
