"""A hostile clone: a folder whose `.git/config` names another project's remote.

The remote URL is text anyone can write; only the root commit (whose object must hash to its
id) proves a folder is the same repository. A folder that merely names the victim's remote,
has its own history under it, or plants a fake object under the victim's root commit id gets
a project of its own: it lists, searches, opens and is offered none of the victim's sessions,
on the local store and on PostgreSQL. A real clone of the victim's repository keeps them, and
so does the victim's own folder whose project was recorded under the remote alone (before
the root commit was required).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI
from session.store.choose import SCHEMA_ENV, STORE_ENV
from tests.e2e import harness
from tests.e2e.conftest import store_kind
from tests.e2e.harness import Editor
from tests.e2e.test_project_identity import ORIGIN, editor_at, git, repository, root_commit

__all__ = ["store_kind"]  # both stores: the local files and PostgreSQL (when it is set up)

MakeEditor = Callable[..., Editor]
CONFIDENTIAL = "the kestrel launch code is osprey-7731"
LEGACY_KEY = "remote:github.com/example-org/kestrel"  # how the victim was named before


@dataclass(frozen=True)
class Victim:
    root: Path
    session_id: str
    key: str


async def victim_project(make_editor: MakeEditor, fake: FakeOpenAI, tmp_path: Path) -> Victim:
    """The victim's repository (origin ORIGIN) with one session holding a confidential text."""
    fake.add("noted")
    root = repository(tmp_path / "victim", "kestrel")
    editor = editor_at(make_editor, root)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": CONFIDENTIAL})
    key = (await editor.request("agentAssist/status"))["project"]["key"]
    await editor.stop()
    return Victim(root, session_id, key)


def names_the_remote(base: Path) -> Path:
    """A folder with a `.git` of its own that only names the victim's remote: no commit."""
    folder = base / "kestrel"
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "remote", "add", "origin", ORIGIN)
    return folder


def has_its_own_history(base: Path) -> Path:
    """Another repository whose `.git/config` names the victim's remote."""
    return repository(base, "kestrel", origin=ORIGIN)


def plants_the_root_commit(base: Path, victim_root: str) -> Path:
    """A folder whose HEAD is a loose object filed under the victim's root commit id.

    git trusts an object's file name: `git rev-list` reports this fake as the root commit.
    """
    folder = names_the_remote(base)
    body = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor x <x> 0 +0000\n"
    body += b"committer x <x> 0 +0000\n\nnot the victim's\n"
    objects = folder / ".git" / "objects" / victim_root[:2]
    objects.mkdir(parents=True, exist_ok=True)
    (objects / victim_root[2:]).write_bytes(zlib.compress(b"commit %d\0" % len(body) + body))
    (folder / ".git" / "refs" / "heads" / "main").write_text(victim_root + "\n")
    assert git(folder, "rev-list", "--max-parents=0", "HEAD").strip() == victim_root
    return folder


async def assert_sees_nothing_of(editor: Editor, victim: Victim) -> None:
    """The window lists, searches, opens and was offered none of the victim's sessions."""
    changed = await editor.ready()
    assert changed["sessionId"] != victim.session_id and changed["reason"] != "resumed"
    assert not any("Resume previous session?" in q.message for q in editor.questions)
    listed = (await editor.request("agentAssist/sessions"))["sessions"]
    assert victim.session_id not in {s["sessionId"] for s in listed}
    assert (await editor.request("agentAssist/search", {"query": "osprey-7731"}))["results"] == []
    with pytest.raises(JsonRpcException) as opened:
        await editor.request("agentAssist/open", {"sessionId": victim.session_id})
    assert f"no session {victim.session_id} in this project" in str(opened.value)
    with pytest.raises(JsonRpcException):
        await editor.request("agentAssist/history", {"sessionId": victim.session_id})
    status = await editor.request("agentAssist/status")
    assert status["project"]["key"] != victim.key
    assert status["sessionId"] != victim.session_id


