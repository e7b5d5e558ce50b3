"""SessionLifecycle and SessionManager: the transitions of the seed documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from session.derive.transcript import transcript
from session.errors import SessionLockedError
from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from session.log.reader import scan_log
from session.snapshot import SCHEMA_VERSION
from tests.fixtures import stored_manifest

from .conftest import make_lifecycle, request, response, run_turn

SEED_FIELDS = {
    "schema_version",
    "session_id",
    "created_at",
    "updated_at",
    "agent_spec_path",
    "file_manifest",
    "summary",
    "decisions",
    "recent_messages",
    "compacted_history_summary",
    "checkpoint_count",
    "phase",
}


def all_bytes_under(path: Path) -> bytes:
    out = b""
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            out += (Path(dirpath) / name).read_bytes()
    return out


def test_fresh_launch_then_exit_writes_snapshot_and_pointer(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    assert lc.find_previous() is None
    run_turn(lc, "design an agent", "Sure.")
    sid = lc.session_id
    assert lc.close() is True
    snapshot = json.loads(manager.layout.snapshot_path(sid).read_text())
    assert SEED_FIELDS <= set(snapshot)
    assert snapshot["schema_version"] == 3  # the seed's schema (SCHEMA_VERSION: what we read)
    assert SCHEMA_VERSION == 4
    assert snapshot["agent_spec_path"] == "agent_spec.md"
    assert set(snapshot["file_manifest"]) == {"agent_spec.md", "templates/prompt.txt"}
    assert stored_manifest(snapshot) == snapshot["file_manifest"]
    assert snapshot["recent_messages"] == [request("design an agent"), response("Sure.")]
    pointer = json.loads(manager.layout.pointer_path("inst").read_text())
    assert pointer["sessionId"] == sid
    for path in (
        manager.layout.snapshot_path(sid),
        manager.layout.log_path(sid),
        manager.layout.pointer_path("inst"),
    ):
        assert (path.stat().st_mode & 0o777) == 0o600
    assert (manager.layout.sessions_dir.stat().st_mode & 0o777) == 0o700


def test_resume_carries_the_session_forward(manager: SessionManager, workspace: Path) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    lc.record_decision("Chose REST tools")
    sid = lc.session_id
    lc.close()
    (workspace / "agent_spec.md").write_text("edited behind the assistant's back")

    lc2 = make_lifecycle(manager)
    previous = lc2.find_previous()
    assert previous is not None and previous.session_id == sid and previous.turns == 1
    assert previous.prompt().startswith("Previous session found (last active: ")
    assert previous.prompt().endswith(" UTC)\n\u201cone\u201d · 1 turn\nResume previous session?")
    assert lc2.resume_or_start(previous, accept=True) == "resumed"
    assert lc2.session_id == sid and lc2.resumed
    assert f"This is a resumed session (ID: {sid})." in lc2.resume_context
    assert "- Chose REST tools" in lc2.resume_context
    assert "- agent_spec.md: modified" in lc2.resume_context
    assert lc2.message_history() == [request("one"), response("first")]
    turn = run_turn(lc2, "two", "second")
    assert turn.number == 2
    lc2.close()
    events = scan_log(manager.layout.log_path(sid)).events
    drift = [e for e in events if e.type == "workspace/drift"]
    assert len(drift) == 1 and drift[0].data.modified == ["agent_spec.md"]  # type: ignore[union-attr]
    assert [e.seq for e in events] == list(range(len(events)))


def test_decline_starts_new_id_and_keeps_old_file(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    old = lc.session_id
    lc.close()
    lc2 = make_lifecycle(manager)
    assert lc2.resume_or_start(lc2.find_previous(), accept=False) == "new"
    assert lc2.session_id != old and lc2.resume_context == ""
    assert manager.layout.snapshot_path(old).exists() and manager.layout.log_path(old).exists()
    run_turn(lc2, "fresh", "ok")
    new = lc2.session_id
    lc2.close()
    assert json.loads(manager.layout.pointer_path("inst").read_text())["sessionId"] == new


def test_reset_deletes_clears_and_blocks_autosave_resurrection(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    lc.explicit_save()
    old = lc.session_id
    assert lc.reset_targets() == ["agent_spec.md", "templates"]
    result = lc.reset(delete_files=False)
    assert result.old_session_id == old and result.session_id != old
    assert result.deleted_files == []
    assert (
        not manager.layout.snapshot_path(old).exists() and not manager.layout.log_path(old).exists()
    )
    assert not manager.layout.pointer_path("inst").exists()
    assert lc.resume_context == "" and lc.session_deleted and lc.message_history() == []
    assert lc.close() is False  # autosave skipped
    assert not manager.layout.pointer_path("inst").exists()
    assert list(manager.layout.session_ids()) == []


def test_first_reply_after_reset_re_enables_autosave(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    lc.reset()
    run_turn(lc, "again", "hello", end="error")  # a failed reply does not re-enable
    assert lc.session_deleted
    run_turn(lc, "again", "hello")
    assert not lc.session_deleted
    sid = lc.session_id
    assert lc.close() is True
    assert json.loads(manager.layout.pointer_path("inst").read_text())["sessionId"] == sid


def test_reset_can_delete_spec_and_templates(manager: SessionManager, workspace: Path) -> None:
    lc = make_lifecycle(manager)
    result = lc.reset(delete_files=True)
    assert sorted(result.deleted_files) == ["agent_spec.md", "templates"]
    assert not (workspace / "agent_spec.md").exists() and not (workspace / "templates").exists()


def test_reset_deletes_a_symlinked_template_dir_not_its_target(
    manager: SessionManager, workspace: Path, tmp_path: Path
) -> None:
    import shutil

    shutil.rmtree(workspace / "templates")
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "keep.txt").write_text("keep")
    (workspace / "templates").symlink_to(tmp_path / "precious")
    make_lifecycle(manager).reset(delete_files=True)
    assert (tmp_path / "precious" / "keep.txt").read_text() == "keep"


def test_explicit_save_refreshes_manifest_and_counts_checkpoints(
    manager: SessionManager, workspace: Path
) -> None:
    lc = make_lifecycle(manager)
    first = lc.explicit_save()
    (workspace / "templates" / "more.txt").write_text("more")
    second = lc.explicit_save()
    assert (first.checkpoint, second.checkpoint) == (1, 2)
    snapshot = json.loads(Path(second.path).read_text())
    assert snapshot["checkpoint_count"] == 2
    assert "templates/more.txt" in stored_manifest(snapshot)
    saves = [
        e
        for e in scan_log(manager.layout.log_path(lc.session_id)).events
        if e.type == "session/save"
    ]
    assert [e.data.checkpoint for e in saves] == [1, 2]  # type: ignore[union-attr]


def test_crash_mid_turn_is_closed_as_interrupted(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    run_turn(lc, "two", "partial answer", end=None)  # the process dies here
    sid = lc.session_id
    lc.session.log.close()  # type: ignore[union-attr]
    lc.session.lock.release()  # type: ignore[union-attr]
    lc.session = None

    lc2 = make_lifecycle(manager)
    lc2.resume_or_start(lc2.find_previous(), accept=True)
    assert lc2.session_id == sid
    events = scan_log(manager.layout.log_path(sid)).events
    assert events[-1].type == "turn/end"
    assert events[-1].data.reason == "interrupted" and events[-1].turn == 2  # type: ignore[union-attr]
    # A stream is written up to its last space (what follows could be part of a secret): a
    # crash loses the word it held back.
    assert lc2.message_history()[-1] == response("partial ")
    assert run_turn(lc2, "three", "ok").number == 3
    assert [
        i.end_reason
        for i in transcript(scan_log(manager.layout.log_path(sid)).events)
        if i.end_reason
    ] == ["completed", "interrupted", "completed"]


LOCK_HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from session.local.manager import SessionManager
    m = SessionManager(Path(sys.argv[1]), home=Path(sys.argv[2]))
    s = m.open_session(sys.argv[3])
    print("locked", flush=True)
    sys.stdin.readline()
    s.close()
    """
)


