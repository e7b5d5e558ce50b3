"""Pointers of editors named after their process: stale once it is gone and its session free."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from session.local.manager import SessionManager
from session.local.pointers import process_alive, remove_stale_pointers
from session.store.editor import EditorProcess

from .test_catalog import make_session


def gone_pid() -> int:
    """Return the pid of a process that ran and was reaped."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_only_pointers_of_gone_editors_naming_free_sessions_are_removed(
    tmp_path: Path, home: Path
) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    free, held = make_session(workspace, home), make_session(workspace, home)
    manager = SessionManager(workspace, home=home)
    dead, alive = gone_pid(), subprocess.Popen(["sleep", "60"])
    try:
        manager.write_pointer("Ed-1", free, EditorProcess("Ed", dead))
        manager.write_pointer("Ed-2", held, EditorProcess("Ed", dead))
        manager.write_pointer("Ed-3", free, EditorProcess("Ed", alive.pid))
        manager.write_pointer("Other-4", free, EditorProcess("Other", dead))
        manager.write_pointer("Ed-5", free, EditorProcess("Ed", dead))  # the caller's own
        manager.write_pointer("window-6", free)  # an instanceId a user chose: no record
        recorded = json.loads(manager.layout.pointer_path("Ed-1").read_text())
        assert (recorded["client"], recorded["processId"]) == ("Ed", dead)
        lock = manager.acquire_lock(held)
        try:
            removed = remove_stale_pointers(manager.listing, client="Ed", keep="Ed-5")
        finally:
            lock.release()
        assert removed == [manager.layout.pointer_path("Ed-1")]
        left = {p.name for p in manager.layout.sessions_dir.glob("active_*.json")}
        assert left == {
            f"active_{i}.json" for i in ("Ed-2", "Ed-3", "Other-4", "Ed-5", "window-6", "inst")
        }
        removed = remove_stale_pointers(manager.listing)  # any client (`sessions prune`)
        assert {p.name for p in removed} == {
            "active_Ed-2.json",
            "active_Other-4.json",
            "active_Ed-5.json",
        }
        assert manager.exists(free) and manager.exists(held)  # only pointers go
    finally:
        alive.kill()
        alive.wait()


def test_a_process_id_that_names_no_single_process_is_taken_as_alive() -> None:
    assert process_alive(0) and process_alive(-1)  # never a signal to a process group
    assert not process_alive(gone_pid())


def test_a_pointer_that_says_so_already_is_not_written_again(tmp_path: Path, home: Path) -> None:
    """A resume of the session the pointer names writes (and fsyncs) nothing; a change does."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    first, second = make_session(workspace, home), make_session(workspace, home)
    manager = SessionManager(workspace, home=home)
    path = manager.layout.pointer_path("Ed-1")
    editor = EditorProcess("Ed", 4242)
    manager.write_pointer("Ed-1", first, editor)
    written = path.stat()
    manager.write_pointer("Ed-1", first, editor)
    assert path.stat().st_ino == written.st_ino  # left as it was (an atomic write replaces)

    for session, again in ((first, EditorProcess("Ed", 4243)), (second, editor), (first, None)):
        before = path.stat().st_ino
        manager.write_pointer("Ed-1", session, again)
        recorded = json.loads(path.read_text())
        assert path.stat().st_ino != before and recorded["sessionId"] == session
        assert recorded.get("processId") == (again.pid if again else None)

    path.write_text(json.dumps({"sessionId": first, "updatedAt": "x", "extra": 1}))
    tampered = path.stat().st_ino
    manager.write_pointer("Ed-1", first)  # not exactly ours: written again
    assert path.stat().st_ino != tampered and "extra" not in json.loads(path.read_text())
