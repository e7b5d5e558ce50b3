"""Fork, checkpoints with restore, and compaction, on real sessions."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter

from session.compaction import FALLBACK_LABEL, extractive_summary, history_tokens
from session.derive.messages import COMPACTION_PREFIX
from session.derive.transcript import transcript
from session.fork import ForkError, fork_session
from session.local.manager import SessionManager
from session.log.reader import scan_log
from session.storage import StorageError

from .conftest import make_lifecycle, request, response, run_turn


def tree_bytes(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


# -- fork ---------------------------------------------------------------------------


def test_fork_copies_the_prefix_with_lineage_and_leaves_the_parent_untouched(
    manager: SessionManager,
) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    boundary = lc.current.state.last_seq
    run_turn(lc, "two", "second")
    parent = lc.session_id
    lc.close()
    before = tree_bytes(manager.layout.sessions_dir)
    result = fork_session(manager, parent, boundary, instance_id="inst")
    child = result.session
    try:
        assert child.session_id != parent and result.boundary == boundary
        assert child.state.parent_session_id == parent and child.state.fork_boundary == boundary
        assert child.state.turns == 1
        assert child.history.messages() == [request("one"), response("first")]
        events = scan_log(manager.layout.log_path(child.session_id)).events
        assert events[0].type == "session/start"
        assert events[0].data.parent_session_id == parent  # type: ignore[union-attr]
        assert [e.seq for e in events] == list(range(boundary + 1))
        parent_lines = manager.layout.log_path(parent).read_bytes().splitlines()
        child_lines = manager.layout.log_path(child.session_id).read_bytes().splitlines()
        assert child_lines[1:] == parent_lines[1 : boundary + 1]  # byte for byte
    finally:
        child.close()
    after = {k: v for k, v in tree_bytes(manager.layout.sessions_dir).items() if k in before}
    assert after == before  # the parent's files are untouched


def test_fork_boundaries_are_checked(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    end_of_one = lc.current.state.last_seq
    run_turn(lc, "two", "second")
    sid = lc.session_id
    lc.close()
    with pytest.raises(ForkError, match="inside turn 2"):
        fork_session(manager, sid, end_of_one + 2)
    with pytest.raises(ForkError, match="out of range"):
        fork_session(manager, sid, 10_000)
    with pytest.raises(ForkError, match="out of range"):
        fork_session(manager, sid, -1)
    whole = fork_session(manager, sid)  # default: the last event
    assert whole.session.state.turns == 2
    whole.session.close()


def test_fork_before_a_turn_takes_the_turns_before_it(manager: SessionManager) -> None:
    """From a file's timeline: "this turn broke it" → a child that has only the turns before."""
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    end_of_one = lc.current.state.last_seq
    run_turn(lc, "two", "second")
    run_turn(lc, "three", "third")
    sid = lc.session_id
    lc.close()
    child = fork_session(manager, sid, before_turn=2)
    try:
        assert child.boundary == end_of_one
        assert child.session.state.turns == 1
        assert child.session.history.messages() == [request("one"), response("first")]
    finally:
        child.session.close()
    with pytest.raises(ForkError, match=r"no turn 9 \(turns 1–3\)"):
        fork_session(manager, sid, before_turn=9)
    with pytest.raises(ForkError, match="not both"):
        fork_session(manager, sid, end_of_one, before_turn=2)