def test_a_second_process_cannot_write_a_locked_session(
    manager: SessionManager, workspace: Path, home: Path
) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    sid = lc.session_id
    lc.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(workspace), str(home), sid],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(SessionLockedError, match="in use by another"):
            manager.open_session(sid)
        lc2 = make_lifecycle(manager)
        assert lc2.resume_or_start(lc2.find_previous(), accept=True) == "new"
        assert lc2.session_id != sid
        assert any("in use" in w for w in lc2.warnings)
        lc2.close()
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=10)
    manager.open_session(sid).close()  # free again once the holder is gone


@pytest.mark.parametrize(
    "pointer",
    [
        b"{not json",
        b'{"sessionId": "../../../etc/passwd"}',
        b'{"sessionId": "ABCDEF012345"}',
        b'{"sessionId": 42}',
        b"[]",
        b'{"sessionId": "0123456789ab"}',  # valid but unknown
        b"",
    ],
)
def test_tampered_pointer_is_ignored_with_a_warning(
    manager: SessionManager, pointer: bytes
) -> None:
    manager.layout.ensure_dirs()
    manager.layout.pointer_path("inst").write_bytes(pointer)
    lc = make_lifecycle(manager)
    assert lc.find_previous() is None
    assert lc.warnings and "active_inst.json" in lc.warnings[0]


