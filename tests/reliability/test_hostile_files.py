"""Hostile files: a corpus of tampered stores and workspaces, driven in-process.

Each case builds a real store (two turns, a save with blobs, a search index), tampers with
it, then drives everything a server does with a store: list sessions, find and resume the
previous session, run a turn, save, list and restore checkpoints, read transcripts, fork,
search, check drift, close. Outside the workspace and the store, canary files are planted
(some reachable through the tampering). Goals: no exception other than the ones the server
turns into a readable RequestFailed (no crash), canaries unchanged (bytes and mtime), no
new file outside, canary text never read into the store, and a warning naming the file for
tampering that is noticed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from session.derive.transcript import transcript
from session.errors import SessionError
from session.fork import fork_session
from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from session.search import SearchError, SearchIndex
from session.storage import StorageError
from tests.fixtures import add_to_manifest

from .conftest import FIGURES, register_store

CANARY = b"CANARY-OUTSIDE-7f3a do not read or write\n"
ALLOWED = (SessionError, StorageError, SearchError)


@dataclass
class Ctx:
    root: Path
    workspace: Path
    home: Path
    outside: Path
    manager: SessionManager
    session_id: str

    @property
    def sessions(self) -> Path:
        return self.manager.layout.sessions_dir

    @property
    def log(self) -> Path:
        return self.manager.layout.log_path(self.session_id)

    @property
    def snapshot(self) -> Path:
        return self.manager.layout.snapshot_path(self.session_id)

    @property
    def pointer(self) -> Path:
        return self.manager.layout.pointer_path("w")

    def checkpoint(self, number: int = 1) -> Path:
        return self.manager.layout.checkpoints_dir / self.session_id / f"{number}.json"

    def edit_json(self, path: Path, fn: Callable[[Any], Any]) -> None:
        data = json.loads(path.read_bytes())
        result = fn(data)
        path.write_text(json.dumps(data if result is None else result))

    def log_lines(self) -> list[bytes]:
        return self.log.read_bytes().splitlines(keepends=True)


def build(root: Path) -> Ctx:
    workspace = root / "project"
    (workspace / "templates").mkdir(parents=True)
    (workspace / "agent_spec.md").write_text("# spec v1\n")
    (workspace / "templates" / "reply.txt").write_text("Dear {name},\n")
    outside = root / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "canary.txt").write_bytes(CANARY)
    (outside / "dir" / "canary.txt").write_bytes(CANARY)
    home = register_store(root / "store")
    manager = SessionManager(workspace, home=home)
    lifecycle = SessionLifecycle(manager, "w")
    lifecycle.start_fresh()
    for number in (1, 2):
        recorder = lifecycle.begin_turn(f"question {number}")
        recorder.chunk(f"answer {number}")
        recorder.assistant_message(
            {"kind": "response", "parts": [{"part_kind": "text", "content": f"answer {number}"}]}
        )
        recorder.end("completed")
        if number == 1:
            lifecycle.explicit_save()
    session_id = lifecycle.session_id
    lifecycle.close()
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
    return Ctx(root, workspace, home, outside, manager, session_id)


def blob_of(ctx: Ctx, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    return digest


# -- the corpus: each tampers and returns the file name a warning should mention (or None)


def manifest_traversal(ctx: Ctx) -> str | None:
    ctx.edit_json(ctx.snapshot, lambda d: add_to_manifest(d, {"../outside/canary.txt": "0" * 64}))
    return None


def manifest_absolute(ctx: Ctx) -> str | None:
    target = str(ctx.outside / "canary.txt")
    ctx.edit_json(ctx.snapshot, lambda d: add_to_manifest(d, {target: "0" * 64}))
    return None


def manifest_traversal_in_log(ctx: Ctx) -> str | None:
    lines = ctx.log_lines()
    first = json.loads(lines[0])
    first["data"]["manifest"]["../outside/canary.txt"] = "0" * 64
    first["data"]["manifest"][str(ctx.outside / "dir" / "canary.txt")] = "0" * 64
    lines[0] = json.dumps(first).encode() + b"\n"
    ctx.log.write_bytes(b"".join(lines))
    ctx.snapshot.unlink()
    return None


def checkpoint_traversal(ctx: Ctx) -> str | None:
    digest = blob_of(ctx, b"# spec v1\n")
    ctx.edit_json(
        ctx.checkpoint(),
        lambda d: d["files"].update(
            {"../outside/canary.txt": digest, str(ctx.outside / "dir" / "canary.txt"): digest}
        ),
    )
    return None


def checkpoint_through_symlinked_dir(ctx: Ctx) -> str | None:
    shutil.rmtree(ctx.workspace / "templates")
    (ctx.workspace / "templates").symlink_to(ctx.outside / "dir")
    digest = blob_of(ctx, b"# spec v1\n")
    ctx.edit_json(ctx.checkpoint(), lambda d: d["files"].update({"templates/canary.txt": digest}))
    return None


def checkpoint_through_symlinked_file(ctx: Ctx) -> str | None:
    (ctx.workspace / "agent_spec.md").unlink()
    (ctx.workspace / "agent_spec.md").symlink_to(ctx.outside / "canary.txt")
    return None


def workspace_hard_link(ctx: Ctx) -> str | None:
    # The tracked file is a hard link to a file outside: restoring must not write into it.
    (ctx.workspace / "agent_spec.md").unlink()
    os.link(ctx.outside / "canary.txt", ctx.workspace / "agent_spec.md")
    return None


def workspace_symlinked_templates(ctx: Ctx) -> str | None:
    shutil.rmtree(ctx.workspace / "templates")
    (ctx.workspace / "templates").symlink_to(ctx.outside / "dir")
    return None


def store_log_hard_link(ctx: Ctx) -> str | None:
    copy = ctx.outside / "log-copy.jsonl"
    shutil.copyfile(ctx.log, copy)
    ctx.log.unlink()
    os.link(copy, ctx.log)
    return ctx.log.name


def store_log_symlink(ctx: Ctx) -> str | None:
    copy = ctx.outside / "log-copy.jsonl"
    plant_canary_event(ctx.log)
    shutil.copyfile(ctx.log, copy)
    ctx.log.unlink()
    ctx.log.symlink_to(copy)
    return ctx.log.name


def store_snapshot_symlink(ctx: Ctx) -> str | None:
    copy = ctx.outside / "snap-copy.json"
    shutil.copyfile(ctx.snapshot, copy)
    ctx.snapshot.unlink()
    ctx.snapshot.symlink_to(copy)
    return ctx.snapshot.name


def store_lock_symlink(ctx: Ctx) -> str | None:
    lock = ctx.manager.layout.lock_path(ctx.session_id)
    lock.unlink(missing_ok=True)
    lock.symlink_to(ctx.outside / "canary.txt")
    return lock.name


def store_index_symlink(ctx: Ctx) -> str | None:
    index = ctx.manager.layout.project_dir / "index.sqlite"
    shutil.copyfile(index, ctx.outside / "index-copy.sqlite")
    index.unlink()
    index.symlink_to(ctx.outside / "index-copy.sqlite")
    return None


def store_index_hard_link(ctx: Ctx) -> str | None:
    index = ctx.manager.layout.project_dir / "index.sqlite"
    shutil.copyfile(index, ctx.outside / "index-copy.sqlite")
    index.unlink()
    os.link(ctx.outside / "index-copy.sqlite", index)
    return None


def plant_canary_event(log: Path) -> None:
    """Append a readable event holding the canary text: reading it would index it."""
    lines = log.read_bytes().splitlines(keepends=True)
    last = json.loads(lines[-1])
    event = {
        **last,
        "seq": last["seq"] + 1,
        "type": "session/decision",
        "turn": None,
        "step": None,
        "data": {"text": CANARY.decode()},
    }
    log.write_bytes(b"".join(lines) + json.dumps(event).encode() + b"\n")


def symlinked_sessions_dir(ctx: Ctx) -> str | None:
    evil = ctx.outside / "sessions"
    plant_canary_event(ctx.log)
    shutil.copytree(ctx.sessions, evil)
    shutil.rmtree(ctx.sessions)
    ctx.sessions.symlink_to(evil)
    return "sessions"


def symlinked_project_dir(ctx: Ctx) -> str | None:
    evil = ctx.outside / "project-store"
    plant_canary_event(ctx.log)
    shutil.copytree(ctx.manager.layout.project_dir, evil)
    shutil.rmtree(ctx.manager.layout.project_dir)
    ctx.manager.layout.project_dir.symlink_to(evil)
    return ctx.manager.layout.project_dir.name


def symlinked_checkpoints_dir(ctx: Ctx) -> str | None:
    directory = ctx.manager.layout.checkpoints_dir / ctx.session_id
    evil = ctx.outside / "cps"
    shutil.copytree(directory, evil)
    shutil.rmtree(directory)
    directory.symlink_to(evil)
    return None


def symlinked_blobs_dir(ctx: Ctx) -> str | None:
    # Outside, a "blob" with the canary's content; the record points the spec at it.
    digest = hashlib.sha256(CANARY).hexdigest()
    evil = ctx.outside / "blobs"
    shutil.copytree(ctx.manager.layout.blobs_dir, evil)
    (evil / digest[:2]).mkdir(exist_ok=True)
    (evil / digest[:2] / digest).write_bytes(CANARY)
    shutil.rmtree(ctx.manager.layout.blobs_dir)
    ctx.manager.layout.blobs_dir.symlink_to(evil)
    ctx.edit_json(ctx.checkpoint(), lambda d: d["files"].update({"agent_spec.md": digest}))
    return None


def blob_symlink(ctx: Ctx) -> str | None:
    digest = hashlib.sha256(CANARY).hexdigest()
    (ctx.manager.layout.blobs_dir / digest[:2]).mkdir(exist_ok=True)
    (ctx.manager.layout.blobs_dir / digest[:2] / digest).symlink_to(ctx.outside / "canary.txt")
    ctx.edit_json(ctx.checkpoint(), lambda d: d["files"].update({"agent_spec.md": digest}))
    return None


def checkpoint_crafted_digest(ctx: Ctx) -> str | None:
    ctx.edit_json(
        ctx.checkpoint(),
        lambda d: d["files"].update({"agent_spec.md": "../../../outside/canary.txt"}),
    )
    return None


def checkpoint_seq_out_of_range(ctx: Ctx) -> str | None:
    ctx.edit_json(ctx.checkpoint(), lambda d: d.update(seq=10**9))
    return None


def checkpoint_invalid_json(ctx: Ctx) -> str | None:
    ctx.checkpoint().write_bytes(b"{not json")
    return ctx.checkpoint().name


def checkpoint_wrong_types(ctx: Ctx) -> str | None:
    ctx.edit_json(ctx.checkpoint(), lambda d: d.update(files=["a"], number="one"))
    return ctx.checkpoint().name


def checkpoint_other_session(ctx: Ctx) -> str | None:
    ctx.edit_json(ctx.checkpoint(), lambda d: d.update(session_id="../../outside"))
    return None


def pointer_traversal(ctx: Ctx) -> str | None:
    ctx.pointer.write_text(json.dumps({"sessionId": "../../outside/canary"}))
    return ctx.pointer.name


def pointer_wrong_type(ctx: Ctx) -> str | None:
    ctx.pointer.write_text(json.dumps({"sessionId": 123456789012}))
    return ctx.pointer.name


def pointer_not_json(ctx: Ctx) -> str | None:
    ctx.pointer.write_bytes(b"\xff\xfe garbage")
    return ctx.pointer.name


def pointer_symlink(ctx: Ctx) -> str | None:
    evil = ctx.outside / "pointer.json"
    evil.write_text(json.dumps({"sessionId": ctx.session_id}))
    ctx.pointer.unlink()
    ctx.pointer.symlink_to(evil)
    return ctx.pointer.name


def pointer_unknown_session(ctx: Ctx) -> str | None:
    ctx.pointer.write_text(json.dumps({"sessionId": "abcdefabcdef"}))
    return ctx.pointer.name


def pointer_huge(ctx: Ctx) -> str | None:
    ctx.pointer.write_text(json.dumps({"sessionId": ctx.session_id, "pad": "x" * 200_000}))
    return ctx.pointer.name


def snapshot_invalid_json(ctx: Ctx) -> str | None:
    ctx.snapshot.write_bytes(b'{"schema_version": 3, "session_id": ')
    return ctx.snapshot.name


def snapshot_wrong_types(ctx: Ctx) -> str | None:
    ctx.edit_json(ctx.snapshot, lambda d: d.update(turns="many", file_manifest=["x"]))
    return ctx.snapshot.name


def snapshot_not_object(ctx: Ctx) -> str | None:
    ctx.snapshot.write_text("[1, 2, 3]")
    return ctx.snapshot.name


def snapshot_future_schema(ctx: Ctx) -> str | None:
    ctx.edit_json(ctx.snapshot, lambda d: d.update(schema_version=99))
    return ctx.snapshot.name


def snapshot_huge_field(ctx: Ctx) -> str | None:
    ctx.edit_json(ctx.snapshot, lambda d: d.update(summary="s" * 3_000_000))
    return None


def snapshot_other_session(ctx: Ctx) -> str | None:
    ctx.edit_json(ctx.snapshot, lambda d: d.update(session_id="abcdefabcdef"))
    return ctx.snapshot.name


def snapshot_bad_offset(ctx: Ctx) -> str | None:
    ctx.edit_json(ctx.snapshot, lambda d: d.update(log_offset=10**12, last_seq=10**6))
    return None


def snapshot_bad_recent_messages(ctx: Ctx) -> str | None:
    ctx.edit_json(
        ctx.snapshot,
        lambda d: d.update(recent_messages=[{"kind": "request", "parts": "x"}, 7, None]),
    )
    return None


def log_invalid_json_middle(ctx: Ctx) -> str | None:
    lines = ctx.log_lines()
    lines.insert(2, b"{this is not json\n")
    ctx.log.write_bytes(b"".join(lines))
    return ctx.log.name


def log_wrong_types_middle(ctx: Ctx) -> str | None:
    lines = ctx.log_lines()
    event = json.loads(lines[2])
    event["data"] = "not an object"
    lines[2] = json.dumps(event).encode() + b"\n"
    ctx.log.write_bytes(b"".join(lines))
    return ctx.log.name


def log_duplicate_seq(ctx: Ctx) -> str | None:
    lines = ctx.log_lines()
    lines.insert(3, lines[2])
    ctx.log.write_bytes(b"".join(lines))
    return ctx.log.name


def log_out_of_order(ctx: Ctx) -> str | None:
    lines = ctx.log_lines()
    lines[2], lines[3] = lines[3], lines[2]
    ctx.log.write_bytes(b"".join(lines))
    return ctx.log.name


def log_unknown_type(ctx: Ctx) -> str | None:
    lines = ctx.log_lines()
    event = json.loads(lines[2])
    event["type"] = "evil/type"
    lines[2] = json.dumps(event).encode() + b"\n"
    ctx.log.write_bytes(b"".join(lines))
    return ctx.log.name


def log_huge_line(ctx: Ctx) -> str | None:
    lines = ctx.log_lines()
    last = json.loads(lines[-1])
    seq = last["seq"] + 1
    huge = {
        "seq": seq,
        "ts": last["ts"],
        "type": "session/decision",
        "turn": None,
        "step": None,
        "data": {"text": "d" * 5_000_000},
    }
    ctx.log.write_bytes(b"".join(lines) + json.dumps(huge).encode() + b"\n")
    return None


def log_future_event_shape(ctx: Ctx) -> str | None:
    lines = ctx.log_lines()
    last = json.loads(lines[-1])
    extra = {**last, "seq": last["seq"] + 1, "v": 99, "data": {**last["data"], "new": [1]}}
    ctx.log.write_bytes(b"".join(lines) + json.dumps(extra).encode() + b"\n")
    return None


def log_not_utf8(ctx: Ctx) -> str | None:
    lines = ctx.log_lines()
    lines.insert(2, b'{"seq": 2, "type": "\xff\xfe"}\n')
    ctx.log.write_bytes(b"".join(lines))
    return ctx.log.name


def log_missing(ctx: Ctx) -> str | None:
    ctx.log.unlink()
    return None


def non_utf8_names(ctx: Ctx) -> str | None:
    os.makedirs(os.fsencode(ctx.workspace / "templates") + b"/\xff\xfe-dir", exist_ok=True)
    (
        Path(os.fsdecode(os.fsencode(ctx.workspace / "templates") + b"/\xff\xfe-dir")) / "a.txt"
    ).write_text("x")
    Path(os.fsdecode(os.fsencode(ctx.workspace / "templates") + b"/caf\xe9.txt")).write_text("y")
    Path(os.fsdecode(os.fsencode(ctx.sessions) + b"/\xff\xfe.events.jsonl")).write_text("{}\n")
    Path(os.fsdecode(os.fsencode(ctx.sessions) + b"/active_\xff.json")).write_text("{}")
    Path(
        os.fsdecode(
            os.fsencode(ctx.manager.layout.checkpoints_dir / ctx.session_id) + b"/\xff.json"
        )
    ).write_text("{}")
    return None


def stray_entries(ctx: Ctx) -> str | None:
    (ctx.sessions / "abcdefabcdef.events.jsonl").mkdir()  # a directory where a log should be
    os.mkfifo(ctx.sessions / "abcdefabcde0.json")  # a FIFO where a snapshot should be
    (ctx.sessions / "ABCDEF.events.jsonl").write_text("{}")
    return None


CASES: dict[str, Callable[[Ctx], str | None]] = {
    fn.__name__: fn
    for fn in (
        manifest_traversal,
        manifest_absolute,
        manifest_traversal_in_log,
        checkpoint_traversal,
        checkpoint_through_symlinked_dir,
        checkpoint_through_symlinked_file,
        workspace_hard_link,
        workspace_symlinked_templates,
        store_log_hard_link,
        store_log_symlink,
        store_snapshot_symlink,
        store_lock_symlink,
        store_index_symlink,
        store_index_hard_link,
        symlinked_sessions_dir,
        symlinked_project_dir,
        symlinked_checkpoints_dir,
        symlinked_blobs_dir,
        blob_symlink,
        checkpoint_crafted_digest,
        checkpoint_seq_out_of_range,
        checkpoint_invalid_json,
        checkpoint_wrong_types,
        checkpoint_other_session,
        pointer_traversal,
        pointer_wrong_type,
        pointer_not_json,
        pointer_symlink,
        pointer_unknown_session,
        pointer_huge,
        snapshot_invalid_json,
        snapshot_wrong_types,
        snapshot_not_object,
        snapshot_future_schema,
        snapshot_huge_field,
        snapshot_other_session,
        snapshot_bad_offset,
        snapshot_bad_recent_messages,
        log_invalid_json_middle,
        log_wrong_types_middle,
        log_duplicate_seq,
        log_out_of_order,
        log_unknown_type,
        log_huge_line,
        log_future_event_shape,
        log_not_utf8,
        log_missing,
        non_utf8_names,
        stray_entries,
    )
}


def outside_state(root: Path, keep: set[Path]) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of every file under `root` except the workspace and the store."""
    state: dict[str, tuple[bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d not in keep]
        for name in filenames:
            path = here / name
            st = os.lstat(path)
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            state[str(path)] = (data, st.st_mtime_ns)
    return state


def store_holds_canary(home: Path, workspace: Path) -> list[str]:
    found = []
    for base in (home, workspace):
        for dirpath, _, filenames in os.walk(base):
            for name in filenames:
                path = Path(dirpath) / name
                if path.is_symlink() or not path.is_file():
                    continue
                if os.stat(path).st_nlink > 1:
                    continue  # a hard link the test planted: its bytes are the canary's
                if b"CANARY-OUTSIDE" in path.read_bytes():
                    found.append(str(path))
    return found


def exercise(ctx: Ctx, crashes: list[str]) -> list[str]:
    """Do what a server does with this project; return the warnings it gave."""
    warnings: list[str] = []

    def attempt(what: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except ALLOWED as exc:
            warnings.append(f"{what}: {exc}")
        except Exception as exc:  # anything else would be an internal error: a crash
            crashes.append(f"{what}: {exc!r}")
        return None

    manager = SessionManager(ctx.workspace, home=ctx.home)
    attempt("list", manager.list_sessions)
    lifecycle = SessionLifecycle(manager, "w")
    previous = attempt("find_previous", lifecycle.find_previous)
    attempt("resume", lambda: lifecycle.resume_or_start(previous, True))

    def turn() -> None:
        recorder = lifecycle.begin_turn("question after tampering")
        recorder.chunk("fine")
        recorder.end("completed")

    attempt("turn", turn)
    attempt("save", lifecycle.explicit_save)
    records = attempt("checkpoints", lifecycle.list_checkpoints) or []
    for record in records:
        plan = attempt("plan_restore", lambda r=record: lifecycle.plan_restore(r.number))
        if plan is not None:
            attempt("restore", lambda p=plan: lifecycle.restore(p))
    attempt("drift", lambda: lifecycle.check_live_drift(["agent_spec.md", "../outside/canary.txt"]))
    attempt("history", lifecycle.message_history)
    for session_id in list(attempt("ids", lambda: list(manager.layout.session_ids())) or []):
        scan = attempt("read", lambda s=session_id: manager.read_events(s))
        if scan is not None:
            attempt("transcript", lambda s=scan: transcript(s.events))
            warnings.extend(p.message for p in scan.problems)
        if session_id != (lifecycle.session.session_id if lifecycle.session else None):
            result = attempt("fork", lambda s=session_id: fork_session(manager, s))
            if result is not None:
                result.session.close()
    attempt(
        "checkpoint store", lambda: manager.checkpoint_store().records(ctx.session_id, warnings)
    )

    def search() -> None:
        with SearchIndex.for_project(manager.layout) as index:
            stats = index.sync(manager.layout)
            warnings.extend(stats.problems)
            index.search("question")

    attempt("search", search)
    attempt("close", lifecycle.close)
    warnings.extend(lifecycle.warnings)
    return warnings


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_store(case: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ctx = build(tmp_path)
    expect_name = CASES[case](ctx)
    keep = {ctx.workspace, ctx.home}
    before = outside_state(tmp_path, keep)
    crashes: list[str] = []
    with caplog.at_level(logging.WARNING):
        warnings = exercise(ctx, crashes)
    warnings += [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    after = outside_state(tmp_path, keep)
    escapes = [p for p in before if before[p] != after.get(p)]
    escapes += [f"new file {p}" for p in after if p not in before]
    if case != "workspace_hard_link":
        escapes += [f"canary read into {p}" for p in store_holds_canary(ctx.home, ctx.workspace)]
    FIGURES["hostile_files.cases"] += 1
    FIGURES["hostile_files.crashes"] += len(crashes)
    FIGURES["hostile_files.escapes"] += len(escapes)
    assert not crashes, crashes
    assert not escapes, escapes
    if expect_name is not None:
        FIGURES["hostile_files.warnings_checked"] += 1
        assert any(expect_name in w for w in warnings), (expect_name, warnings)
