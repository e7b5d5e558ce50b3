"""The seed's own store, laid out by hand: found, listed, offered and imported, never changed."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from session.local.manager import SessionManager
from session.local.seed_import import import_session
from session.paths import project_dir_name
from session.store import seed_store

from .conftest import make_lifecycle, request, response, run_turn

SEED = Path(__file__).parent / "seed"
SCHEMA = json.loads((SEED / "session_v3.schema.json").read_text())
SID = "a1b2c3d4e5f6"
OLDER, OTHER = "0123456789ab", "fedcba987654"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def golden(workspace: Path, **changes: Any) -> dict[str, Any]:
    text = (SEED / f"{SID}.json").read_text()
    prompt = (workspace / "templates" / "prompt.txt").read_text()
    return {**json.loads(text.replace("PROMPT_SHA256", sha(prompt))), **changes}


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


@pytest.fixture
def seed_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "datarobot" / "agent_assist"
    monkeypatch.setenv(seed_store.SEED_HOME_ENV, str(path))
    return path


def lay_out(seed_home: Path, workspace: Path, dir_name: str | None = None) -> Path:
    """The seed's store of the workspace: three sessions, a damaged file, a symlink, pointers."""
    sessions = seed_home / "projects" / (dir_name or project_dir_name(workspace)) / "sessions"
    write(sessions / f"{SID}.json", golden(workspace))
    older = golden(
        workspace,
        session_id=OLDER,
        updated_at="2026-03-01T09:00:00Z",
        summary="An older design.",
        decisions=[],
        recent_messages=[],
    )
    write(sessions / f"{OLDER}.json", older)
    write(sessions / "abcdefabcdef.json", '{"schema_version": 3, "session_id": "abcd')
    write(sessions / "bbbbbbbbbbbb.json", golden(workspace, session_id="cccccccccccc"))
    outside = write(seed_home.parent / "elsewhere.json", golden(workspace, session_id=OTHER))
    os.symlink(outside, sessions / f"{OTHER}.json")
    write(sessions / "active_4242.json", {"session_id": SID})
    write(sessions / "active_99.json", ["not", "a", "pointer"])
    write(sessions / "notes.json", {"anything": 1})
    # another project's session, in a directory of another name
    write(seed_home / "projects" / "other_12345678" / "sessions" / "999999999999.json", {})
    return sessions


