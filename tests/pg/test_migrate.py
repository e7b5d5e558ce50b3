"""`agent-assist sessions migrate`: local files into PostgreSQL and back, exactly and verified.

Against the real server (`AGENT_ASSIST_TEST_PG`); each test has a schema of its own, which
the command is pointed at with its hidden `--schema`.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from session.errors import SessionLockedError
from session.events import Persistence
from session.local.checkpoint_files import CheckpointFiles
from session.local.importing import STAGED_SUFFIX, LocalTransferStore
from session.local.manager import SessionManager
from session.pg import PgStore
from session.pg.backend import PgSessionStore
from session.pg.events import EventDraft
from session.pg.importing import PgTransferStore, schema_exists
from session.transfer import TransferProgress, event_digest, normalised, transfer
from tests.cli.conftest import REPO, clean_env, run_cli
from tests.pg.conftest import connect

TRACKED = b"print('tracked file')\n"


def prompt(text: str) -> dict[str, Any]:
    return {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": text}]}


def answer(text: str) -> dict[str, Any]:
    return {"kind": "response", "parts": [{"part_kind": "text", "content": text}]}


def make_sessions(workspace: Path, home: Path, *, chunks: int = 4) -> list[str]:
    """Three closed sessions: NULs, -0.0 and nested keys; one checkpoint; one metadata-only."""
    (workspace / "templates").mkdir(parents=True, exist_ok=True)
    (workspace / "agent_spec.md").write_text("# spec\n")
    (workspace / "templates" / "a.py").write_bytes(TRACKED)
    manager = SessionManager(workspace, home=home)
    ids = []
    modes: tuple[Persistence, ...] = ("full", "full", "metadata")
    for k, persistence in enumerate(modes):
        session = manager.create_session(instance_id="win-1", persistence=persistence)
        for turn in (1, 2):
            text = f"q{k}.{turn} \x00 ünï 日本"
            session.append("turn/start", {"input": text}, turn=turn)
            session.append("step/start", {"messages": [prompt(text)]}, turn=turn, step=1)
            for n in range(chunks):
                session.append("assistant/chunk", {"delta": f"part {n} "}, turn=turn, step=1)
            reply = answer(f"answer {k}.{turn}")
            session.append("assistant/message", {"message": reply}, turn=turn, step=1)
            usage = {"input_tokens": 3, "zero": -0.0, "nested": {"b": 1, "a": [0.1, "\x00"]}}
            session.append("step/end", {"usage": usage}, turn=turn, step=1)
            session.append("turn/end", {"reason": "completed"}, turn=turn)
        if k == 0:
            files = {
                "agent_spec.md": hashlib.sha256(b"# spec\n").hexdigest(),
                "templates/a.py": hashlib.sha256(TRACKED).hexdigest(),
            }
            saved = session.append("session/save", {"checkpoint": 1, "manifest": files})
            manager.checkpoint_store().create(
                session.session_id, 1, seq=saved.seq, turn=2, title="first", files=files
            )
        manager.write_snapshot(session)
        session.close()
        ids.append(session.session_id)
    return sorted(ids)


def tree(root: Path) -> dict[str, str]:
    """Every file under `root` with the SHA-256 of its bytes."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def contents(store: Any, session_id: str) -> dict[str, Any]:
    """A session as values: events, snapshot (but its byte offset), checkpoints, blobs."""
    snapshot = store.snapshot(session_id)
    dumped = snapshot.model_dump(mode="json") if snapshot is not None else None
    if dumped is not None:
        dumped.pop("log_offset")
    records = store.checkpoints(session_id)
    digests = sorted({d for r in records for d in r.files.values()})
    value: dict[str, Any] = normalised(
        {
            "events": store.raw_events(session_id),
            "snapshot": dumped,
            "checkpoints": [r.model_dump(mode="json") for r in records],
            "blobs": {d: hashlib.sha256(store.read_blob(d) or b"").hexdigest() for d in digests},
        }
    )
    return value


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def pg_side(pg_dsn: str, schema: str, workspace: Path) -> Iterator[PgTransferStore]:
    pg = PgStore.open(pg_dsn, schema=schema, pool_size=2)
    store = PgTransferStore(PgSessionStore(pg, workspace))
    yield store
    store.pg.close()