def test_fork_defaults_to_before_an_open_turn(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    end_of_one = lc.current.state.last_seq
    lc.begin_turn("still streaming")  # open: its end is not in the log
    result = fork_session(manager, lc.session_id)
    assert result.boundary == end_of_one and result.session.state.turns == 1
    result.session.close()
    lc.close()


def test_child_continues_numbering(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    sid = lc.session_id
    lc.close()
    child = fork_session(manager, sid).session
    child.close()
    lc2 = make_lifecycle(manager)
    lc2.resume(child.session_id)
    assert run_turn(lc2, "two", "second").number == 2
    lc2.close()


# -- checkpoints -------------------------------------------------------------------------


def test_save_makes_a_restorable_checkpoint(manager: SessionManager, workspace: Path) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    saved = lc.explicit_save()
    spec_v1 = (workspace / "agent_spec.md").read_bytes()
    (workspace / "agent_spec.md").write_text("# rewritten\n")
    (workspace / "templates" / "new.txt").write_text("created later")
    run_turn(lc, "two", "second")
    records = lc.list_checkpoints()
    assert [r.number for r in records] == [1] and records[0].title == "Turn 1: one"
    assert lc.explicit_save().checkpoint == 2
    assert lc.list_checkpoints()[-1].title == "Turn 2: two"  # what turn 2 asked, not turn 1
    digest = hashlib.sha256(spec_v1).hexdigest()
    blob = manager.layout.blobs_dir / digest[:2] / digest
    assert blob.read_bytes() == spec_v1 and (blob.stat().st_mode & 0o777) == 0o600

    plan = lc.plan_restore(saved.checkpoint)
    assert [w[0] for w in plan.writes] == ["agent_spec.md"]
    assert plan.created_after == ["templates/new.txt"]
    restored = lc.restore(plan)
    assert restored == ["agent_spec.md"]
    assert (workspace / "agent_spec.md").read_bytes() == spec_v1
    assert (workspace / "templates" / "new.txt").exists()  # reported, not deleted
    assert lc.message_history() == [request("one"), response("first")]
    events = scan_log(manager.layout.log_path(lc.session_id)).events
    assert events[-1].type == "session/rewind"
    assert [i.text for i in transcript(events) if i.role == "user"] == ["one"]
    assert any(e.type == "turn/start" and e.data.input == "two" for e in events)  # still in the log
    # the restore itself is undoable: a checkpoint of the state before it was made
    before_restore = lc.list_checkpoints()[-1]
    assert before_restore.title == "Before restoring checkpoint 1" and before_restore.auto
    lc.restore(lc.plan_restore(before_restore.number))
    assert (workspace / "agent_spec.md").read_text() == "# rewritten\n"
    assert [m["parts"][0]["content"] for m in lc.message_history() if m["kind"] == "request"] == [
        "one",
        "two",
    ]
    lc.close()


def test_completed_turn_that_wrote_files_is_a_checkpoint(
    manager: SessionManager, workspace: Path
) -> None:
    lc = make_lifecycle(manager)
    turn = lc.begin_turn("write it")
    (workspace / "templates" / "prompt.txt").write_text("assistant version")
    lc.note_assistant_write("templates/prompt.txt", b"assistant version")
    turn.end("completed")
    records = lc.list_checkpoints()
    assert len(records) == 1 and records[0].auto and records[0].title == "After turn 1"
    lc.close()


def test_restore_never_follows_symlinks_or_leaves_the_workspace(
    manager: SessionManager, workspace: Path, tmp_path: Path
) -> None:
    lc = make_lifecycle(manager)
    lc.explicit_save()
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch")
    (workspace / "agent_spec.md").unlink()
    (workspace / "agent_spec.md").symlink_to(victim)
    plan = lc.plan_restore(1)
    assert "agent_spec.md" in plan.skipped and plan.writes == []
    lc.restore(plan)
    assert victim.read_text() == "do not touch"
    from session.workspace.files import write_workspace_file

    with pytest.raises(StorageError):
        write_workspace_file(workspace, "../escape.txt", b"x")
    assert not (workspace.parent / "escape.txt").exists()
    lc.close()


def test_unknown_checkpoint_is_a_clear_error(manager: SessionManager) -> None:
    from session.errors import SessionError

    lc = make_lifecycle(manager)
    lc.explicit_save()
    with pytest.raises(SessionError, match=r"no checkpoint 7 .*\(it has 1\)"):
        lc.plan_restore(7)
    lc.close()


def test_tampered_blob_is_not_restored(manager: SessionManager, workspace: Path) -> None:
    lc = make_lifecycle(manager)
    lc.explicit_save()
    digest = lc.list_checkpoints()[0].files["agent_spec.md"]
    blob = manager.layout.blobs_dir / digest[:2] / digest
    os.chmod(blob, 0o600)
    blob.write_bytes(b"evil")
    (workspace / "agent_spec.md").write_text("changed")
    plan = lc.plan_restore(1)
    assert "agent_spec.md" in plan.skipped
    lc.close()


# -- compaction ---------------------------------------------------------------------------


def test_compaction_keeps_the_tail_and_pairs_and_lowers_tokens(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    for i in range(8):
        run_turn(lc, f"question {i} " + "x" * 400, f"answer {i} " + "y" * 400)
    before = lc.message_history()
    plan = lc.plan_compaction(keep_tokens=300)
    assert plan is not None
    summary = extractive_summary(plan.old, lc.current.state.decisions)
    assert summary.summary.startswith(FALLBACK_LABEL)
    messages, tokens = lc.compact(plan, summary, fallback=True)
    after = lc.message_history()
    assert tokens < history_tokens(before) and messages < len(before)
    assert after[0]["parts"][0]["content"].startswith(COMPACTION_PREFIX + FALLBACK_LABEL)
    assert after[-2:] == before[-2:]  # the newest turn verbatim
    ModelMessagesTypeAdapter.validate_python(after)
    assert lc.current.state.compacted_history_summary == summary.summary
    sid = lc.session_id
    lc.close()
    lc2 = make_lifecycle(manager)
    lc2.resume(sid)
    assert "## Previous Session Summary" in lc2.resume_context
    assert lc2.message_history() == after
    lc2.close()


def test_nothing_to_compact_in_a_short_session(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "only", "one")
    assert lc.plan_compaction(keep_tokens=10) is None
    lc.close()


def test_fork_after_a_crash_repaired_log_keeps_every_completed_turn(
    manager: SessionManager,
) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    run_turn(lc, "two", "second")
    sid = lc.session_id
    assert lc.session is not None and lc.session.lock is not None
    lc.session.log.close()
    lc.session.lock.release()
    lc.session = None
    with open(manager.layout.log_path(sid), "ab") as fh:  # the process died mid-write
        fh.write(b'{"seq": 99, "ts": "2026-12-01T00:00:00+00:00", "type": "turn/st')
    lc2 = make_lifecycle(manager)
    lc2.resume(sid)  # repairs: terminates the torn line, records session/recover
    run_turn(lc2, "three", "third")
    run_turn(lc2, "four", "partial", end=None)  # and crashes again mid-turn
    assert lc2.session is not None and lc2.session.lock is not None
    lc2.session.log.close()
    lc2.session.lock.release()
    lc2.session = None
    lc3 = make_lifecycle(manager)
    lc3.resume(sid)  # closes turn 4 as interrupted
    lc3.close()
    parent = scan_log(manager.layout.log_path(sid))
    assert any(p.kind == "recovered" for p in parent.problems)
    child = fork_session(manager, sid).session
    events = scan_log(manager.layout.log_path(child.session_id)).events
    inputs = [e.data.input for e in events if e.type == "turn/start"]
    assert inputs == ["one", "two", "three", "four"]  # nothing stops at the tear
    ends = [e.data.reason for e in events if e.type == "turn/end"]
    assert ends == ["completed", "completed", "completed", "interrupted"]
    assert [e.seq for e in events] == list(range(len(events)))
    child.close()


def test_a_tracked_file_with_a_secret_is_never_copied_into_the_store(
    manager: SessionManager, workspace: Path, home: Path
) -> None:
    secret = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX0123456789"
    (workspace / "agent_spec.md").write_text(f"# Spec\napi_key = {secret}\n")
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    saved = lc.explicit_save()
    (workspace / "agent_spec.md").write_text("# Spec\nrewritten\n")
    (workspace / "templates" / "prompt.txt").write_text("changed\n")
    plan = lc.plan_restore(saved.checkpoint, {})
    assert plan.withheld == {"agent_spec.md": "not kept: contains a secret"}
    assert [path for path, _ in plan.writes] == ["templates/prompt.txt"]
    lc.restore(plan)
    assert (workspace / "agent_spec.md").read_text() == "# Spec\nrewritten\n"  # left alone
    lc.close()
    for path in home.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def blob_names(manager: SessionManager) -> set[str]:
    return {p.name for p in manager.layout.blobs_dir.glob("*/*") if p.is_file()}


def test_a_record_never_outlives_its_blobs(manager: SessionManager, workspace: Path) -> None:
    """A blob written, collected before its record is written: the record is refused."""
    from session.checkpoints import CheckpointRecord
    from session.local.checkpoint_files import CheckpointFiles
    from session.storage import StorageError

    store = CheckpointFiles(manager.layout)
    manager.layout.ensure_dirs()
    digest = store.write_blob(b"content of a file\n")
    assert store.collect_garbage() == [store.blob_path(digest)]  # no record refers to it yet
    record = CheckpointRecord(
        number=1, session_id="a1b2c3d4e5f6", turn=1, title="t", seq=3, files={"f.txt": digest}
    )
    with pytest.raises(StorageError, match="gone from the store"):
        store.write_record(record)
    assert not (manager.layout.checkpoints_dir / "a1b2c3d4e5f6" / "1.json").exists()
    store.write_blob(b"content of a file\n")
    store.write_record(record)  # with its blob there again
    assert store.collect_garbage() == []
    assert store.read_blob(digest) == b"content of a file\n"


def test_the_collector_waits_for_a_checkpoint_being_written(
    manager: SessionManager, workspace: Path
) -> None:
    """While a checkpoint's blobs are written (shared lock), collecting waits for its record."""
    import threading

    from session.local.checkpoint_files import CheckpointFiles

    store = CheckpointFiles(manager.layout)
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    collected: list[object] = []
    with store.writing():
        digest = store.write_blob(b"a file being checkpointed\n")
        collector = threading.Thread(target=lambda: collected.extend(store.collect_garbage()))
        collector.start()
        wait_for_blocked_flock()
        lc.explicit_save()  # another checkpoint; ours is written next
        from session.checkpoints import CheckpointRecord

        record = CheckpointRecord(
            number=99, session_id=lc.session_id, turn=1, title="t", seq=1, files={"x": digest}
        )
        store.commit(record)
    collector.join()
    assert store.blob_path(digest) not in collected
    assert store.read_blob(digest) == b"a file being checkpointed\n"
    lc.close()


def wait_for_blocked_flock() -> None:
    """Wait until /proc/locks shows a process waiting for a lock (`->`): the collector."""
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any("->" in line and "FLOCK" in line for line in open("/proc/locks")):  # noqa: SIM115
            return
        time.sleep(0.01)
    raise AssertionError("the collector never waited for the lock")


def test_blobs_no_checkpoint_uses_are_collected_shared_ones_kept(
    manager: SessionManager, workspace: Path
) -> None:
    keep = make_lifecycle(manager, instance="keep")
    run_turn(keep, "one", "first")
    keep.explicit_save()  # refers to the spec and template as they are now
    (workspace / "templates" / "extra.txt").write_text("only the other session has this\n")
    gone = make_lifecycle(manager, instance="gone", tracked=("agent_spec.md", "templates/**"))
    run_turn(gone, "two", "second")
    gone.explicit_save()
    store = manager.checkpoint_store()
    blobs = blob_names(manager)
    assert len(blobs) == 3  # spec and prompt shared, extra.txt only in `gone`
    gone_id = gone.session_id
    gone.reset()  # at once: however young, a blob no record refers to goes
    left = blob_names(manager)
    assert len(left) == 2 and left < blobs  # only the blob no remaining checkpoint uses
    assert store.collect_garbage() == []
    assert not (manager.layout.checkpoints_dir / gone_id).exists()
    keep.close()