def test_invalid_ids_never_build_paths(manager: SessionManager) -> None:
    from session.errors import SessionError, SessionNotFoundError

    with pytest.raises(SessionNotFoundError):
        manager.layout.log_path("../../x")
    with pytest.raises(SessionError):
        manager.layout.pointer_path("../evil")


def saved_session(manager: SessionManager) -> tuple[SessionLifecycle, str]:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    run_turn(lc, "two", "second")
    sid = lc.session_id
    lc.close()
    return lc, sid


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: b"{broken",
        lambda raw: raw[: len(raw) // 2],
        lambda raw: b'{"schema_version": 3, "session_id": 5}',
        lambda raw: json.dumps({**json.loads(raw), "session_id": "../../etc"}).encode(),
        lambda raw: json.dumps({**json.loads(raw), "log_offset": 10**9}).encode(),
        lambda raw: json.dumps({**json.loads(raw), "last_seq": 3}).encode(),
        lambda raw: json.dumps({**json.loads(raw), "decisions": "not a list"}).encode(),
    ],
)
def test_damaged_snapshot_is_rebuilt_from_the_log(manager: SessionManager, damage: object) -> None:
    _, sid = saved_session(manager)
    path = manager.layout.snapshot_path(sid)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    session = manager.open_session(sid)
    try:
        assert not session.read_only
        assert session.state.turns == 2
        assert session.history.messages()[-1] == response("second")
        assert session.log.next_seq == scan_log(manager.layout.log_path(sid)).events[-1].seq + 1
    finally:
        session.close()


def test_future_schema_opens_read_only_and_is_never_overwritten(manager: SessionManager) -> None:
    _, sid = saved_session(manager)
    path = manager.layout.snapshot_path(sid)
    data = json.loads(path.read_text())
    data["schema_version"] = 99
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    log_before = manager.layout.log_path(sid).read_bytes()
    lc = make_lifecycle(manager)
    lc.resume(sid)
    assert lc.current.read_only
    assert "schema_version 99" in (lc.current.read_only_reason or "")
    assert lc.close() is False
    assert path.read_bytes() == before and manager.layout.log_path(sid).read_bytes() == log_before


def test_older_schema_without_a_log_is_migrated(manager: SessionManager) -> None:
    manager.layout.ensure_dirs()
    legacy = {
        "schema_version": 1,
        "session_id": "a1b2c3d4e5f6",
        "created_at": "2026-03-30T10:15:00Z",
        "updated_at": "2026-03-31T14:22:00Z",
        "agent_spec_path": "agent_spec.md",
        "file_manifest": {"agent_spec.md": "0" * 64},
    }
    manager.layout.snapshot_path("a1b2c3d4e5f6").write_text(json.dumps(legacy))
    manager.write_pointer("inst", "a1b2c3d4e5f6")
    lc = make_lifecycle(manager)
    previous = lc.find_previous()
    assert previous is not None and "2026-03-31 14:22 UTC" in previous.prompt()
    lc.resume("a1b2c3d4e5f6")
    assert "- agent_spec.md: modified" in lc.resume_context
    run_turn(lc, "continue", "ok")
    lc.close()
    snapshot = json.loads(manager.layout.snapshot_path("a1b2c3d4e5f6").read_text())
    assert snapshot["schema_version"] == 3 and snapshot["recent_messages"]
    # The v1 manifest was read as it was; the save recorded the hash of the file as it is now.
    assert stored_manifest(snapshot)["agent_spec.md"] not in ("0" * 64, None)
    assert scan_log(manager.layout.log_path("a1b2c3d4e5f6")).events[0].type == "session/start"


