"""A project is its repository, not its path: moved or cloned again, it keeps its sessions.

Each test runs on the local files and on PostgreSQL (`conftest.py`); those marked
`local_store` look at the project directories themselves.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from lsp_server.fake_model import FakeOpenAI
from session.paths import project_dir_name
from tests.fixtures import make_workspace

from .harness import Editor

MakeEditor = Callable[..., Editor]
VSCODE_ONLY = pytest.mark.parametrize("client_name", ["vscode"])
ORIGIN = "git@github.com:Example-Org/kestrel.git"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def repository(tmp_path: Path, name: str = "project", origin: str | None = ORIGIN) -> Path:
    """The standard test project, committed, with `origin` (if given)."""
    base = tmp_path / f"repos-{name}"
    base.mkdir(parents=True)
    root = make_workspace(base)
    if name != root.name:
        root = root.rename(root.with_name(name))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    if origin is not None:
        git(root, "remote", "add", "origin", origin)
    return root


def root_commit(root: Path) -> str:
    return git(root, "rev-list", "--max-parents=0", "HEAD").strip()


def editor_at(make_editor: MakeEditor, root: Path, **kwargs: Any) -> Editor:
    editor = make_editor(**kwargs)
    editor.workspace = root
    return editor


@VSCODE_ONLY
async def test_a_moved_project_is_offered_its_previous_session(
    make_editor: MakeEditor, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.add("noted", "still here")
    root = repository(tmp_path, "myproj")
    first = editor_at(make_editor, root)
    await first.start()
    session_id = (await first.ready())["sessionId"]
    await first.request("agentAssist/chat", {"text": "remember the kestrel plan"})
    status = await first.request("agentAssist/status")
    key = f"remote:github.com/example-org/kestrel+commit:{root_commit(root)}"
    assert status["project"]["key"] == key  # the remote and the root commit that proves it
    assert status["project"]["kind"] == "remote" and "origin remote" in status["project"]["how"]
    await first.stop()
    moved = root.rename(root.with_name("myproj2"))  # mv myproj myproj2
    again = editor_at(make_editor, moved)
    await again.start()
    changed = await again.ready()
    assert any("Resume previous session?" in q.message for q in again.questions)
    assert (changed["sessionId"], changed["reason"]) == (session_id, "resumed")
    await again.request("agentAssist/chat", {"text": "and after the move?"})
    assert (await again.request("agentAssist/status"))["turns"] == 2
    await again.stop()


@VSCODE_ONLY
async def test_two_clones_share_the_sessions_but_each_window_keeps_its_own(
    make_editor: MakeEditor, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.add("from clone A", "from clone B")
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    source = repository(tmp_path / "src", origin=str(bare))
    git(source, "push", "-q", "origin", "main")
    clones = []
    for name in ("clone-a", "clone-b"):
        git(tmp_path, "clone", "-q", str(bare), name)
        clones.append(tmp_path / name)
    a = editor_at(make_editor, clones[0], options={"instanceId": "window-a"})
    b = editor_at(make_editor, clones[1], options={"instanceId": "window-b"})
    await a.start()
    await b.start()
    a_id = (await a.ready())["sessionId"]
    b_id = (await b.ready())["sessionId"]
    assert a_id != b_id  # each window its own session (and lock)
    await a.request("agentAssist/chat", {"text": "written in clone A"})
    await b.request("agentAssist/chat", {"text": "written in clone B"})
    listed = {s["sessionId"] for s in (await b.request("agentAssist/sessions"))["sessions"]}
    assert {a_id, b_id} <= listed  # one project: both sessions seen from either clone
    found = await b.request("agentAssist/search", {"query": "clone A"})
    assert {hit["sessionId"] for hit in found["results"]} == {a_id}
    key = (await a.request("agentAssist/status"))["project"]["key"]
    assert key == (await b.request("agentAssist/status"))["project"]["key"]
    assert key == f"remote:{bare.resolve()}+commit:{root_commit(source)}"
    await a.stop()
    await b.stop()


@pytest.mark.local_store
@VSCODE_ONLY
async def test_a_directory_named_by_the_old_path_hash_is_adopted_never_moved(
    make_editor: MakeEditor, fake: FakeOpenAI, tmp_path: Path, home: Path
) -> None:
    fake.add("before identities", "after the move")
    root = repository(tmp_path, "legacy")
    first = editor_at(make_editor, root)
    await first.start()
    session_id = (await first.ready())["sessionId"]
    await first.request("agentAssist/chat", {"text": "an old session"})
    await first.stop()
    # Make it look as a store written before identities: `<name>_<hash8>` of the path, no marker.
    [made] = (home / "projects").iterdir()
    old = home / "projects" / project_dir_name(root)
    made.rename(old)
    (old / "project.json").unlink()
    again = editor_at(make_editor, root)
    await again.start()
    assert (await again.ready())["sessionId"] == session_id  # adopted where it is
    await again.request("agentAssist/chat", {"text": "and now it knows its identity"})
    await again.stop()
    assert [p.name for p in (home / "projects").iterdir()] == [old.name]  # not moved
    marker = orjson.loads((old / "project.json").read_bytes())
    assert marker["key"] == f"remote:github.com/example-org/kestrel+commit:{root_commit(root)}"
    assert marker["folders"] == [str(root.resolve())]
    moved = root.rename(root.with_name("legacy-renamed"))
    third = editor_at(make_editor, moved)
    await third.start()
    assert (await third.ready())["sessionId"] == session_id  # found by its identity
    await third.stop()
    assert [p.name for p in (home / "projects").iterdir()] == [old.name]
    shutil.rmtree(moved)