def tree_state(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `root` (symlinks as their target's name): bytes and mtime."""
    found = {}
    for path in sorted(root.rglob("*")):
        st = os.lstat(path)
        if path.is_symlink():
            found[str(path)] = (os.readlink(path).encode(), st.st_mtime_ns)
        elif path.is_file():
            found[str(path)] = (path.read_bytes(), st.st_mtime_ns)
        else:
            found[str(path)] = (b"<dir>", st.st_mtime_ns)
    return found


def test_the_sessions_are_found_newest_first_and_the_bad_files_named(
    seed_home: Path, workspace: Path
) -> None:
    sessions = lay_out(seed_home, workspace)
    found = seed_store.scan(workspace)
    assert found.location.sessions_dir == sessions and found.note is None
    assert [s.session_id for s in found.sessions] == [SID, OLDER]
    assert [s.active for s in found.sessions] == [True, False]
    assert (found.sessions[0].title or "").startswith("User designed a customer support agent")
    skipped = {path.name: why for path, why in found.problems}
    assert set(skipped) == {"abcdefabcdef.json", "bbbbbbbbbbbb.json", f"{OTHER}.json"}
    assert "cannot be read" in skipped["abcdefabcdef.json"]
    assert "names session cccccccccccc" in skipped["bbbbbbbbbbbb.json"]
    assert "symlink" in skipped[f"{OTHER}.json"]
    assert all(str(sessions) in warning for warning in found.warnings)


def test_a_directory_of_the_same_name_is_taken_only_if_it_is_the_one(
    seed_home: Path, workspace: Path
) -> None:
    lay_out(seed_home, workspace, "ws_0badc0de")  # the seed's hash is not ours
    assert [s.session_id for s in seed_store.scan(workspace).sessions] == [SID, OLDER]
    (seed_home / "projects" / "ws_12345678" / "sessions").mkdir(parents=True)
    found = seed_store.scan(workspace)
    assert found.sessions == [] and found.note is not None
    assert "several projects" in found.note and "ws_0badc0de, ws_12345678" in found.note
    # named explicitly, as a project directory or its sessions/, either is used
    for given in ("ws_0badc0de", "ws_0badc0de/sessions"):
        chosen = seed_store.scan(workspace, seed_home / "projects" / given)
        assert [s.session_id for s in chosen.sessions] == [SID, OLDER]


def test_no_store_and_no_sessions_say_so(seed_home: Path, workspace: Path) -> None:
    assert seed_store.scan(workspace).note == f"no seed store at {seed_home}"
    (seed_home / "projects" / "other_12345678").mkdir(parents=True)
    assert seed_store.scan(workspace).note == (
        f"no sessions of this project in {seed_home / 'projects'}"
    )


def test_a_symlinked_project_directory_is_not_followed(
    seed_home: Path, workspace: Path, tmp_path: Path
) -> None:
    real = lay_out(seed_home, workspace, "real_11111111").parent
    (seed_home / "projects" / project_dir_name(workspace)).symlink_to(real)
    assert seed_store.scan(workspace).sessions == []


def test_import_copies_without_changing_the_seed_store(
    seed_home: Path, workspace: Path, manager: SessionManager
) -> None:
    lay_out(seed_home, workspace)
    before = tree_state(seed_home.parent)
    found = seed_store.scan(workspace)
    outcomes = [import_session(manager.listing, s) for s in found.sessions]
    assert [o.status for o in outcomes] == ["imported", "imported"]
    written = json.loads(manager.layout.snapshot_path(SID).read_text())
    jsonschema.validate(written, SCHEMA)
    seed = golden(workspace)
    for key in ("created_at", "updated_at", "summary", "decisions", "recent_messages", "phase"):
        assert written[key] == seed[key] or written[key].startswith(seed[key][:19]), key
    assert written["file_manifest"] == seed["file_manifest"]
    # again: nothing is overwritten, even a session changed since
    manager.layout.snapshot_path(OLDER).write_text(manager.layout.snapshot_path(OLDER).read_text())
    mine = manager.layout.snapshot_path(OLDER).read_bytes()
    again = [import_session(manager.listing, s) for s in seed_store.scan(workspace).sessions]
    assert [o.status for o in again] == ["already-imported", "already-imported"]
    assert manager.layout.snapshot_path(OLDER).read_bytes() == mine
    assert tree_state(seed_home.parent) == before


def test_an_imported_session_resumes_with_its_summary_and_drift(
    seed_home: Path, workspace: Path, manager: SessionManager
) -> None:
    lay_out(seed_home, workspace)
    seed = seed_store.scan(workspace).find(SID)
    assert seed is not None and import_session(manager.listing, seed).status == "imported"
    lc = make_lifecycle(manager)
    lc.resume(SID)
    assert "User designed a customer support agent" in lc.resume_context
    assert "- agent_spec.md: modified" in lc.resume_context
    assert lc.message_history()[:2] == [
        request("Write the spec for the support agent."),
        response("Saved agent_spec.md with three tools."),
    ]
    lc.close()


def test_the_first_launch_is_offered_the_seed_session_and_accepting_imports_it(
    seed_home: Path, workspace: Path, manager: SessionManager
) -> None:
    lay_out(seed_home, workspace)
    before = tree_state(seed_home.parent)
    lc = make_lifecycle(manager)
    previous = lc.find_previous()
    assert previous is not None and previous.session_id == SID and previous.source == "seed"
    assert previous.prompt() == (
        "Previous session found (last active: 2026-03-31 14:22 UTC, in the seed's store)\n"
        "\u201cUser designed a customer support agent with three tools. Model selection\u201d\n"
        "Resume previous session?"
    )
    assert not manager.exists(SID)  # offering copies nothing
    assert lc.resume_or_start(previous, accept=True) == "resumed"
    assert lc.session_id == SID
    assert "## Previous Session Summary" in lc.resume_context
    assert "Last active: 2026-03-31 14:22 UTC" in lc.resume_context  # the seed's save
    run_turn(lc, "go on", "done")
    lc.close()
    jsonschema.validate(json.loads(manager.layout.snapshot_path(SID).read_text()), SCHEMA)
    assert tree_state(seed_home.parent) == before
    # the next launch resumes ours, and the seed's is not offered again
    again = make_lifecycle(manager).find_previous()
    assert again is not None and again.session_id == SID and again.source is None


def test_a_declined_offer_is_not_made_again(
    seed_home: Path, workspace: Path, manager: SessionManager
) -> None:
    lay_out(seed_home, workspace)
    lc = make_lifecycle(manager, instance="one")
    previous = lc.find_previous()
    assert previous is not None and previous.source == "seed"
    assert lc.resume_or_start(previous, accept=False) == "new"
    lc.close()
    assert not manager.exists(SID)
    assert make_lifecycle(manager, instance="two").find_previous() is None


def test_no_offer_once_the_project_has_sessions_of_ours(
    seed_home: Path, workspace: Path, manager: SessionManager
) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    lc.close()
    lay_out(seed_home, workspace)
    previous = make_lifecycle(manager, instance="other").find_previous()
    assert previous is None


def test_an_imported_session_is_scrubbed_as_everything_we_write(
    seed_home: Path, workspace: Path, manager: SessionManager
) -> None:
    sessions = lay_out(seed_home, workspace)
    leaked = "set OPENAI_API_KEY=sk-proj-abcdef0123456789abcdef0123 then"
    path = write(sessions / f"{SID}.json", golden(workspace, summary=leaked))
    seed = seed_store.scan(workspace).find(SID)
    assert seed is not None and import_session(manager.listing, seed).status == "imported"
    written = manager.layout.snapshot_path(SID).read_text()
    assert "sk-proj-abcdef" not in written and "OPENAI_API_KEY=[REDACTED]" in written
    assert "sk-proj-abcdef" in path.read_text()  # the seed's file as it was
