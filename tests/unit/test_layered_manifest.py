"""Layered manifests: a scan over a previous manifest reads it, never changes it, and costs
nothing per file where nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from session.workspace.drift import compare_manifests, detect_file_drift
from session.workspace.manifest import Manifest
from session.workspace.tracker import WorkspaceTracker

from .test_stat_cache import PATTERNS, RACY, SettledTrees, resumed, snapshot_json, trees, walk

__all__ = ["trees", "walk"]  # fixtures


def frozen(manifest: Manifest) -> tuple[dict[str, str], dict[str, tuple[int, int, int]]]:
    return dict(manifest.files), dict(manifest.stats)


def test_an_unchanged_resume_builds_no_flat_manifest(trees: SettledTrees, walk: str) -> None:
    root, manifest = trees.take()
    state, previous = resumed(snapshot_json(manifest))
    report, current = detect_file_drift(root, state.file_manifest, PATTERNS, previous)
    assert not report.has_drift and report.unchanged == len(manifest.files)
    # Layered over the resumed manifest, with entries of its own only for the files of no
    # walked directory (each taken by name): no dictionary of every file was built, with
    # find's listing or with the Python walk's stat of each file.
    assert previous.orphans is not None and len(previous.orphans) == 2
    assert current.base_files() is state.file_manifest
    assert current.changed_paths() == set(previous.orphans)
    assert current.file_count() == len(manifest.files) and current.hashed == 0
    assert current.files == manifest.files and current.stats == manifest.stats  # built now


def test_a_changed_directory_is_all_a_layered_scan_holds(trees: SettledTrees, walk: str) -> None:
    root, manifest = trees.take()
    state, previous = resumed(snapshot_json(manifest))
    (root / "templates/a/t1.md").write_text("edited behind the assistant's back\n")
    (root / "templates/a/t2.md").unlink()
    (root / "templates/a/new.md").write_text("new\n")
    report, current = detect_file_drift(root, state.file_manifest, PATTERNS, previous)
    assert report.modified == ["templates/a/t1.md"]
    assert report.deleted == ["templates/a/t2.md"] and report.created == ["templates/a/new.md"]
    assert report.unchanged == len(manifest.files) - 2
    in_a = {f"templates/a/{name}" for name in ("t0.md", "t1.md", "t2.md", "t3.md", "t4.md")}
    assert current.changed_paths() == in_a | {"templates/a/new.md", *previous.orphans}
    assert current.file_count() == len(manifest.files)  # one gone, one new
    assert report == compare_manifests(state.file_manifest, Manifest(dict(current.files)), PATTERNS)


def test_neither_side_of_a_layer_changes_the_other(trees: SettledTrees, walk: str) -> None:
    root, manifest = trees.take()
    before = frozen(manifest)
    _, current = detect_file_drift(root, manifest.files, PATTERNS, previous=manifest)
    # Changing the scan's result (as the tracker does when the assistant writes a file)...
    current.files["templates/a/t0.md"] = "0" * 64
    current.stats.pop("templates/b/t1.md")
    assert frozen(manifest) == before  # ...leaves the manifest it was layered over as it was
    # ...and the other way round: a changed base is copied first, the layer keeps its view.
    _, second = detect_file_drift(root, manifest.files, PATTERNS, previous=manifest)
    expected = frozen(second.__class__().layer_over(*manifest.share()))
    manifest.files.clear()
    manifest.stats["templates/b/t1.md"] = (1, 2, 3)
    assert frozen(second) == expected


def test_a_resumed_trackers_writes_leave_the_snapshot_manifest_alone(
    trees: SettledTrees, walk: str
) -> None:
    root, manifest = trees.take()
    state, previous = resumed(snapshot_json(manifest))
    recorded = dict(state.file_manifest)
    tracker = WorkspaceTracker(root, PATTERNS)
    assert not tracker.resume(state.file_manifest, previous).has_drift
    assert tracker.note_write("templates/a/t0.md", b"the assistant's new content\n")
    tracker.note_file("notes/x.txt")
    assert dict(state.file_manifest) == recorded
    assert tracker.manifest is not None
    assert tracker.manifest.files["templates/a/t0.md"] != recorded["templates/a/t0.md"]


def test_a_racy_file_is_the_only_entry_of_its_own(trees: SettledTrees, walk: str) -> None:
    root, manifest = trees.take(racy=True)
    state, previous = resumed(snapshot_json(manifest))
    report, current = detect_file_drift(root, state.file_manifest, PATTERNS, previous)
    assert not report.has_drift and current.hashed == 1
    assert previous.orphans is not None
    assert current.changed_paths() == {RACY, *previous.orphans}
    assert current.file_count() == len(manifest.files)


def test_the_packed_stats_read_as_a_mapping(trees: SettledTrees) -> None:
    _, manifest = trees.take()
    tracker = WorkspaceTracker(Path("/nonexistent"), PATTERNS)
    tracker.manifest = manifest
    assert tracker.note_write("templates/a/t3.md", b"unsaved in the editor\n")  # no stat
    state, previous = resumed(snapshot_json(tracker.manifest))
    files, stats = previous.share()
    assert set(stats) == set(files) - {"templates/a/t3.md"} and len(stats) == len(files) - 1
    assert "templates/a/t3.md" not in stats and stats.get("templates/a/t3.md") is None
    assert dict(stats.items()) == {p: k for p, k in manifest.stats.items() if p in stats}
    with pytest.raises(KeyError):
        stats["templates/a/t3.md"]
    assert stats["agent_spec.md"] == manifest.stats["agent_spec.md"]
