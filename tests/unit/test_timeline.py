"""A file's timeline (session/timeline/): the index, the query, the diffs, fileVersion."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from session.local.manager import SessionManager
from session.search.when import parse_when
from session.timeline import (
    ChangeNotFoundError,
    TimelinePathError,
    file_history,
    file_version,
    workspace_path,
)
from session.timeline.index import INDEX_FILE, TimelineIndex
from session.timeline.project import OLD_REASON
from tests.file_timeline import V1, V2, V3, V4, change, digest, write_history, write_old_style
from tests.search_timeline import NOW, injected_clock


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SessionManager, str]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    manager = SessionManager(workspace, home=tmp_path / "home")
    writer = manager.create_session()
    write_history(writer, manager, injected_clock(monkeypatch))
    writer.close()
    return manager, writer.session_id


def kinds(manager: SessionManager, **options: object) -> list[tuple[str, int | None, int | None]]:
    found = file_history(manager, manager.workspace_root, "config.yaml", **options)  # type: ignore[arg-type]
    return [(c.kind, c.turn, c.step) for c in found.changes]


def test_every_change_newest_first_with_its_turn_message_and_diff(
    project: tuple[SessionManager, str],
) -> None:
    manager, session_id = project
    found = file_history(manager, manager.workspace_root, "config.yaml")
    assert found.path == "config.yaml" and not found.truncated
    assert [(c.kind, c.turn, c.step, c.tool) for c in found.changes] == [
        ("restore", None, None, None),
        ("write", 2, 1, "write_file"),
        ("drift", None, None, None),
        ("write", 1, 2, "write_file"),
        ("write", 1, 1, "write_file"),  # created (before null): still a write
    ]
    restore, port, drift, level, first = found.changes
    assert {c.session_id for c in found.changes} == {session_id}
    assert {c.session_title for c in found.changes} == {"make the config"}
    assert (port.user_message, level.user_message, drift.user_message) == (
        "add the port",
        "make the config",
        None,
    )
    assert (first.before_sha256, first.after_sha256) == (None, digest(V1))
    assert first.diff is not None and "+name: demo" in first.diff
    assert port.diff is not None
    assert port.diff.startswith("--- a/config.yaml\n+++ b/config.yaml\n")
    assert "+port: 8080" in port.diff and "-level" not in port.diff
    assert drift.diff is not None and "-level: 1\n+level: 2" in drift.diff
    assert restore.after_sha256 == digest(V1) and restore.reason is None
    assert restore.ts > port.ts > drift.ts > level.ts > first.ts


def test_since_until_line_and_limit(project: tuple[SessionManager, str]) -> None:
    manager, _ = project
    now = lambda: NOW  # noqa: E731
    today = parse_when("today", now=now)
    yesterday_end = parse_when("yesterday", end=True, now=now)
    assert [k[0] for k in kinds(manager, since=today)] == ["restore", "write", "drift"]
    assert kinds(manager, until=yesterday_end) == [("write", 1, 2), ("write", 1, 1)]
    # which step introduced a line (or took it away)
    assert kinds(manager, line="port: 8080") == [("restore", None, None), ("write", 2, 1)]
    assert kinds(manager, line="level: 1") == [("drift", None, None), ("write", 1, 2)]
    assert kinds(manager, line="nowhere") == []
    cut = file_history(manager, manager.workspace_root, "config.yaml", limit=2)
    assert cut.truncated and len(cut.changes) == 2
    whole = file_history(manager, manager.workspace_root, "config.yaml", limit=5)
    assert not whole.truncated


def test_paths_absolute_inside_accepted_outside_refused(
    project: tuple[SessionManager, str],
) -> None:
    manager, _ = project
    root = manager.workspace_root
    assert workspace_path(root, str(root / "config.yaml")) == "config.yaml"
    assert workspace_path(root, "./a//b.txt") == "a/b.txt"
    found = file_history(manager, root, str(root / "config.yaml"))
    assert len(found.changes) == 5
    for bad in ("../x", "a/../../x", "/etc/passwd", str(root) + "-other/x", "", "a\x00b", "."):
        with pytest.raises(TimelinePathError):
            workspace_path(root, bad)
    assert file_history(manager, root, "other.txt").changes == []


def test_file_version_each_side(project: tuple[SessionManager, str]) -> None:
    manager, session_id = project
    root = manager.workspace_root
    before = file_version(manager, root, "config.yaml", session_id, turn=1, step=1)
    assert (before.sha256, before.text, before.reason) == (None, None, None)  # did not exist
    after = file_version(manager, root, "config.yaml", session_id, turn=2, step=1, side="after")
    assert (after.sha256, after.text) == (digest(V4), V4)
    whole_turn = file_version(manager, root, "config.yaml", session_id, turn=1, side="after")
    assert whole_turn.text == V2  # a turn's last change
    drift = file_history(manager, root, "config.yaml").changes[2]
    seen = file_version(manager, root, "config.yaml", session_id, ts=drift.ts, side="after")
    assert seen.text == V3
    with pytest.raises(ChangeNotFoundError):
        file_version(manager, root, "config.yaml", session_id, turn=9)
    with pytest.raises(ChangeNotFoundError):
        file_version(manager, root, "config.yaml", "0" * 12, turn=1)


def test_a_missing_blob_or_binary_side_gives_no_diff_but_a_reason(
    project: tuple[SessionManager, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, session_id = project
    writer = manager.open_session(session_id)
    ghost = "f" * 64
    manager.put_blob(b"\x00\x01binary")
    binary = __import__("hashlib").sha256(b"\x00\x01binary").hexdigest()
    files = [
        {"path": "config.yaml", "before": digest(V1), "after": ghost, "withheld": "a secret"},
        {"path": "logo.png", "before": None, "after": binary},
    ]
    writer.append("turn/start", {"input": "more"}, turn=3)
    result = {"tool_call_id": "x", "name": "write_file", "content": "ok", "files": files}
    writer.append("tool/result", result, turn=3, step=1)
    writer.close()
    newest = file_history(manager, manager.workspace_root, "config.yaml").changes[0]
    assert (newest.turn, newest.diff, newest.reason) == (3, None, "a secret")
    logo = file_history(manager, manager.workspace_root, "logo.png").changes[0]
    assert (logo.diff, logo.reason) == (None, "binary content")
    version = file_version(
        manager, manager.workspace_root, "logo.png", session_id, turn=3, side="after"
    )
    assert (version.sha256, version.text, version.reason) == (binary, None, "binary content")


def test_old_logs_list_a_write_without_contents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    manager = SessionManager(workspace, home=tmp_path / "home")
    writer = manager.create_session()
    write_old_style(writer)
    writer.close()
    (only,) = file_history(manager, workspace, "config.yaml").changes
    assert (only.kind, only.turn, only.step, only.tool) == ("write", 1, 1, "write_file")
    assert (only.before_sha256, only.after_sha256, only.diff) == (None, None, None)
    assert only.reason == OLD_REASON and only.user_message == "old times"
    version = file_version(manager, workspace, "config.yaml", writer.session_id, turn=1)
    assert version.reason == OLD_REASON
    assert file_history(manager, workspace, "config.yaml", line="x").changes == []
    # written now, an empty `files` is a write that changed nothing: not listed
    again = manager.create_session()
    again.append("turn/start", {"input": "same again"}, turn=1)
    call = {"tool_call_id": "n1", "name": "write_file", "args": {"path": "config.yaml"}}
    again.append("tool/call", call, turn=1, step=1)
    result = {"tool_call_id": "n1", "name": "write_file", "content": "ok", "files": []}
    again.append("tool/result", result, turn=1, step=1)
    again.close()
    assert len(file_history(manager, workspace, "config.yaml").changes) == 1


def test_the_index_catches_up_cheaply_and_is_rebuilt_when_damaged(
    project: tuple[SessionManager, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, session_id = project
    index = TimelineIndex.for_project(manager.layout)
    assert index.catch_up(manager.layout) == 1
    assert index.catch_up(manager.layout) == 0  # nothing appended: no log read
    writer = manager.open_session(session_id)
    writer.append("turn/start", {"input": "again"}, turn=3)
    writer.close()
    assert index.catch_up(manager.layout) == 1
    index.close()
    path = manager.layout.project_dir / INDEX_FILE
    assert os.stat(path).st_mode & 0o777 == 0o600
    path.write_bytes(b"garbage" * 1000)
    for name in ("-wal", "-shm"):
        path.with_name(path.name + name).unlink(missing_ok=True)
    assert len(file_history(manager, manager.workspace_root, "config.yaml").changes) == 5
    # a log replaced (shorter) is indexed again from its start
    log = manager.layout.log_path(session_id)
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:8]))  # turn 1, step 1 only
    assert kinds(manager) == [("write", 1, 1)]
    # a vanished session's rows go
    log.unlink()
    assert kinds(manager) == []


def test_a_forks_copy_of_its_parents_changes_is_listed_once(
    project: tuple[SessionManager, str],
) -> None:
    from session.fork import fork_session

    manager, session_id = project
    child = fork_session(manager, session_id)
    assert child
    assert len(file_history(manager, manager.workspace_root, "config.yaml").changes) == 5


def test_times_are_kept_to_the_microsecond() -> None:
    from session.timeline.index import from_micros, to_micros

    moment = datetime(2026, 12, 5, 9, 0, 1, 123456, tzinfo=UTC)
    assert from_micros(to_micros(moment)) == moment
    assert from_micros(to_micros(moment - timedelta(days=20000))) == moment - timedelta(days=20000)


def test_a_deletion_and_an_edit_tool(project: tuple[SessionManager, str]) -> None:
    manager, session_id = project
    writer = manager.open_session(session_id)
    writer.append("turn/start", {"input": "tidy up"}, turn=3)
    edit = [change(manager, "config.yaml", V1, V2)]
    result = {"tool_call_id": "e", "name": "edit_file", "content": "ok", "files": edit}
    writer.append("tool/result", result, turn=3, step=1)
    gone = [change(manager, "config.yaml", V2, None)]
    result = {"tool_call_id": "d", "name": "write_file", "content": "ok", "files": gone}
    writer.append("tool/result", result, turn=3, step=2)
    writer.close()
    found = file_history(manager, manager.workspace_root, "config.yaml").changes
    assert [(c.kind, c.tool, c.step) for c in found[:2]] == [
        ("delete", "write_file", 2),
        ("edit", "edit_file", 1),
    ]
    deleted = found[0].diff
    assert deleted is not None and "-level: 1" in deleted
    assert [line for line in deleted.splitlines() if line.startswith("+")] == ["+++ b/config.yaml"]
    assert kinds(manager, line="level: 1")[:2] == [("delete", 3, 2), ("edit", 3, 1)]


def test_without_a_usable_index_the_logs_are_read(
    project: tuple[SessionManager, str], tmp_path: Path
) -> None:
    manager, _ = project
    indexed = kinds(manager)
    path = manager.layout.project_dir / INDEX_FILE
    for name in ("", "-wal", "-shm"):
        path.with_name(path.name + name).unlink(missing_ok=True)
    elsewhere = tmp_path / "planted.sqlite"
    elsewhere.write_bytes(b"")
    path.symlink_to(elsewhere)  # never opened through a symlink
    assert kinds(manager) == indexed
    assert kinds(manager, line="port: 8080") == [("restore", None, None), ("write", 2, 1)]
    assert elsewhere.read_bytes() == b""