def migrate(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("sessions", "migrate", *args, env=clean_env(home))


def pg_rows(dsn: str, schema: str) -> list[tuple[Any, ...]]:
    """What the source database holds, to check that reading it changed nothing."""
    with connect(dsn) as conn:
        return conn.execute(
            f"SELECT s.session_id, s.next_seq, s.updated_at, s.snapshot_seq, s.snapshot,"
            f" (SELECT md5(string_agg(e.event::text, ',' ORDER BY e.seq))"
            f'  FROM "{schema}".events e WHERE e.session_id = s.session_id)'
            f' FROM "{schema}".sessions s ORDER BY s.session_id'
        ).fetchall()


def test_round_trip_local_to_postgresql_to_a_fresh_local_home(
    pg_dsn: str, schema: str, workspace: Path, tmp_path: Path
) -> None:
    home, fresh = tmp_path / "home", tmp_path / "fresh"
    ids = make_sessions(workspace, home)
    before = tree(home)
    out = migrate(home, "--to", pg_dsn, "--project", str(workspace), "--schema", schema)
    assert out.returncode == 0, out.stderr
    assert "3 copied" in out.stdout and "0 already there" in out.stdout
    assert tree(home) == before  # the source is only read
    for session_id in ids:
        assert f"{session_id}: copied" in out.stderr and "verified" in out.stderr

    rows = pg_rows(pg_dsn, schema)
    out = migrate(fresh, "--from", pg_dsn, "--project", str(workspace), "--schema", schema)
    assert out.returncode == 0, out.stderr
    assert "3 copied" in out.stdout
    assert pg_rows(pg_dsn, schema) == rows  # nor is the database, as a source

    original = LocalTransferStore(SessionManager(workspace, home=home))
    copied = LocalTransferStore(SessionManager(workspace, home=fresh))
    assert copied.session_ids() == ids
    for session_id in ids:
        assert contents(copied, session_id) == contents(original, session_id)
    assert (
        contents(copied, ids[0])["snapshot"]["recent_messages"]
        or contents(copied, ids[1])["snapshot"]["recent_messages"]
    )
    events = original.raw_events(ids[0])
    assert event_digest(events) == event_digest(copied.raw_events(ids[0]))
    assert not list((fresh / "projects").rglob(f"*{STAGED_SUFFIX}"))

    # The copy is a working local session: it opens for writing and its checkpoint restores.
    manager = SessionManager(workspace, home=fresh)
    with_checkpoint = next(i for i in ids if copied.checkpoints(i))
    session = manager.open_session(with_checkpoint)
    try:
        assert session.read_only_reason is None
        assert session.state.turns == 2
        assert session.next_seq == len(copied.raw_events(with_checkpoint))
        assert [item.message["kind"] for item in session.history.items][:2] == [
            "request",
            "response",
        ]
        session.append("turn/start", {"input": "one more"}, turn=3)
        session.append("turn/end", {"reason": "completed"}, turn=3)
    finally:
        session.close()
    (workspace / "templates" / "a.py").write_text("changed\n")
    record = manager.checkpoints(with_checkpoint)[0]
    plan = manager.checkpoint_store().plan_restore(record, {})
    assert dict(plan.writes)["templates/a.py"] == TRACKED


def test_a_rerun_copies_nothing_and_says_so(
    pg_dsn: str, schema: str, workspace: Path, tmp_path: Path
) -> None:
    home, fresh = tmp_path / "home", tmp_path / "fresh"
    make_sessions(workspace, home)
    args = ("--project", str(workspace), "--schema", schema)
    assert migrate(home, "--to", pg_dsn, *args).returncode == 0
    rows = pg_rows(pg_dsn, schema)
    again = migrate(home, "--to", pg_dsn, *args)
    assert again.returncode == 0, again.stderr
    assert "0 copied, 3 already there; 0 events" in again.stdout
    assert pg_rows(pg_dsn, schema) == rows

    assert migrate(fresh, "--from", pg_dsn, *args).returncode == 0
    files = tree(fresh)
    again = migrate(fresh, "--from", pg_dsn, *args, "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["copied"], report["alreadyThere"], report["events"]) == (0, 3, 0)
    assert {s["status"] for s in report["sessions"]} == {"complete"}
    assert all(len(s["sha256"]) == 64 for s in report["sessions"])
    assert again.stderr == ""  # --json is quiet
    assert tree(fresh) == files


def test_a_session_continued_in_the_target_is_already_there(
    pg_dsn: str, schema: str, pg_side: PgTransferStore, workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    ids = make_sessions(workspace, home)
    args = ("--to", pg_dsn, "--project", str(workspace), "--schema", schema, "--json")
    assert migrate(home, *args).returncode == 0
    snapshot = pg_side.pg.snapshot(ids[0])
    with pg_side.pg.acquire_writer(ids[0]) as writer:  # a server went on with it there
        writer.append([EventDraft("turn/start", {"input": "more"}, turn=3)])
        writer.append([EventDraft("turn/end", {"reason": "completed"}, turn=3)])
    out = migrate(home, *args)
    assert out.returncode == 0, out.stdout
    first = json.loads(out.stdout)["sessions"][0]
    assert first["status"] == "complete" and "2 more event(s)" in first["message"]
    assert pg_side.pg.snapshot(ids[0]) == snapshot  # not replaced by the source's older one


def test_a_dry_run_says_what_it_would_copy_and_writes_nothing(
    pg_dsn: str, schema: str, workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    make_sessions(workspace, home)
    args = ("--to", pg_dsn, "--project", str(workspace), "--schema", schema)
    out = migrate(home, *args, "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "3 would be copied" in out.stdout and "nothing was written" in out.stdout
    assert not schema_exists(pg_dsn, schema)  # not even the schema is created
    assert migrate(home, *args).returncode == 0
    out = migrate(home, *args, "--dry-run")
    assert "0 would be copied, 3 already there; 0 events" in out.stdout


class CopyStoppedError(Exception):
    """Stands for the process being stopped mid-copy."""


def stop_after(events: int) -> Any:
    def progress(step: TransferProgress) -> None:
        if step.result is None and step.copied >= events:
            raise CopyStoppedError

    return progress


def test_an_interrupted_copy_into_postgresql_is_resumed(
    pg_side: PgTransferStore, workspace: Path, tmp_path: Path
) -> None:
    local = LocalTransferStore(SessionManager(workspace, home=tmp_path / "home"))
    ids = make_sessions(workspace, local.manager.home)
    with pytest.raises(CopyStoppedError):
        transfer(local, pg_side, ids, batch=4, progress=stop_after(8))
    assert len(pg_side.raw_events(ids[0])) == 8  # whole batches, in order
    results = transfer(local, pg_side, ids, batch=4)
    assert [(r.status, r.already) for r in results] == [("copied", 8), ("copied", 0)] + [
        ("copied", 0)
    ]
    for session_id in ids:
        assert pg_side.raw_events(session_id) != []
        assert contents(pg_side, session_id)["events"] == contents(local, session_id)["events"]
    assert [r.status for r in transfer(local, pg_side, ids)] == ["complete"] * 3


def test_an_interrupted_copy_into_the_local_store_is_hidden_then_resumed(
    pg_side: PgTransferStore, workspace: Path, tmp_path: Path
) -> None:
    source = LocalTransferStore(SessionManager(workspace, home=tmp_path / "home"))
    ids = make_sessions(workspace, source.manager.home)
    transfer(source, pg_side, ids)
    local = LocalTransferStore(SessionManager(workspace, home=tmp_path / "fresh"))
    with pytest.raises(CopyStoppedError):
        transfer(pg_side, local, ids, batch=4, progress=stop_after(8))
    staged = local.manager.layout.sessions_dir / f"{ids[0]}{STAGED_SUFFIX}"
    assert staged.is_file() and not local.manager.layout.log_path(ids[0]).exists()
    assert local.session_ids() == []  # a half-copied session is not a session yet
    with staged.open("ab") as fh:  # and the process died mid-line
        fh.write(b'{"seq": 8, "ts": "2026-')
    results = transfer(pg_side, local, ids, batch=4)
    assert [(r.status, r.already) for r in results][0] == ("copied", 8)
    assert not staged.exists()
    for session_id in ids:
        assert contents(local, session_id) == contents(source, session_id)


@pytest.mark.parametrize("direction", ["--to", "--from"])
def test_a_killed_migrate_is_finished_by_the_rerun(
    direction: str, pg_dsn: str, pg_side: PgTransferStore, workspace: Path, tmp_path: Path
) -> None:
    home, fresh = tmp_path / "home", tmp_path / "fresh"
    ids = make_sessions(workspace, home, chunks=400)
    source = LocalTransferStore(SessionManager(workspace, home=home))
    if direction == "--from":
        transfer(source, pg_side, ids)
    run_home = home if direction == "--to" else fresh
    args = [direction, pg_dsn, "--project", str(workspace), "--schema", pg_side.pg.schema]
    process = subprocess.Popen(
        [sys.executable, "-m", "lsp_server.cli", "sessions", "migrate", *args, "--batch-size=20"],
        env=clean_env(run_home),
        cwd=str(REPO),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if "events copied" in line:  # mid-session, some batches written
            os.kill(process.pid, signal.SIGKILL)
            break
    assert process.wait(timeout=60) == -signal.SIGKILL
    process.stderr.close()
    out = migrate(run_home, *args, "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["sessions"][0]["alreadyThere"] > 0
    assert {s["status"] for s in report["sessions"]} == {"copied"}
    target = (
        pg_side
        if direction == "--to"
        else LocalTransferStore(SessionManager(workspace, home=fresh))
    )
    for session_id in ids:
        assert contents(target, session_id)["events"] == contents(source, session_id)["events"]


def test_a_tampered_target_fails_verification(
    pg_dsn: str, schema: str, workspace: Path, tmp_path: Path
) -> None:
    home, fresh = tmp_path / "home", tmp_path / "fresh"
    ids = make_sessions(workspace, home)
    args = ("--project", str(workspace), "--schema", schema)
    assert migrate(home, "--to", pg_dsn, *args).returncode == 0
    with connect(pg_dsn) as conn:
        conn.execute(f'ALTER TABLE "{schema}".events DISABLE TRIGGER events_are_append_only')
        conn.execute(
            f"UPDATE \"{schema}\".events SET event = jsonb_set(event, '{{data,delta}}',"
            " '\"tampered\"') WHERE session_id = %s AND seq = 4",
            (ids[1],),
        )
    out = migrate(home, "--to", pg_dsn, *args)
    assert out.returncode == 1
    assert (
        f"session {ids[1]}: the target's events differ from the source's from seq 4" in out.stderr
    )
    assert "2 already there, 1 failed" in out.stdout

    # The other way: a local copy whose log was edited.
    assert migrate(fresh, "--from", pg_dsn, *args).returncode == 0  # as the database has it
    manager = SessionManager(workspace, home=fresh)
    edited = next(
        i for i in ids if i != ids[1] and b"part 1 " in manager.layout.log_path(i).read_bytes()
    )
    log = manager.layout.log_path(edited)
    log.write_bytes(log.read_bytes().replace(b"part 1 ", b"part X ", 1))
    out = migrate(fresh, "--from", pg_dsn, *args, "--json")
    assert out.returncode == 1
    failed = {s["sessionId"]: s["message"] for s in json.loads(out.stdout)["sessions"]}
    assert "differ from the source's from seq 4" in failed[edited]


def test_a_session_in_use_is_skipped_until_it_is_closed(
    pg_dsn: str, schema: str, pg_side: PgTransferStore, workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    ids = make_sessions(workspace, home)
    args = ("--to", pg_dsn, "--project", str(workspace), "--schema", schema, "--json")
    busy = SessionManager(workspace, home=home).open_session(ids[0])
    try:
        out = migrate(home, *args)
    finally:
        busy.close()
    assert out.returncode == 1
    statuses = {
        s["sessionId"]: (s["status"], s["message"]) for s in json.loads(out.stdout)["sessions"]
    }
    assert statuses[ids[0]][0] == "in-use" and "rerun when it is closed" in statuses[ids[0]][1]
    assert not pg_side.exists(ids[0])
    out = migrate(home, *args)
    assert out.returncode == 0
    assert json.loads(out.stdout)["copied"] == 1

    # In the database: a session a server writes is not read for a copy.
    with pg_side.pg.acquire_writer(ids[1]):
        out = run_cli(
            "sessions",
            "migrate",
            "--from",
            pg_dsn,
            "--project",
            str(workspace),
            "--schema",
            schema,
            env=clean_env(tmp_path / "fresh"),
        )
    assert out.returncode == 1
    assert f"{ids[1]}: session {ids[1]} is in use by another agent-assist" in out.stderr
    assert "in use (not copied: rerun when closed)" in out.stdout


def refused_while_copying(lock: Callable[[str], Any]) -> tuple[list[str], Any]:
    """A progress callback trying the target's lock mid-copy, and the sessions it was refused."""
    refused: list[str] = []

    def progress(step: TransferProgress) -> None:
        if step.result is None and step.copied:
            try:
                lock(step.session_id).release()
            except SessionLockedError:
                refused.append(step.session_id)

    return refused, progress


def test_the_targets_lock_is_held_while_a_session_is_written(
    pg_side: PgTransferStore, workspace: Path, tmp_path: Path
) -> None:
    source = LocalTransferStore(SessionManager(workspace, home=tmp_path / "home"))
    ids = make_sessions(workspace, source.manager.home)
    refused, progress = refused_while_copying(pg_side.pg.acquire_writer)
    transfer(source, pg_side, ids, batch=4, progress=progress)
    assert set(refused) == set(ids)
    local = LocalTransferStore(SessionManager(workspace, home=tmp_path / "fresh"))
    refused, progress = refused_while_copying(local.manager.acquire_lock)
    transfer(pg_side, local, ids, batch=4, progress=progress)
    assert set(refused) == set(ids)


def test_errors_name_the_host_never_the_password(
    pg_dsn: str, schema: str, workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    make_sessions(workspace, home)
    wrong = pg_dsn.replace("@", "x-wrong-password@", 1)
    out = migrate(home, "--to", wrong, "--project", str(workspace), "--schema", schema)
    assert out.returncode == 1
    assert "cannot connect to the PostgreSQL store at 127.0.0.1" in out.stderr
    password = pg_dsn.split("@")[0].rsplit(":", 1)[1]
    assert password not in out.stderr + out.stdout
    out = migrate(home, "--from", pg_dsn, "--project", str(workspace), "--schema", schema)
    assert out.returncode == 1
    assert "no agent-assist schema" in out.stderr and password not in out.stderr + out.stdout


def test_events_are_compared_as_values() -> None:
    local = {"seq": 0, "type": "x", "data": {"a": "\x00", "b": -0.0, "c": [1, {"y": 1, "x": 2}]}}
    stored = {"data": {"c": [1, {"x": 2, "y": 1}], "b": 0.0, "a": "\ufffd"}, "type": "x", "seq": 0}
    assert event_digest([local]) == event_digest([stored])
    assert event_digest([local]) != event_digest([{**stored, "seq": 1}])


def test_a_terminal_gets_a_progress_bar(
    pg_dsn: str, schema: str, workspace: Path, tmp_path: Path
) -> None:
    import pexpect

    home = tmp_path / "home"
    ids = make_sessions(workspace, home)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "lsp_server.cli", "sessions", "migrate", "--to", pg_dsn]
        + ["--project", str(workspace), "--schema", schema, "--batch-size", "2"],
        env={**clean_env(home), "COLUMNS": "100"},
        cwd=str(REPO),
        encoding="utf-8",
        timeout=60,
    )
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    shown = child.before or ""
    assert "sessions" in shown and "━" in shown  # the bar, drawn on the terminal
    assert f"[1/3] {ids[0]}: copied" in shown and "3 copied" in shown


def test_a_session_holding_the_database_password_is_not_copied(
    pg_dsn: str, pg_side: PgTransferStore, workspace: Path, tmp_path: Path
) -> None:
    password = pg_dsn.split("@")[0].rsplit(":", 1)[1]
    manager = SessionManager(workspace, home=tmp_path / "home")
    session = manager.create_session()
    session.append("turn/start", {"input": f"connect with {password}"}, turn=1)
    session.append("turn/end", {"reason": "completed"}, turn=1)
    session.close()
    local = LocalTransferStore(manager)
    [result] = transfer(local, pg_side, local.session_ids())
    assert result.status == "failed"
    assert result.message is not None and "contain the database's password" in result.message
    assert not pg_side.exists(session.session_id)  # not even its row


def test_a_damaged_log_is_copied_up_to_the_damage_and_said(
    pg_dsn: str, schema: str, pg_side: PgTransferStore, workspace: Path, tmp_path: Path
) -> None:
    """A bad line mid-log: the readable events are copied, the rest is named, exit 1."""
    home = tmp_path / "home"
    ids = make_sessions(workspace, home)
    log = SessionManager(workspace, home=home).layout.log_path(ids[0])
    lines = log.read_bytes().splitlines(keepends=True)
    lines[4] = b'{"seq": 4, "this line": "was damaged on disk\n'
    log.write_bytes(b"".join(lines))
    damaged = log.read_bytes()
    args = ("--project", str(workspace), "--schema", schema)

    dry = migrate(home, "--to", pg_dsn, *args, "--dry-run")
    assert dry.returncode == 1 and "cannot be read from line 5 on" in dry.stderr, dry.stderr
    out = migrate(home, "--to", pg_dsn, *args)
    assert out.returncode == 1, out.stderr
    said = next(line for line in out.stderr.splitlines() if ids[0] in line)
    assert "copied 4 events" in said and "verified; but its log" in said
    assert "cannot be read from line 5 on" in said and "only the 4 events before it" in said
    assert "1 with a damaged log (only its readable events copied)" in out.stdout
    assert log.read_bytes() == damaged  # the source is left as it is
    assert len(pg_side.raw_events(ids[0])) == 4
    for other in ids[1:]:  # the others are whole
        assert f"{other}: copied" in out.stderr and "damaged" not in out.stderr.split(other)[1]

    again = migrate(home, "--to", pg_dsn, *args, "--json")
    report = json.loads(again.stdout)
    assert again.returncode == 1 and report["damaged"] == 1
    first = next(s for s in report["sessions"] if s["sessionId"] == ids[0])
    assert first["status"] == "complete" and "line 5" in first["damaged"]


def test_the_blobs_a_file_change_names_travel_with_its_session(
    pg_dsn: str, schema: str, workspace: Path, tmp_path: Path
) -> None:
    """A file's timeline keeps its diffs across `migrate`, both ways."""
    home, fresh = tmp_path / "home", tmp_path / "fresh"
    manager = SessionManager(workspace, home=home)
    blobs = CheckpointFiles(manager.layout)
    before, after = blobs.write_blob(b"name: demo\n"), blobs.write_blob(b"name: demo\nport: 1\n")
    session = manager.create_session(instance_id="win-1")
    session.append("turn/start", {"input": "add the port"}, turn=1)
    change = {"path": "config.yaml", "before": before, "after": after}
    result = {"tool_call_id": "c1", "name": "write_file", "content": "ok", "files": [change]}
    session.append("tool/result", result, turn=1, step=1)
    session.append("turn/end", {"reason": "completed"}, turn=1)
    manager.write_snapshot(session)
    session.close()

    out = migrate(home, "--to", pg_dsn, "--project", str(workspace), "--schema", schema)
    assert out.returncode == 0, out.stderr
    with PgStore.open(pg_dsn, schema=schema) as pg:
        assert pg.blob(before) == b"name: demo\n" and pg.blob(after) == b"name: demo\nport: 1\n"
    out = migrate(fresh, "--from", pg_dsn, "--project", str(workspace), "--schema", schema)
    assert out.returncode == 0, out.stderr
    copied = CheckpointFiles(SessionManager(workspace, home=fresh).layout)
    assert copied.read_blob(before) == b"name: demo\n"
    assert copied.read_blob(after) == b"name: demo\nport: 1\n"
