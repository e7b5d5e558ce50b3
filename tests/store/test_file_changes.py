"""What each change of a file replaced and wrote (#42), recorded the same in both stores.

A tool's write (`tool/result.files`), a restore's (`session/rewind.files`) and a drift's
(`workspace/drift.changes`) carry the content digests before and after; the contents are
blobs shared with the checkpoints, kept by the collector while a log names them and gone
once the sessions naming them are deleted.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import pytest

from engine.model.tools import ToolDeps, write_file
from session import file_changes
from session.deletion import delete_unless_in_use
from session.file_changes import METADATA_WITHHELD
from session.lifecycle import SessionLifecycle
from session.lifecycle.changes import DRIFT_COPIES
from session.lifecycle.changes import TOO_MANY_WITHHELD as TOO_MANY
from session.lifecycle.values import LifecycleConfig
from session.local.checkpoint_files import CheckpointFiles
from session.store.backend import SessionStore
from tests.store.conftest import Backend
from tests.unit.test_tools import NoEditor

V0 = b"name: demo\n"
V1 = b"name: demo\nlevel: 1\n"
V2 = b"name: demo\nlevel: 2\n"
V3 = b"name: demo\nlevel: 2\nport: 8080\n"  # the user's hand edit


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def open_lifecycle(store: SessionStore, instance: str, **config: Any) -> SessionLifecycle:
    lifecycle = SessionLifecycle(store, instance, LifecycleConfig(**config))
    lifecycle.resume_or_start(lifecycle.find_previous(), True)
    return lifecycle


async def turn_of_writes(lifecycle: SessionLifecycle, *writes: tuple[str, bytes]) -> None:
    """One turn, one step, a `write_file` call per write, recorded as the runner does."""
    deps = ToolDeps(lifecycle, NoEditor())
    recorder = lifecycle.begin_turn("write them")
    recorder.start_step([])
    for n, (path, content) in enumerate(writes):
        call = f"call-{n}"
        recorder.tool_call(call, "write_file", {"path": path})
        result = await write_file(deps, path, content.decode(), call)
        recorder.tool_result(call, "write_file", result)
    recorder.end_step()
    recorder.end("completed")


def events(store: SessionStore, session_id: str, type_: str) -> list[dict[str, Any]]:
    return [
        e.model_dump(mode="json")["data"]
        for e in store.read_events(session_id).events
        if e.type == type_
    ]


def blobs_of(backend: Backend) -> int:
    """Count the stored blobs (not the local store's lock file)."""
    local = backend.kind == "local"
    lock = backend.store.layout.blobs_dir / ".lock" if local else None  # type: ignore[attr-defined]
    return backend.blob_count() - (1 if lock is not None and lock.exists() else 0)


def change(
    path: str, before: bytes | None, after: bytes | None, withheld: str | None = None
) -> dict[str, Any]:
    return {
        "path": path,
        "before": None if before is None else sha(before),
        "after": None if after is None else sha(after),
        "withheld": withheld,
    }


async def test_writes_restores_and_drift_record_their_contents(backend: Backend) -> None:
    store = backend.store
    root = store.workspace_root
    (root / "config.yaml").write_bytes(V0)
    lifecycle = open_lifecycle(store, "one")
    first = lifecycle.session_id
    await turn_of_writes(
        lifecycle,
        ("config.yaml", V1),
        ("config.yaml", V2),
        ("new.md", b"hi\n"),
        ("new.md", b"hi\n"),  # written as it was: no change (and not an old log's write)
    )

    results = events(store, first, "tool/result")
    assert [r["files"] for r in results] == [
        [change("config.yaml", V0, V1)],
        [change("config.yaml", V1, V2)],
        [change("new.md", None, b"hi\n")],
        [],
    ]
    blobs = store.checkpoint_store()
    for content in (V0, V1, V2, b"hi\n"):
        assert blobs.read_blob(sha(content)) == content

    # The user edits it by hand: the live watcher's drift names what it replaced and wrote.
    (root / "config.yaml").write_bytes(V3)
    assert lifecycle.check_live_drift(["config.yaml"]) is not None
    (drift,) = events(store, first, "workspace/drift")
    assert drift["changes"] == [change("config.yaml", V2, V3)]
    assert blobs.read_blob(sha(V3)) == V3

    # Restoring the checkpoint of turn 1 writes V2 back over V3 (and deletes nothing).
    (checkpoint,) = [r for r in lifecycle.list_checkpoints() if r.title == "After turn 1"]
    lifecycle.restore(lifecycle.plan_restore(checkpoint.number))
    (rewind,) = events(store, first, "session/rewind")
    assert rewind["files"] == [change("config.yaml", V3, V2)]
    assert (root / "config.yaml").read_bytes() == V2

    # The resume check: edited while no server ran, seen (and kept) when the session resumes.
    lifecycle.close()
    (root / "config.yaml").write_bytes(V1 + b"# resumed\n")
    again = open_lifecycle(store, "one")
    assert again.session_id == first
    resumed = events(store, first, "workspace/drift")[-1]
    assert resumed["source"] == "resume"
    assert resumed["changes"] == [change("config.yaml", V2, V1 + b"# resumed\n")]
    assert blobs.read_blob(sha(V1 + b"# resumed\n")) == V1 + b"# resumed\n"
    again.close()


async def test_the_collector_keeps_what_a_log_names_until_its_sessions_go(
    backend: Backend,
) -> None:
    store = backend.store
    root = store.workspace_root
    (root / "notes.txt").write_bytes(V0)  # not tracked: no checkpoint keeps it
    one = open_lifecycle(store, "one")
    await turn_of_writes(one, ("notes.txt", V1))
    two = open_lifecycle(store, "two")
    await turn_of_writes(two, ("notes.txt", V2))  # V1 -> V2: V1 is named by both
    first, second = one.session_id, two.session_id
    one.close()
    two.close()

    blobs = store.checkpoint_store()
    assert blobs.collect_garbage() == []  # every blob is named by a log (or a checkpoint)
    assert all(blobs.read_blob(sha(v)) == v for v in (V0, V1, V2))

    assert delete_unless_in_use(store, first) is not None
    assert blobs.read_blob(sha(V0)) is None  # only the first session named it
    assert blobs.read_blob(sha(V1)) == V1 and blobs.read_blob(sha(V2)) == V2

    assert delete_unless_in_use(store, second) is not None
    # nothing outlives the sessions, whatever its age (no grace period)
    assert all(blobs.read_blob(sha(v)) is None for v in (V0, V1, V2))


async def test_a_metadata_session_keeps_digests_only(backend: Backend) -> None:
    store = backend.store
    (store.workspace_root / "config.yaml").write_bytes(V0)
    lifecycle = open_lifecycle(store, "meta", persistence="metadata")
    await turn_of_writes(lifecycle, ("config.yaml", V1))
    (result,) = events(store, lifecycle.session_id, "tool/result")
    assert result["files"] == [change("config.yaml", V0, V1, METADATA_WITHHELD)]
    lifecycle.close()
    assert blobs_of(backend) == 0


def test_a_log_naming_blobs_it_never_wrote_keeps_them(backend: Backend) -> None:
    """A log that names blobs it never wrote (a fork's copied prefix) still keeps them."""
    store = backend.store
    data = b"forked content\n"
    digest = store.put_blob(data)
    session = store.create_session(instance_id="x")
    session.append("turn/start", {"input": "x"}, turn=1)
    session.append(
        "tool/result",
        {"tool_call_id": "c", "name": "write_file", "files": [change("a.md", None, data)]},
        turn=1,
        step=1,
    )
    session.append("turn/end", {"reason": "completed"}, turn=1)
    session.close()
    blobs = store.checkpoint_store()
    assert blobs.collect_garbage() == []
    assert blobs.read_blob(digest) == data


def test_a_large_drift_keeps_a_bounded_number_of_contents(backend: Backend) -> None:
    """A branch switch changing many files records every digest and reads none of them."""
    store = backend.store
    templates = store.workspace_root / "templates"
    templates.mkdir()
    names = [f"templates/t{n:02d}.md" for n in range(DRIFT_COPIES + 8)]
    for name in names:
        (store.workspace_root / name).write_bytes(b"old " + name.encode())
    lifecycle = open_lifecycle(store, "big")
    for name in names:
        (store.workspace_root / name).write_bytes(b"new " + name.encode())
    assert lifecycle.check_live_drift(names) is not None
    (drift,) = events(store, lifecycle.session_id, "workspace/drift")
    expected = [change(n, b"old " + n.encode(), b"new " + n.encode(), TOO_MANY) for n in names]
    assert drift["changes"] == expected
    blobs = store.checkpoint_store()
    assert not [n for n in names if blobs.read_blob(sha(b"new " + n.encode())) is not None]
    few = names[:DRIFT_COPIES]  # as many as it keeps: each kept
    for name in few:
        (store.workspace_root / name).write_bytes(b"newer " + name.encode())
    assert lifecycle.check_live_drift(few) is not None
    drift = events(store, lifecycle.session_id, "workspace/drift")[-1]
    assert [c["withheld"] for c in drift["changes"]] == [None] * DRIFT_COPIES
    assert all(blobs.read_blob(sha(b"newer " + n.encode())) is not None for n in few)
    lifecycle.close()


async def test_recording_adds_no_fsync_and_a_checkpoint_makes_its_copy_durable(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change's blob is written unsynced; a checkpoint keeping the same content syncs it."""
    if backend.kind != "local":
        pytest.skip("the local files' fsyncs (PostgreSQL commits the blob without a flush)")
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    store = backend.store
    (store.workspace_root / "agent_spec.md").write_bytes(V0)  # tracked: checkpointed
    lifecycle = open_lifecycle(store, "sync")
    deps = ToolDeps(lifecycle, NoEditor())
    recorder = lifecycle.begin_turn("write it")
    recorder.start_step([])
    recorder.tool_call("c", "write_file", {"path": "agent_spec.md"})
    monkeypatch.setattr(os, "fsync", fsync)
    recorder.tool_result(
        "c", "write_file", await write_file(deps, "agent_spec.md", V1.decode(), "c")
    )
    assert synced == []  # the write, its blobs and its event: no fsync on the turn's path
    recorder.end_step()
    recorder.end("completed")  # the turn's end, then the checkpoint "After turn 1"
    blob = str(CheckpointFiles(store.layout).blob_path(sha(V1)))  # type: ignore[attr-defined]
    assert blob in synced
    lifecycle.close()


def test_refs_started_beside_a_long_log_are_completed_by_the_collector(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session's first kept change does not read a long log: the collector does, once."""
    if backend.kind != "local":
        pytest.skip("the local store's files.refs (PostgreSQL reads the events)")
    monkeypatch.setattr(file_changes, "SEED_SCAN_BYTES", 0)  # every log is "long"
    store = backend.store
    old, new = b"named before the refs\n", b"named with them\n"
    store.put_blob(old)
    session = store.create_session(instance_id="x")
    step: dict[str, Any] = {"turn": 1, "step": 1}
    session.append("turn/start", {"input": "x"}, turn=1)
    files = [change("a.md", None, old)]
    session.append("tool/result", {"tool_call_id": "a", "name": "w", "files": files}, **step)
    blobs = store.checkpoint_store()
    with blobs.keeping(session.session_id, [new]):
        files = [change("a.md", old, new)]
        session.append("tool/result", {"tool_call_id": "b", "name": "w", "files": files}, **step)
    refs_dir = store.layout.checkpoints_dir / session.session_id  # type: ignore[attr-defined]
    assert file_changes.read_refs(refs_dir) == ({sha(new)}, False)
    assert blobs.collect_garbage() == []
    assert file_changes.read_refs(refs_dir) == ({sha(old), sha(new)}, True)
    session.close()


async def test_a_store_that_cannot_keep_the_contents_costs_the_diffs_not_the_turn(
    backend: Backend,
) -> None:
    if backend.kind != "local":
        pytest.skip("breaks the local blob directory")
    store = backend.store
    blobs_dir = store.layout.blobs_dir  # type: ignore[attr-defined]
    blobs_dir.parent.mkdir(parents=True, exist_ok=True)
    blobs_dir.write_bytes(b"not a directory")  # every blob write fails
    lifecycle = open_lifecycle(store, "broken")
    deps = ToolDeps(lifecycle, NoEditor())
    recorder = lifecycle.begin_turn("write it")
    recorder.start_step([])
    recorder.tool_call("c", "write_file", {"path": "notes.md"})
    recorder.tool_result("c", "write_file", await write_file(deps, "notes.md", "hello\n", "c"))
    (result,) = events(store, lifecycle.session_id, "tool/result")
    (recorded,) = result["files"]
    assert recorded["after"] == sha(b"hello\n") and recorded["before"] is None
    assert recorded["withheld"].startswith("not kept: ")
    assert (store.workspace_root / "notes.md").read_bytes() == b"hello\n"
