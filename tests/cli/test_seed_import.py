"""`agent-assist sessions import` and `sessions list` with a seed's store laid out by hand."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from session.local.manager import SessionManager
from session.paths import project_dir_name

from .conftest import clean_env, run_cli

SEED = Path(__file__).resolve().parents[1] / "unit" / "seed"
SCHEMA = json.loads((SEED / "session_v3.schema.json").read_text())
SID, OLDER = "a1b2c3d4e5f6", "0123456789ab"


def golden(workspace: Path, **changes: Any) -> dict[str, Any]:
    prompt = (workspace / "templates" / "prompt.txt").read_bytes()
    text = (SEED / f"{SID}.json").read_text()
    data = json.loads(text.replace("PROMPT_SHA256", hashlib.sha256(prompt).hexdigest()))
    return {**data, **changes}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "templates").mkdir(parents=True)
    (root / "templates" / "prompt.txt").write_text("hello\n")
    (root / "agent_spec.md").write_text("# Spec\n")
    return root


@pytest.fixture
def seed_home(tmp_path: Path) -> Path:
    return tmp_path / "datarobot" / "agent_assist"


@pytest.fixture
def env(home: Path, seed_home: Path) -> dict[str, str]:
    return clean_env(home, {"AGENT_ASSIST_SEED_HOME": str(seed_home)})


@pytest.fixture
def seed_sessions(seed_home: Path, workspace: Path) -> Path:
    sessions = seed_home / "projects" / f"proj_{'9' * 8}" / "sessions"  # the seed's own hash
    sessions.mkdir(parents=True)
    (sessions / f"{SID}.json").write_text(json.dumps(golden(workspace), indent=2))
    older = golden(workspace, session_id=OLDER, updated_at="2026-03-01T09:00:00Z", summary="Old.")
    (sessions / f"{OLDER}.json").write_text(json.dumps(older))
    (sessions / "abcdefabcdef.json").write_text("{damaged")
    (sessions / "active_123.json").write_text(json.dumps({"session_id": SID}))
    return sessions


def snapshot_of(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p): (p.read_bytes() if p.is_file() else b"", os.lstat(p).st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def test_import_lists_then_imports_and_never_changes_the_seed_store(
    workspace: Path, home: Path, env: dict[str, str], seed_sessions: Path, seed_home: Path
) -> None:
    before = snapshot_of(seed_home)
    ws = ["--workspace", str(workspace)]
    listed = run_cli("sessions", "import", *ws, env=env)
    assert listed.returncode == 0, listed.stderr
    assert f"2 sessions of this project in the seed's store ({seed_sessions})" in listed.stdout
    assert "not imported" in listed.stdout and "damaged: abcdefabcdef.json" in listed.stdout
    assert "sessions import --all" in listed.stdout
    manager = SessionManager(workspace, home=home)
    assert not manager.exists(SID)

    table = run_cli("sessions", "list", *ws, env=env)
    assert table.returncode == 0 and "No sessions." not in table.stdout
    assert "source: seed store" in table.stdout and SID in table.stdout
    assert "2 sessions in the seed's store not imported yet" in table.stdout
    rows = json.loads(run_cli("sessions", "list", *ws, "--json", env=env).stdout)
    assert [(r["sessionId"], r.get("source")) for r in rows["sessions"]] == [
        (SID, "seed"),
        (OLDER, "seed"),
    ]
    assert rows["total"] == 0

    dry = run_cli("sessions", "import", SID[:6], "--dry-run", *ws, env=env)
    assert dry.returncode == 0 and "1 would be imported" in dry.stdout
    assert not manager.exists(SID)
    done = run_cli("sessions", "import", SID, *ws, env=env)
    assert done.returncode == 0, done.stderr
    assert "1 imported into" in done.stdout and "1 damaged (skipped)" in done.stdout
    jsonschema.validate(json.loads(manager.layout.snapshot_path(SID).read_text()), SCHEMA)

    result = run_cli("sessions", "import", "--all", "--json", *ws, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    statuses = {row["sessionId"]: row["status"] for row in report["sessions"]}
    assert statuses == {SID: "already-imported", OLDER: "imported"}
    assert report["sessions"][0]["active"] is True
    assert [Path(d["path"]).name for d in report["damaged"]] == ["abcdefabcdef.json"]
    ours = json.loads(run_cli("sessions", "list", *ws, "--json", env=env).stdout)
    assert [(r["sessionId"], r.get("source")) for r in ours["sessions"]] == [
        (SID, None),
        (OLDER, None),
    ]
    assert snapshot_of(seed_home) == before


def test_from_names_a_store_a_project_or_its_sessions(
    workspace: Path, env: dict[str, str], seed_sessions: Path, seed_home: Path
) -> None:
    env = {k: v for k, v in env.items() if k != "AGENT_ASSIST_SEED_HOME"}
    copy = seed_home.parent / "a-copy"
    copy.mkdir()
    for path in seed_sessions.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    for given in (seed_home, seed_sessions.parent, seed_sessions, copy):
        result = run_cli(
            "sessions", "import", "--from", str(given), "--json", "--workspace", str(workspace),
            env=env,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert [r["sessionId"] for r in json.loads(result.stdout)["sessions"]] == [SID, OLDER]


def test_nothing_found_is_said(
    workspace: Path, env: dict[str, str], seed_home: Path, tmp_path: Path
) -> None:
    ws = ["--workspace", str(workspace)]
    missing = run_cli("sessions", "import", "--all", *ws, env=env)
    assert missing.returncode == 1 and f"no seed store at {seed_home}" in missing.stderr
    (seed_home / "projects" / "other_12345678" / "sessions").mkdir(parents=True)
    none = run_cli("sessions", "import", *ws, env=env)
    assert none.returncode == 1 and "no sessions of this project in" in none.stderr
    for name in ("proj_11111111", "proj_22222222"):
        (seed_home / "projects" / name / "sessions").mkdir(parents=True)
    several = run_cli("sessions", "import", *ws, env=env)
    assert several.returncode == 1 and "several projects" in several.stderr
    # ours by name first: the exact `<name>_<hash8>` is taken
    (seed_home / "projects" / project_dir_name(workspace) / "sessions").mkdir(parents=True)
    exact = run_cli("sessions", "import", "--json", *ws, env=env)
    assert json.loads(exact.stdout)["from"].endswith(f"{project_dir_name(workspace)}/sessions")
    unknown = run_cli("sessions", "import", "ffffffffffff", *ws, env=env)
    assert unknown.returncode == 1  # nothing there to name
    assert run_cli("sessions", "list", *ws, env=env).stdout == "No sessions.\n"


def test_an_unknown_id_is_refused_and_an_unreachable_database_said(
    workspace: Path, env: dict[str, str], seed_sessions: Path
) -> None:
    ws = ["--workspace", str(workspace)]
    unknown = run_cli("sessions", "import", "ffffffffffff", *ws, env=env)
    assert (
        unknown.returncode == 1 and "no session ffffffffffff in the seed's store" in unknown.stderr
    )
    bad = run_cli("sessions", "import", "../x", *ws, env=env)
    assert bad.returncode == 2
    both = run_cli("sessions", "import", "--all", SID, *ws, env=env)
    assert both.returncode == 2
    unreachable = {**env, "AGENT_ASSIST_STORE": "postgresql://u@127.0.0.1:1/x"}
    pg = run_cli("sessions", "import", "--all", *ws, env=unreachable)
    assert pg.returncode == 1 and "127.0.0.1:1" in pg.stderr, pg.stderr
    assert "Traceback" not in pg.stderr


def test_a_seed_session_with_only_recent_messages_is_listed_by_its_first_prompt(
    workspace: Path, home: Path, env: dict[str, str], seed_home: Path
) -> None:
    sessions = seed_home / "projects" / f"proj_{'9' * 8}" / "sessions"
    sessions.mkdir(parents=True)
    bare = golden(workspace, summary=None, decisions=[])
    (sessions / f"{SID}.json").write_text(json.dumps(bare))
    ws = ["--workspace", str(workspace)]
    done = run_cli("sessions", "import", SID, *ws, env=env)
    assert done.returncode == 0, done.stderr
    listed = json.loads(run_cli("sessions", "list", "--json", *ws, env=env).stdout)
    prompt = bare["recent_messages"][0]["parts"][0]["content"].split("\n")[0]
    assert [(r["sessionId"], r["title"]) for r in listed["sessions"]] == [(SID, prompt[:80])]
    assert listed["total"] == 1  # not folded as a session without content
