"""`agent-assist sessions …` and `agent-assist doctor` against fixture stores, broken ones too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lsp_server import cli
from lsp_server.fake_model import FakeOpenAI
from session.derive.messages import text_message
from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from session.store.backend import SessionStore

from .conftest import clean_env, model_env, run_cli

OLD = datetime(2020, 1, 2, 3, 4, tzinfo=UTC)


def record_session(
    store: SessionStore, turns: list[tuple[str, str]], *, instance: str = "fixture"
) -> str:
    """Record a real session in `store` through the session core (no server, no model)."""
    lifecycle = SessionLifecycle(store, instance)
    lifecycle.start_fresh()
    for question, answer in turns:
        recorder = lifecycle.begin_turn(question)
        recorder.start_step([])
        recorder.chunk(answer)
        recorder.assistant_message(text_message(answer))
        recorder.end_step()
        recorder.end("completed")
    session_id = lifecycle.session_id
    lifecycle.close()
    return session_id


def make_session(
    workspace: Path, home: Path, turns: list[tuple[str, str]], *, instance: str = "fixture"
) -> str:
    """Write a real session in the local store of `workspace`."""
    return record_session(SessionManager(workspace, home=home), turns, instance=instance)


def age_session(manager: SessionManager, session_id: str, when: datetime = OLD) -> None:
    """Make a session look last used at `when` (snapshot and log mtime)."""
    path = manager.layout.snapshot_path(session_id)
    raw = json.loads(path.read_text())
    raw["updated_at"] = raw["created_at"] = when.isoformat()
    path.write_text(json.dumps(raw))
    stamp = when.timestamp()
    os.utime(manager.layout.log_path(session_id), (stamp, stamp))


def cli_json(*args: str, env: dict[str, str]) -> tuple[int, dict]:
    result = run_cli(*args, "--json", env=env)
    return result.returncode, json.loads(result.stdout) if result.stdout.strip() else {}


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    return clean_env(home)


@pytest.fixture
def other_project(tmp_path: Path) -> Path:
    root = tmp_path / "other"
    root.mkdir()
    return root


@pytest.fixture
def store(workspace: Path, home: Path, other_project: Path) -> dict[str, str]:
    """Two sessions here (one 2020-old), one old session in another project."""
    recent = make_session(workspace, home, [("hello there", "General Kenobi")])
    old = make_session(workspace, home, [("ancient question", "ancient answer")], instance="b")
    age_session(SessionManager(workspace, home=home), old)
    other = make_session(other_project, home, [("elsewhere", "other project")])
    age_session(SessionManager(other_project, home=home), other)
    return {"recent": recent, "old": old, "other": other}


# -- list / show / export --------------------------------------------------------------------


def test_list_this_project_and_all_projects(
    workspace: Path, env: dict[str, str], store: dict[str, str]
) -> None:
    code, data = cli_json("sessions", "list", "--workspace", str(workspace), env=env)
    assert code == 0
    ids = [row["sessionId"] for row in data["sessions"]]
    assert ids == [store["recent"], store["old"]]  # newest first, this project only
    assert data["sessions"][0]["title"] == "hello there"
    assert data["sessions"][0]["turns"] == 1 and data["sessions"][0]["inUse"] is False

    code, data = cli_json("sessions", "list", "--all-projects", env=env)
    assert code == 0
    assert {row["sessionId"] for row in data["sessions"]} == set(store.values())

    table = run_cli("sessions", "list", "--workspace", str(workspace), env=env)
    assert table.returncode == 0
    assert store["recent"] in table.stdout and "hello there" in table.stdout
    assert "--limit 0 for all" not in table.stdout  # everything fits in one page


def test_list_rows_are_newest_first_across_projects_with_utc_times(
    workspace: Path, home: Path, env: dict[str, str], other_project: Path
) -> None:
    recent = make_session(workspace, home, [("hello there", "General Kenobi")])
    old = make_session(workspace, home, [("ancient question", "ancient answer")], instance="b")
    age_session(SessionManager(workspace, home=home), old)
    other = make_session(other_project, home, [("elsewhere", "other project")])
    manager = SessionManager(other_project, home=home)
    age_session(manager, other, datetime(2020, 1, 3, 3, 4, 5, 250000, tzinfo=UTC))
    # A snapshot written at +09:00 (another machine's clock): shown in UTC.
    path = manager.layout.snapshot_path(other)
    raw = json.loads(path.read_text())
    raw["created_at"] = "2020-01-03T09:00:00+09:00"
    path.write_text(json.dumps(raw))

    code, data = cli_json("sessions", "list", "--all-projects", env=env)
    assert code == 0
    rows = data["sessions"]
    assert [row["sessionId"] for row in rows] == [recent, other, old]  # across projects
    assert rows[1]["createdAt"] == "2020-01-03T00:00:00Z"
    assert rows[1]["updatedAt"] == "2020-01-03T03:04:05.250000Z"
    assert rows[2]["updatedAt"] == rows[2]["createdAt"] == "2020-01-02T03:04:00Z"
    assert rows[1]["project"] != rows[0]["project"] == rows[2]["project"]
    newest = SessionManager(workspace, home=home).list_sessions()[0]
    assert datetime.fromisoformat(rows[0]["updatedAt"]) == newest.updated_at
    code, limited = cli_json("sessions", "list", "--all-projects", "--limit", "2", env=env)
    assert [row["sessionId"] for row in limited["sessions"]] == [recent, other]
    assert limited["total"] == 3
    table = run_cli("sessions", "list", "--all-projects", env=env).stdout
    assert "2020-01-03 03:04" in table and "2020-01-02 03:04" in table


def test_list_pages_with_limit(workspace: Path, env: dict[str, str], store: dict[str, str]) -> None:
    code, data = cli_json(
        "sessions", "list", "--workspace", str(workspace), "--limit", "1", env=env
    )
    assert code == 0
    assert [row["sessionId"] for row in data["sessions"]] == [store["recent"]]
    assert data["total"] == 2
    table = run_cli("sessions", "list", "--workspace", str(workspace), "--limit", "1", env=env)
    assert table.returncode == 0, table.stderr
    assert store["recent"] in table.stdout and store["old"] not in table.stdout
    assert "1 of 2 sessions (--limit 0 for all, --offset 1 for older)" in table.stdout
    # the next page: the older one, said to be the last
    code, data = cli_json(
        "sessions", "list", "--workspace", str(workspace), "--limit", "1", "--offset", "1", env=env
    )
    assert code == 0 and data["total"] == 2
    assert [row["sessionId"] for row in data["sessions"]] == [store["old"]]
    table = run_cli(
        "sessions", "list", "--workspace", str(workspace), "--limit", "1", "--offset", "1", env=env
    )
    assert store["old"] in table.stdout and store["recent"] not in table.stdout
    assert table.stdout.rstrip().endswith("2–2 of 2 sessions")
    past = run_cli("sessions", "list", "--workspace", str(workspace), "--offset", "5", env=env)
    assert past.returncode == 0 and past.stdout == "No sessions past the newest 2.\n"
    wrong = run_cli("sessions", "list", "--workspace", str(workspace), "--offset", "-1", env=env)
    assert wrong.returncode == 2 and "--offset must be 0 or more" in wrong.stderr
    # across projects: pages of one, one after the other, are the whole list in its order
    _, whole = cli_json("sessions", "list", "--all-projects", env=env)
    paged = []
    for offset in range(4):
        code, page = cli_json(
            "sessions", "list", "--all-projects", "--limit", "1", "--offset", str(offset), env=env
        )
        assert code == 0 and page["total"] == 3
        paged += page["sessions"]
    assert paged == whole["sessions"] and len(paged) == 3
    code, data = cli_json(
        "sessions", "list", "--workspace", str(workspace), "--limit", "0", env=env
    )
    assert [row["sessionId"] for row in data["sessions"]] == [store["recent"], store["old"]]


@pytest.mark.parametrize("output", ["--json", "table"])
def test_a_listing_loads_no_model(
    workspace: Path, home: Path, env: dict[str, str], store: dict[str, str], output: str
) -> None:
    """`sessions list` loads none of the modules a fast start avoids, rows current or not."""
    listing = [sys.executable, "-m", "lsp_server.cli", "sessions", "list"]
    listing += ["--workspace", str(workspace)] + (["--json"] if output == "--json" else [])
    probe = (
        "import runpy, sys\n"
        f"sys.argv = {listing[2:]!r}\n"
        "try:\n"
        "    runpy.run_module('lsp_server.cli', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('pydantic', 'asyncio', 'rich', 'socket', 'secrets')\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in heavy)\n"
        "print('LOADED', loaded, file=sys.stderr)\n"
    )
    first = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "LOADED []" in first.stderr, first.stderr  # every row built from its snapshot
    again = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    if output == "--json":
        rows = {r["sessionId"] for r in json.loads(again.stdout)["sessions"]}
        assert rows == {store["recent"], store["old"]}
    else:
        assert store["recent"] in again.stdout and store["old"] in again.stdout
    assert "LOADED []" in again.stderr, again.stderr  # the rows were current
    # A session saved since (its snapshot replaced, as a save does): its row is rebuilt.
    path = SessionManager(workspace, home=home).layout.snapshot_path(store["old"])
    raw = json.loads(path.read_text())
    raw["title"] = "renamed since"
    path.with_name("replacement").write_text(json.dumps(raw))
    os.replace(path.with_name("replacement"), path)
    third = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert "renamed since" in third.stdout and "LOADED []" in third.stderr, third.stderr


def test_show_prints_the_transcript(
    workspace: Path, env: dict[str, str], store: dict[str, str]
) -> None:
    result = run_cli(
        "sessions", "show", store["recent"][:6], "--workspace", str(workspace), env=env
    )
    assert result.returncode == 0, result.stderr
    assert "You (turn 1): hello there" in result.stdout
    assert "Assistant: General Kenobi" in result.stdout

    code, data = cli_json(
        "sessions", "show", store["recent"], "--workspace", str(workspace), env=env
    )
    assert code == 0
    assert data["items"][0] == {"turn": 1, "role": "user", "text": "hello there"}
    assert data["problems"] == [] and data["readOnly"] is None


def test_export_markdown_and_json(
    workspace: Path, home: Path, env: dict[str, str], store: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "export.md"
    result = run_cli(
        "sessions", "export", store["recent"], "--format", "md", "-o", str(out),
        "--workspace", str(workspace), env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert text.startswith(f"# Session {store['recent']}: hello there")
    assert "## Turn 1" in text and "**You:**\n\nhello there" in text
    assert "**Assistant:**\n\nGeneral Kenobi" in text

    result = run_cli(
        "sessions", "export", store["recent"], "--format", "json", "--workspace", str(workspace),
        env=env,
    )  # fmt: skip
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert data["session"]["sessionId"] == store["recent"]
    assert data["events"][0]["type"] == "session/start"
    logged = SessionManager(workspace, home=home).read_events(store["recent"]).events
    assert [e["seq"] for e in data["events"]] == [e.seq for e in logged]
    assert [item["role"] for item in data["transcript"]] == ["user", "assistant"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["sessions", "show", "abcdefabcdef"], 1),  # no such session
        (["sessions", "show", "not-an-id"], 2),
        (["sessions", "export", "abcdefabcdef", "--format", "xml"], 2),
        (["sessions", "prune", "--older-than", "ninety days"], 2),
        (["sessions"], 2),
    ],
)
def test_exit_codes_for_problems_and_usage(
    workspace: Path, env: dict[str, str], store: dict[str, str], args: list[str], code: int
) -> None:
    result = run_cli(*args, "--workspace", str(workspace), env=env)
    assert result.returncode == code, (result.stdout, result.stderr)


# -- rm / prune ------------------------------------------------------------------------------


def test_rm_asks_and_refuses_without_a_yes(
    workspace: Path, home: Path, env: dict[str, str], store: dict[str, str]
) -> None:
    manager = SessionManager(workspace, home=home)
    session_id = store["recent"]
    result = run_cli(
        "sessions", "rm", session_id, "--workspace", str(workspace), env=env, input="n\n"
    )
    assert result.returncode == 1
    assert "[y/N]" in result.stderr and "nothing was deleted" in result.stderr
    assert manager.exists(session_id)

    result = run_cli(
        "sessions", "rm", session_id, "--workspace", str(workspace), env=env, input="y\n"
    )
    assert result.returncode == 0, result.stderr
    assert not manager.exists(session_id)
    assert manager.read_pointer("fixture") is None  # its pointer went with it
    assert manager.exists(store["old"])


def test_rm_refuses_a_session_in_use(
    workspace: Path, home: Path, env: dict[str, str], store: dict[str, str]
) -> None:
    manager = SessionManager(workspace, home=home)
    lock = manager.acquire_lock(store["recent"])  # as a running server holds it
    try:
        result = run_cli(
            "sessions", "rm", store["recent"], "--yes", "--workspace", str(workspace), env=env
        )
        assert result.returncode == 1
        assert "in use" in result.stderr
        assert manager.exists(store["recent"])
        code, data = cli_json("sessions", "list", "--workspace", str(workspace), env=env)
        assert {r["sessionId"]: r["inUse"] for r in data["sessions"]}[store["recent"]] is True
    finally:
        lock.release()
    result = run_cli(
        "sessions", "rm", store["recent"], "-y", "--workspace", str(workspace), env=env
    )
    assert result.returncode == 0
    assert not manager.exists(store["recent"])


def test_prune_dry_run_then_delete_this_project_only(
    workspace: Path, home: Path, other_project: Path, env: dict[str, str], store: dict[str, str]
) -> None:
    manager = SessionManager(workspace, home=home)
    code, data = cli_json(
        "sessions", "prune", "--older-than", "90d", "--dry-run", "--workspace", str(workspace),
        env=env,
    )  # fmt: skip
    assert code == 0
    assert data["candidates"] == [store["old"]] and data["deleted"] == []
    assert manager.exists(store["old"])

    result = run_cli(
        "sessions", "prune", "--older-than", "90d", "--workspace", str(workspace), env=env, input=""
    )
    assert result.returncode == 1  # no answer: not confirmed
    assert manager.exists(store["old"])

    code, data = cli_json(
        "sessions", "prune", "--older-than", "90d", "--yes", "--workspace", str(workspace), env=env
    )
    assert code == 0 and data["deleted"] == [store["old"]]
    assert not manager.exists(store["old"]) and manager.exists(store["recent"])
    assert SessionManager(other_project, home=home).exists(store["other"])  # never touched


# -- search / reindex ------------------------------------------------------------------------


def test_search_and_reindex(workspace: Path, env: dict[str, str], store: dict[str, str]) -> None:
    code, data = cli_json("sessions", "search", "Kenobi", "--workspace", str(workspace), env=env)
    assert code == 0
    assert [r["sessionId"] for r in data["results"]] == [store["recent"]]
    assert "[Kenobi]" in data["results"][0]["snippet"]

    code, data = cli_json("sessions", "search", "elsewhere", "--all-projects", env=env)
    assert code == 0 and [r["sessionId"] for r in data["results"]] == [store["other"]]

    code, data = cli_json("sessions", "reindex", "--workspace", str(workspace), env=env)
    assert code == 0 and data["projects"][0]["sessions"] == 2


def test_search_without_a_match_repeats_a_long_query_cut(
    workspace: Path, env: dict[str, str], store: dict[str, str]
) -> None:
    query = "nowhere " * 1_000
    result = run_cli("sessions", "search", query, "--workspace", str(workspace), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"No matches for '{query[:59]}…' (8,000 characters)."


def test_search_says_so_when_the_build_has_no_search(
    workspace: Path,
    home: Path,
    store: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AGENT_ASSIST_HOME", str(home))
    monkeypatch.setitem(sys.modules, "session.search", None)  # import fails
    code = cli.main(["sessions", "search", "Kenobi", "--workspace", str(workspace)])
    assert code == 1
    assert "search is not available in this build" in capsys.readouterr().err
    assert cli.main(["sessions", "reindex", "--workspace", str(workspace)]) == 1


# -- doctor ----------------------------------------------------------------------------------


def test_doctor_healthy_store(
    workspace: Path, home: Path, env: dict[str, str], store: dict[str, str]
) -> None:
    code, data = cli_json("doctor", env=env)
    assert code == 0, data
    assert data["ok"] is True and data["problems"] == []
    assert data["root"]["path"] == str(home) and data["root"]["writable"] is True
    counts = {p["project"].rsplit("_", 1)[0]: len(p["sessions"]) for p in data["projects"]}
    assert counts == {"project": 2, "other": 1}
    assert data["model"] == {"name": None, "baseUrl": None, "apiKey": "unset", "configured": False}
    human = run_cli("doctor", env=env)
    assert human.returncode == 0 and "No problems found." in human.stdout


def test_doctor_on_a_missing_store(tmp_path: Path) -> None:
    code, data = cli_json("doctor", env=clean_env(tmp_path / "nothing-here"))
    assert code == 0 and data["root"]["exists"] is False
    assert not (tmp_path / "nothing-here").exists()  # looking never creates the store


def test_doctor_reports_a_symlinked_projects_directory(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir(mode=0o700)
    elsewhere.mkdir()
    (home / "projects").symlink_to(elsewhere, target_is_directory=True)
    code, data = cli_json("doctor", env=clean_env(home))
    assert code == 1
    assert any("projects is a symlink" in p for p in data["problems"]), data["problems"]
    assert list(elsewhere.iterdir()) == []  # nothing written through it


def test_doctor_finds_a_torn_log_tail(
    workspace: Path, home: Path, env: dict[str, str], store: dict[str, str]
) -> None:
    log = SessionManager(workspace, home=home).layout.log_path(store["recent"])
    with log.open("ab") as fh:
        fh.write(b'{"seq": 99, "ts": "2026-')  # the process died mid-write
    code, data = cli_json("doctor", env=env)
    assert code == 1
    assert any("incomplete last line" in p and store["recent"] in p for p in data["problems"])
    human = run_cli("doctor", env=env)
    assert human.returncode == 1 and "1 problem found." in human.stdout
    # The transcript is still readable up to the torn line.
    shown = run_cli("sessions", "show", store["recent"], "--workspace", str(workspace), env=env)
    assert shown.returncode == 0 and "General Kenobi" in shown.stdout


def test_doctor_finds_a_bad_line_and_says_read_only(
    workspace: Path, home: Path, env: dict[str, str], store: dict[str, str]
) -> None:
    log = SessionManager(workspace, home=home).layout.log_path(store["recent"])
    lines = log.read_bytes().splitlines(keepends=True)
    lines.insert(2, b"this is not json\n")
    log.write_bytes(b"".join(lines))
    code, data = cli_json("doctor", env=env)
    assert code == 1
    rows = {s["sessionId"]: s for p in data["projects"] for s in p["sessions"]}
    assert "line 3" in rows[store["recent"]]["readOnly"]
    assert any("opens read-only" in p for p in data["problems"])


def test_doctor_finds_a_tampered_pointer(
    workspace: Path, home: Path, env: dict[str, str], store: dict[str, str]
) -> None:
    pointer = SessionManager(workspace, home=home).layout.pointer_path("fixture")
    pointer.write_text('{"sessionId": "../../../etc/passwd"}')
    code, data = cli_json("doctor", env=env)
    assert code == 1
    assert any("active_fixture.json" in p and "ignored" in p for p in data["problems"])


def test_doctor_finds_a_future_schema_snapshot(
    workspace: Path, home: Path, env: dict[str, str], store: dict[str, str]
) -> None:
    manager = SessionManager(workspace, home=home)
    path = manager.layout.snapshot_path(store["recent"])
    raw = json.loads(path.read_text())
    raw["schema_version"] = 99
    path.write_text(json.dumps(raw))
    code, data = cli_json("doctor", env=env)
    assert code == 1
    assert any("read-only" in p and store["recent"] in p for p in data["problems"])
    code, shown = cli_json(
        "sessions", "show", store["recent"], "--workspace", str(workspace), env=env
    )
    assert code == 0 and shown["readOnly"] and "schema" in shown["readOnly"]


def test_doctor_round_trips_to_the_model_and_never_prints_the_key(
    home: Path, store: dict[str, str], fake: FakeOpenAI
) -> None:
    env = clean_env(home, model_env(fake))
    code, data = cli_json("doctor", env=env)
    assert code == 0, data
    assert data["model"]["apiKey"] == "set" and data["model"]["roundTrip"]["ok"] is True
    assert len(fake.requests) == 1
    human = run_cli("doctor", env=env)
    assert "sk-test-KEY" not in human.stdout + human.stderr
    assert "round trip answered" in human.stdout

    fake.add({"error": 500, "message": "the model is down"})
    code, data = cli_json("doctor", env=env)
    assert code == 1
    assert any("round trip failed" in p for p in data["problems"])

    before = len(fake.requests)
    code, data = cli_json("doctor", "--offline", env=env)
    assert code == 0 and "roundTrip" not in data["model"]
    assert len(fake.requests) == before


def test_a_command_run_in_process_leaves_the_session_log_level_as_it_was() -> None:
    import argparse
    import logging

    from lsp_server.admin.running import run_command

    logger = logging.getLogger("session")
    before = logger.level
    seen: list[int] = []
    code = run_command(
        argparse.Namespace(verbose=False), lambda args: seen.append(logger.level) or 0
    )
    assert seen == [logging.ERROR]  # quiet while the command runs (it reports damage itself)
    assert code == 0 and logger.level == before


@pytest.mark.parametrize("how", ["rm", "prune"])
def test_deleting_removes_the_blobs_only_its_checkpoints_used(
    workspace: Path, home: Path, env: dict[str, str], store: dict[str, str], how: str
) -> None:
    import hashlib
    import os

    from session.local.checkpoint_files import CheckpointFiles

    manager = SessionManager(workspace, home=home)
    checkpoints = manager.checkpoint_store()
    (workspace / "only-recent.txt").write_text("a file only one checkpoint has\n")

    def digest(name: str) -> str:
        return hashlib.sha256((workspace / name).read_bytes()).hexdigest()

    doomed, kept = (
        (store["recent"], store["old"]) if how == "rm" else (store["old"], store["recent"])
    )
    shared = {"agent_spec.md": digest("agent_spec.md")}
    checkpoints.create(kept, 1, seq=0, turn=0, title="kept", files=shared)
    own = {**shared, "only-recent.txt": digest("only-recent.txt")}
    checkpoints.create(doomed, 1, seq=0, turn=0, title="deleted", files=own)
    for blob in manager.layout.blobs_dir.rglob("*"):
        if blob.is_file():
            os.utime(blob, (1, 1))  # long written: not a record being written right now
    where = ["--yes", "--workspace", str(workspace)]
    if how == "rm":
        result = run_cli("sessions", "rm", doomed, *where, env=env)
    else:  # the old session is the one past 90 days
        result = run_cli("sessions", "prune", "--older-than", "90d", *where, env=env)
    assert result.returncode == 0, result.stderr
    assert not manager.exists(doomed) and manager.exists(kept)
    assert not CheckpointFiles(manager.layout).blob_path(digest("only-recent.txt")).exists()
    assert CheckpointFiles(manager.layout).blob_path(digest("agent_spec.md")).exists()  # still used


def test_search_filters_and_shows_step_and_time(
    workspace: Path, env: dict[str, str], store: dict[str, str]
) -> None:
    args = ("sessions", "search", "Kenobi", "--workspace", str(workspace))
    code, data = cli_json(*args, env=env)
    (hit,) = data["results"]
    assert hit["type"] == "assistant/message" and hit["step"] == 1 and hit["turn"] == 1
    when = datetime.fromisoformat(hit["ts"])
    assert when.tzinfo is not None
    code, data = cli_json(*args, "--kind", "user", env=env)
    assert code == 0 and data["results"] == []
    code, data = cli_json(*args, "--kind", "assistant", "--since", "2020-01-01", env=env)
    assert [r["sessionId"] for r in data["results"]] == [store["recent"]]
    after = (when + timedelta(seconds=1)).isoformat()
    code, data = cli_json(*args, "--since", after, env=env)
    assert code == 0 and data["results"] == []
    code, data = cli_json(*args, "--tool", "read_file", env=env)
    assert data["results"] == []
    table = run_cli(*args, "--until", after, env=env)
    assert table.returncode == 0 and "step" in table.stdout and "time" in table.stdout
    assert when.astimezone().strftime("%Y-%m-%d %H:%M:%S") in table.stdout
    bad = run_cli(*args, "--since", "last tuesday", env=env)
    assert bad.returncode == 2 and "--since: 'last tuesday' is not a time" in bad.stderr
    bad = run_cli(*args, "--kind", "tools", env=env)
    assert bad.returncode == 2 and "one of user, assistant, tool-call" in bad.stderr
