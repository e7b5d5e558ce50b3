"""Finds started before the snapshot is read (a scan hint), and what they may never change."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from session.paths import SCAN_HINTS_DIR, scan_hint_path
from session.snapshot import recorded_manifest
from session.store.backend import SessionStore
from session.workspace import find as find_tool
from session.workspace import prefetch as prefetch_tool
from session.workspace import scanner
from session.workspace.drift import detect_file_drift
from session.workspace.find import RunningFinds
from session.workspace.prefetch import Prefetch, ScanHint, read_hint, scan_hint, write_hint
from session.workspace.scanner import build_file_manifest

from .test_workspace import PATTERNS, needs_find, wait_until_ctimes_are_old


@pytest.fixture(autouse=True)
def find_on_small_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "_FIND_MIN_FILES", 0)
    monkeypatch.setattr(prefetch_tool, "FIND_MIN_FILES", 0)
    monkeypatch.setattr(find_tool, "_SPLIT_MIN_FILES", 0)  # two finds: a split to predict
    monkeypatch.setattr(find_tool, "_CORES", 2)


def make_tree(root: Path) -> None:
    (root / "agent_spec.md").write_text("# Spec\n")
    for group in ("a", "b", "c"):
        for index in range(5):
            path = root / "templates" / group / f"t{index}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"template {group}{index}\n")


def old_manifest(root: Path) -> Any:
    make_tree(root)
    wait_until_ctimes_are_old(root)
    first = build_file_manifest(root, PATTERNS)
    return build_file_manifest(root, PATTERNS, previous=first)


def test_hint_round_trip(tmp_path: Path) -> None:
    proof = ("/usr/bin:/bin", "/usr/bin/find", [1, 2, 3, 4, 5])
    hint = ScanHint(123, ("templates/**",), {"templates": ["templates/a"], "": []}, proof)
    path = tmp_path / "hints" / "p.json"
    write_hint(path, hint)
    assert read_hint(path) == hint
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    write_hint(path, None)
    assert not path.exists() and read_hint(path) is None


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b"[]",
        b'{"version": 2, "recordedNs": 1, "patterns": [], "splits": {}}',
        b'{"version": 1, "recordedNs": "1", "patterns": [], "splits": {}}',
        b'{"version": 1, "recordedNs": true, "patterns": [], "splits": {}}',
        b'{"version": 1, "recordedNs": -5, "patterns": [], "splits": {}}',
        b'{"version": 1, "recordedNs": 1, "patterns": [3], "splits": {}}',
        b'{"version": 1, "recordedNs": 1, "patterns": [], "splits": []}',
        b'{"version": 1, "recordedNs": 1, "patterns": [], "splits": {"../up": []}}',
        b'{"version": 1, "recordedNs": 1, "patterns": [], "splits": {"/etc": []}}',
        b'{"version": 1, "recordedNs": 1, "patterns": [], "splits": {"t": ["t/../../x"]}}',
        b'{"version": 1, "recordedNs": 1, "patterns": [], "splits": {"t": ["elsewhere"]}}',
        b'{"version": 1, "recordedNs": 1, "patterns": [], "splits": {"t": [7]}}',
        b'{"version": 1, "recordedNs": 1, "patterns": [], "splits": {"t": "t/a"}}',
    ],
)
def test_a_damaged_or_hostile_hint_is_none(tmp_path: Path, payload: bytes) -> None:
    path = tmp_path / "hint.json"
    path.write_bytes(payload)
    assert read_hint(path) is None


def test_a_hint_that_is_not_a_small_plain_file_is_none(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    write_hint(real, ScanHint(1, (), {"": []}))
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert read_hint(real) is not None and read_hint(link) is None
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert read_hint(fifo) is None  # and does not hang
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (2 << 20) + orjson.dumps({"version": 1}))
    assert read_hint(big) is None


def test_no_hint_is_written_through_a_symlinked_directory(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "hints").symlink_to(elsewhere)
    write_hint(tmp_path / "hints" / "p.json", ScanHint(1, (), {"": []}))
    assert list(elsewhere.iterdir()) == []


def reaped(prefetch_runs: list[RunningFinds]) -> bool:
    return all(run.running is None and not run.spools for run in prefetch_runs)


@needs_find
def test_a_prefetch_for_another_manifest_is_stopped_not_used(tmp_path: Path) -> None:
    previous = old_manifest(tmp_path)
    hint = scan_hint(previous)
    assert hint is not None and hint.splits["templates"]  # two finds to predict
    stale = ScanHint(hint.recorded_ns - 1, hint.patterns, hint.splits)
    prefetch = Prefetch(tmp_path, stale, PATTERNS)
    started = list(prefetch.runs.values())
    processes = [p for run in started for p in run.running or []]
    assert processes
    (tmp_path / "templates" / "a" / "t0.md").write_text("changed\n")
    report, _ = detect_file_drift(
        tmp_path, previous.files, PATTERNS, previous=previous, prefetch=prefetch
    )
    assert report.modified == ["templates/a/t0.md"]
    assert len(prefetch.runs) == 1  # not taken: the scan ran its own
    prefetch.close()
    assert not prefetch.runs and reaped(started)
    assert all(p.returncode is not None for p in processes)


@needs_find
def test_an_old_prefetch_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    previous = old_manifest(tmp_path)
    hint = scan_hint(previous)
    assert hint is not None
    prefetch = Prefetch(tmp_path, hint, PATTERNS)
    started = list(prefetch.runs.values())
    monkeypatch.setattr(prefetch_tool, "MAX_AGE_NS", -1)
    current = build_file_manifest(tmp_path, PATTERNS, previous=previous, prefetch=prefetch)
    assert not prefetch.runs and reaped(started)  # stopped, and the scan ran its own
    assert current.recorded_ns > started[0].started_ns


@needs_find
def test_a_prefetch_in_a_new_process_runs_no_probe_when_the_hint_proves_find(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from session.workspace import find as find_tool

    previous = old_manifest(tmp_path)
    build_file_manifest(tmp_path, PATTERNS, previous=previous)  # this process proves find
    hint = scan_hint(previous)
    assert hint is not None and hint.find is not None
    monkeypatch.setattr(find_tool._gnu_find, "verdicts", {})  # a new process
    prefetch = Prefetch(tmp_path, hint, PATTERNS)
    started = list(prefetch.runs.values())
    assert started and all(running.probing is None for running in started)
    prefetch.close()


@needs_find
def test_an_edit_find_missed_is_found_by_the_next_scan(tmp_path: Path) -> None:
    previous = old_manifest(tmp_path)
    hint = scan_hint(previous)
    assert hint is not None
    prefetch = Prefetch(tmp_path, hint, PATTERNS)
    started = next(iter(prefetch.runs.values())).started_ns
    for run in prefetch.runs.values():  # the finds are done: the edit comes after their look
        for process in run.running or []:
            process.wait()
    target = tmp_path / "templates" / "b" / "t1.md"
    before = target.stat()
    target.write_text("Template b1\n")  # same size, mtime put back: only a ctime says so
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    report, current = detect_file_drift(
        tmp_path, previous.files, PATTERNS, previous=previous, prefetch=prefetch
    )
    assert not prefetch.runs  # taken: what it saw is from before the edit
    assert not report.has_drift
    assert current.recorded_ns <= started  # the manifest dates from before find's look
    later, _ = detect_file_drift(tmp_path, current.files, PATTERNS, previous=current)
    assert later.modified == ["templates/b/t1.md"]


@needs_find
def record_with_hint(store: SessionStore, home: Path) -> tuple[str, ScanHint | None]:
    """Record a session of the tree at `store`; return it and the scan hint its exit left."""
    wait_until_ctimes_are_old(store.workspace_root)
    first = SessionLifecycle(store, "editor")
    first.resume_or_start(None, True)
    first.record_decision("Keep the templates short.")
    session_id = first.session_id
    assert first.close()
    # The hint is this machine's, beside the local store (whichever store holds the session).
    hint_file = scan_hint_path(home, store.workspace_root)
    assert hint_file.parent == home / SCAN_HINTS_DIR
    hint = read_hint(hint_file)
    state, _ = store.read_snapshot(session_id, [])
    assert state is not None and hint == scan_hint(recorded_manifest(state))  # what it will need
    return session_id, hint


def spy_on_takes(monkeypatch: pytest.MonkeyPatch) -> list[RunningFinds | None]:
    """Return the list of what each `Prefetch.take` gave a scan (None: nothing usable)."""
    taken: list[RunningFinds | None] = []
    real_take = Prefetch.take

    def take(self: Prefetch, *args: Any) -> RunningFinds | None:
        taken.append(real_take(self, *args))
        return taken[-1]

    monkeypatch.setattr(Prefetch, "take", take)
    return taken


def test_a_resume_takes_the_finds_started_before_the_snapshot_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    make_tree(root)
    session_id, hint = record_with_hint(SessionManager(root, home=home), home)
    hint_file = scan_hint_path(home, root)
    (root / "templates" / "c" / "t2.md").write_text("edited while away\n")
    (root / "templates" / "a" / "new.md").write_text("created while away\n")
    taken = spy_on_takes(monkeypatch)
    second = SessionLifecycle(SessionManager(root, home=home), "editor")
    previous = second.find_previous()
    assert previous is not None and previous.session_id == session_id
    assert second.resume_or_start(previous, True) == "resumed"
    assert taken and taken[0] is not None
    drift = second.last_drift
    assert drift is not None
    assert drift.modified == ["templates/c/t2.md"] and drift.created == ["templates/a/new.md"]
    assert second.close()
    assert read_hint(hint_file) != hint  # the exit's scan left its own