def test_resume_reads_only_the_log_tail(manager: SessionManager) -> None:
    """Damage before the snapshot's offset is not even read: proof resume is O(tail)."""
    _, sid = saved_session(manager)
    log_path = manager.layout.log_path(sid)
    snapshot = json.loads(manager.layout.snapshot_path(sid).read_text())
    raw = bytearray(log_path.read_bytes())
    assert snapshot["log_offset"] == len(raw)
    raw[5:9] = b"XXXX"  # corrupt line 1, keep its length
    log_path.write_bytes(bytes(raw))
    session = manager.open_session(sid)
    assert not session.read_only and session.state.turns == 2
    session.close()


def test_bad_line_in_the_tail_opens_read_only(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    sid = lc.session_id
    lc.explicit_save()
    run_turn(lc, "two", "second")
    lc.session.log.close()  # type: ignore[union-attr]
    lc.session.lock.release()  # type: ignore[union-attr]
    lc.session = None
    path = manager.layout.log_path(sid)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[-3] = b"garbage\n"
    path.write_bytes(b"".join(lines))
    lc2 = make_lifecycle(manager)
    lc2.resume(sid)
    assert lc2.current.read_only
    assert f"line {len(lines) - 2}" in (lc2.current.read_only_reason or "")
    assert any("read-only" in w for w in lc2.warnings)
    lc2.close()
    assert path.read_bytes() == b"".join(lines)


def test_secrets_never_reach_disk(manager: SessionManager, home: Path) -> None:
    key = "zz-configured-key-0123456789"
    lc = make_lifecycle(manager, secrets=(key,))
    leaked = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX0123"
    run_turn(lc, f"my key is {key} and {leaked}", f"noted {leaked}")
    lc.record_decision(f"Authorization: Bearer {leaked}")
    lc.close()
    blob = all_bytes_under(home)
    assert key.encode() not in blob and leaked.encode() not in blob
    assert b"[REDACTED]" in blob


def test_metadata_persistence_writes_no_conversation_content(
    manager: SessionManager, home: Path
) -> None:
    lc = make_lifecycle(manager, persistence="metadata")
    run_turn(lc, "SECRET-PLAN-42 for the launch", "REPLY-CONTENT-99")
    lc.record_decision("DECISION-TEXT-7")
    assert lc.message_history()[-1] == response("REPLY-CONTENT-99")  # in memory only
    sid = lc.session_id
    lc.close()
    blob = all_bytes_under(home)
    for content in (b"SECRET-PLAN-42", b"REPLY-CONTENT-99", b"DECISION-TEXT-7"):
        assert content not in blob
    assert b"agent_spec.md" in blob and sid.encode() in blob
    lc2 = make_lifecycle(manager, persistence="metadata")
    lc2.resume(sid)
    assert lc2.message_history() == []
    lc2.close()


def test_live_drift_ignores_the_assistant_own_edits(
    manager: SessionManager, workspace: Path
) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    (workspace / "templates" / "prompt.txt").write_text("assistant wrote this")
    lc.note_assistant_file("templates/prompt.txt")
    assert lc.check_live_drift(["templates/prompt.txt"]) is None
    (workspace / "agent_spec.md").write_text("user edit")
    report = lc.check_live_drift(["agent_spec.md", "../outside"])
    assert report is not None and report.modified == ["agent_spec.md"]
    events = scan_log(manager.layout.log_path(lc.session_id)).events
    assert events[-1].type == "workspace/drift" and events[-1].data.source == "watcher"  # type: ignore[union-attr]
    lc.close()


def test_list_sessions_newest_first(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "first session question", "a")
    first = lc.session_id
    lc.reset()
    run_turn(lc, "second session question", "b")
    lc.close()
    lc2 = make_lifecycle(manager, instance="other")
    run_turn(lc2, "third", "c")
    third = lc2.session_id
    lc2.close()
    infos = manager.list_sessions()
    assert infos[0].session_id == third
    assert first not in {i.session_id for i in infos}  # reset deleted it
    assert {i.title for i in infos} == {"second session question", "third"}


def test_log_lines_are_valid_json_with_dense_seq(manager: SessionManager) -> None:
    _, sid = saved_session(manager)
    lines = manager.layout.log_path(sid).read_bytes().splitlines()
    assert [orjson.loads(line)["seq"] for line in lines] == list(range(len(lines)))


def test_checkpoint_titles_are_scrubbed(manager: SessionManager, home: Path) -> None:
    key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX0123"
    lc = make_lifecycle(manager)
    run_turn(lc, f"use {key} please", "ok")
    lc.explicit_save()
    lc.close()
    assert key.encode() not in all_bytes_under(home)
    lc2 = make_lifecycle(manager, persistence="metadata")
    run_turn(lc2, "TOPSECRET-TITLE-7", "ok")
    lc2.explicit_save()
    lc2.close()
    assert b"TOPSECRET-TITLE-7" not in all_bytes_under(home)


class ElsewhereStore(SessionManager):
    """A store whose sessions say they were last written on another machine."""

    def session_host(self, session_id: str) -> str | None:
        return "another-machine"


def test_another_machines_stat_cache_is_never_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import session.workspace.scanner as scanner

    workspace = tmp_path / "ws"
    (workspace / "templates").mkdir(parents=True)
    hour_ago = time.time() - 3600  # not "racy": a cache of these stats is trusted
    for n in range(5):
        path = workspace / "templates" / f"t{n}.md"
        path.write_text(f"template {n}\n")
        os.utime(path, (hour_ago, hour_ago))
    home = tmp_path / "home"
    first = make_lifecycle(SessionManager(workspace, home=home))
    first.start_fresh()
    run_turn(first, "hello", "hi")
    first.close()
    old_id = first.session_id if first.session else None
    session_id = SessionManager(workspace, home=home).read_pointer("inst") or old_id
    assert session_id is not None
    hashed: list[str] = []
    real = scanner.sha256_file

    def counting(path: str) -> str | None:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(scanner, "sha256_file", counting)
    here = make_lifecycle(SessionManager(workspace, home=home))
    assert not here.resume(session_id).has_drift
    here.close()
    trusted = len(hashed)
    hashed.clear()
    elsewhere = make_lifecycle(ElsewhereStore(workspace, home=home))
    assert not elsewhere.resume(session_id).has_drift
    elsewhere.close()
    assert trusted == 0 and len(hashed) >= 5  # this machine's cache is trusted; another's never


@pytest.mark.parametrize(
    ("end", "said"),
    [
        (None, "its last turn was interrupted"),  # its process died mid-turn
        ("aborted", "its last turn was cancelled"),
        ("error", "its last turn failed"),
        ("completed", None),
    ],
)
def test_the_resume_question_says_how_the_last_turn_ended(
    manager: SessionManager, end: str | None, said: str | None
) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    run_turn(lc, "two", "second", end=end)
    if end is None:
        lc.current.close()  # as a killed process leaves it: no turn/end, no exit
    else:
        lc.close()
    previous = make_lifecycle(manager).find_previous()
    assert previous is not None
    line = previous.prompt().split("\n")[1]
    assert line.startswith("\u201cone\u201d · 2 turns")
    assert line.endswith(said) if said else line == "\u201cone\u201d · 2 turns"


def test_a_session_without_a_turn_is_offered_as_one(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    lc.record_decision("Keep the templates short.")  # content, but no turn yet
    lc.close()
    previous = make_lifecycle(manager).find_previous()
    assert previous is not None
    assert previous.prompt().split("\n")[1] == "untitled · no turns yet"


def test_each_turn_says_which_edge_and_client_sent_it(manager: SessionManager) -> None:
    """A session shared across editors says which wrote each turn (`turn/start`)."""
    acp = make_lifecycle(manager, "acp-inst", edge="acp", client="Zed")
    run_turn(acp, "from Zed", "ok")
    session_id = acp.session_id
    acp.close()
    lsp = make_lifecycle(manager, "lsp-inst", edge="lsp", client="Neovim")
    lsp.resume(session_id)
    run_turn(lsp, "from Neovim", "ok")
    lsp.close()
    starts = [
        e.data
        for e in scan_log(manager.layout.log_path(session_id)).events
        if e.type == "turn/start"
    ]
    assert [(d.input, d.edge, d.client) for d in starts] == [
        ("from Zed", "acp", "Zed"),
        ("from Neovim", "lsp", "Neovim"),
    ]
    unnamed = make_lifecycle(manager, "plain")
    run_turn(unnamed, "from a test", "ok")
    events = scan_log(manager.layout.log_path(unnamed.session_id)).events
    first = next(e for e in events if e.type == "turn/start")
    assert first.data.model_dump(exclude_none=True) == {"input": "from a test"}
    unnamed.close()