async def assert_keeps(editor: Editor, victim: Victim) -> None:
    """The window is offered the victim's session, resumes it, lists and searches it."""
    changed = await editor.ready()
    assert any("Resume previous session?" in q.message for q in editor.questions)
    assert (changed["sessionId"], changed["reason"]) == (victim.session_id, "resumed")
    listed = (await editor.request("agentAssist/sessions"))["sessions"]
    assert victim.session_id in {s["sessionId"] for s in listed}
    found = await editor.request("agentAssist/search", {"query": "osprey-7731"})
    assert {hit["sessionId"] for hit in found["results"]} == {victim.session_id}


HOSTILE = ["names-the-remote", "own-history", "planted-root-commit"]


@pytest.mark.parametrize("kind", HOSTILE)
async def test_a_folder_naming_the_remote_sees_none_of_the_projects_sessions(
    make_editor: MakeEditor, fake: FakeOpenAI, tmp_path: Path, kind: str
) -> None:
    victim = await victim_project(make_editor, fake, tmp_path)
    base = tmp_path / "downloads"
    if kind == "names-the-remote":
        folder = names_the_remote(base)
    elif kind == "own-history":
        folder = has_its_own_history(base)
    else:
        folder = plants_the_root_commit(base, root_commit(victim.root))
    hostile = editor_at(make_editor, folder)  # the same instance id as the victim's window
    await hostile.start()
    await assert_sees_nothing_of(hostile, victim)
    how = (await hostile.request("agentAssist/status"))["project"]["how"]
    if kind != "own-history":
        assert "not proved by a root commit" in how
    if kind == "planted-root-commit":
        assert "does not hash to its id" in how
    await hostile.stop()


async def test_a_real_clone_of_the_repository_keeps_its_sessions(
    make_editor: MakeEditor, fake: FakeOpenAI, tmp_path: Path
) -> None:
    victim = await victim_project(make_editor, fake, tmp_path)
    clone = tmp_path / "elsewhere" / "kestrel-copy"
    clone.parent.mkdir()
    git(tmp_path, "clone", "-q", str(victim.root), str(clone))
    git(clone, "remote", "set-url", "origin", ORIGIN)  # as cloned from the shared remote
    editor = editor_at(make_editor, clone)
    await editor.start()
    await assert_keeps(editor, victim)
    assert (await editor.request("agentAssist/status"))["project"]["key"] == victim.key
    await editor.stop()


async def test_a_project_recorded_under_the_remote_alone_is_kept_by_its_own_folder_only(
    make_editor: MakeEditor, fake: FakeOpenAI, tmp_path: Path, home: Path, store_kind: str
) -> None:
    victim = await victim_project(make_editor, fake, tmp_path)
    record_as_before_proofs(home, store_kind)
    hostile = editor_at(make_editor, names_the_remote(tmp_path / "downloads"))
    await hostile.start()
    await assert_sees_nothing_of(hostile, victim)
    await hostile.stop()
    again = editor_at(make_editor, victim.root)
    await again.start()
    await assert_keeps(again, victim)
    assert (await again.request("agentAssist/status"))["project"]["key"] == victim.key
    await again.stop()
    if store_kind == "local":  # the record now holds the proof, and the folder that gave it
        records = [orjson.loads(p.read_bytes()) for p in home.glob("projects/*/project.json")]
        [record] = [r for r in records if r["key"] == victim.key]  # the hostile one has its own
        assert record["folders"] == [str(victim.root.resolve())]
    moved = victim.root.rename(victim.root.with_name("kestrel-moved"))
    third = editor_at(make_editor, moved)  # found by the proved key from now on
    await third.start()
    assert (await third.ready())["sessionId"] == victim.session_id
    await third.stop()


def record_as_before_proofs(home: Path, store_kind: str) -> None:
    """Rewrite the store as an agent-assist before root commits were required wrote it."""
    if store_kind == "local":
        [marker] = (home / "projects").glob("*/project.json")
        how = "origin remote git@github.com:Example-Org/kestrel.git"
        record = {"key": LEGACY_KEY, "kind": "remote", "how": how, "name": "kestrel"}
        marker.write_bytes(orjson.dumps(record))
        return
    import psycopg

    dsn, schema = harness.STORE_ENV[STORE_ENV], harness.STORE_ENV[SCHEMA_ENV]
    harness.close_stored()
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in ("sessions", "pointers"):
            conn.execute(f'UPDATE "{schema}".{table} SET project = %s', (LEGACY_KEY,))  # noqa: S608
