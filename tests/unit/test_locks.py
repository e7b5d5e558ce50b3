"""A session's writer lock: one holder at a time, and no file left once it is let go."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from session.errors import SessionLockedError
from session.local import locks
from session.local.locks import LockHeldError, take_lock
from session.local.manager import SessionManager


def test_the_lock_file_goes_with_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "a.lock"
    lock = take_lock(path)
    assert path.exists()
    with pytest.raises(LockHeldError):
        take_lock(path)  # another open file description: refused, as another process is
    lock.release()
    assert not path.exists()
    lock.release()  # twice: nothing more
    again = take_lock(path)
    assert path.exists()
    again.release()
    assert not path.exists()


def test_a_lock_file_a_dead_writer_left_is_taken_and_removed(tmp_path: Path) -> None:
    path = tmp_path / "a.lock"
    holder = subprocess.Popen(  # noqa: S603 - our interpreter, fixed code
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from session.local.locks import take_lock;"
            "take_lock(Path(sys.argv[1])); print('held', flush=True); sys.stdin.read()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(LockHeldError):
            take_lock(path)
    finally:
        holder.kill()
        holder.wait()
    assert path.exists()  # killed: it could not remove it
    lock = take_lock(path)
    lock.release()
    assert not path.exists()


def test_a_lock_held_for_an_instant_is_waited_for(tmp_path: Path) -> None:
    """A listing's probe locks a file for an instant: a writer meeting it is not refused."""
    path = tmp_path / "a.lock"
    path.touch()
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    threading.Timer(locks.BUSY_WAIT / 5, os.close, (fd,)).start()
    lock = take_lock(path)
    lock.release()


def test_a_file_replaced_before_the_flock_is_not_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder that let go removed the file we opened; a third took a new one meanwhile."""
    path = tmp_path / "a.lock"
    real_flock = fcntl.flock
    third: list[int] = []

    def flock(fd: int, operation: int) -> None:
        if not third:  # between our open and our flock: removed, made again and locked
            path.unlink()
            third.append(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
            real_flock(third[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
        real_flock(fd, operation)

    monkeypatch.setattr(locks.fcntl, "flock", flock)
    monkeypatch.setattr(locks, "BUSY_WAIT", 0.01)
    with pytest.raises(LockHeldError):  # the file the path names is the third's
        take_lock(path)
    os.close(third[0])
    lock = take_lock(path)
    assert lock.is_locked and path.exists()
    lock.release()


def test_a_symlink_is_never_followed(tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("keep")
    path = tmp_path / "a.lock"
    path.symlink_to(canary)
    with pytest.raises(OSError):
        take_lock(path)
    assert canary.read_text() == "keep" and path.is_symlink()
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(OSError):
        take_lock(path)


def test_a_lock_file_removed_while_held_is_let_go_quietly(tmp_path: Path) -> None:
    """A deletion removes the session's files, its lock file among them, while it holds it."""
    path = tmp_path / "a.lock"
    lock = take_lock(path)
    path.unlink()
    replacement = take_lock(path)  # another file now: not the one the first holds
    lock.release()
    assert path.exists()  # the first removes only its own file
    replacement.release()
    assert not path.exists()


def test_a_session_in_use_is_refused_and_no_lock_file_stays(tmp_path: Path, home: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    manager = SessionManager(workspace, home=home)
    session = manager.create_session(instance_id="inst")
    session_id = session.session_id
    with pytest.raises(SessionLockedError, match="in use by another editor window"):
        manager.acquire_lock(session_id)
    session.close()
    assert not manager.layout.lock_path(session_id).exists()
    reopened = manager.open_session(session_id)
    assert manager.held_locks([session_id]) == {session_id}
    reopened.close()
    assert manager.held_locks([session_id]) == set()
    assert [p.name for p in manager.layout.sessions_dir.iterdir() if p.suffix == ".lock"] == []
