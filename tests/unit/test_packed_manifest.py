"""The manifest packed in the snapshot (schema v4), and layered manifests: a scan over a
previous manifest reads it, never changes it, and costs nothing per file where nothing
changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from session.local.snapshots import read_snapshot_file
from session.redaction import Redactor
from session.snapshot import SessionState, migrate_snapshot
from session.workspace.drift import compare_manifests, detect_file_drift
from session.workspace.manifest import Manifest
from session.workspace.packed import PackedFiles
from session.workspace.tracker import WorkspaceTracker
from tests.fixtures import store_manifest, stored_manifest

from .test_stat_cache import (
    PATTERNS,
    RACY,
    SESSION,
    SettledTrees,
    resumed,
    snapshot_json,
    trees,
    walk,
)

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


def test_the_manifest_is_stored_as_its_paths_and_one_string_of_digests(
    trees: SettledTrees,
) -> None:
    _, manifest = trees.take()
    raw = snapshot_json(manifest)
    assert raw["schema_version"] == 4
    assert set(raw["file_manifest"]) == {"paths", "sha256"}
    assert stored_manifest(raw) == manifest.files  # decoded by the format, not by our code
    assert Redactor().scrub(raw["file_manifest"]) == raw["file_manifest"]  # nothing scrubbed
    state, previous = resumed(raw)
    assert isinstance(state.file_manifest, PackedFiles)
    assert state.file_manifest == manifest.files and dict(state.file_manifest) == manifest.files
    assert state.file_manifest.get("nowhere.md") is None and "agent_spec.md" in state.file_manifest
    assert previous.files == manifest.files and previous.stats == manifest.stats


def test_a_schema_v3_snapshot_still_resumes_without_hashing(trees: SettledTrees, walk: str) -> None:
    root, manifest = trees.take()
    raw = snapshot_json(manifest)
    raw.update(schema_version=3, file_manifest=stored_manifest(raw))  # as v3 wrote it
    data, version = migrate_snapshot(raw)
    assert version == 3
    state, previous = resumed(data)
    assert isinstance(state.file_manifest, dict) and previous.stats == manifest.stats
    report, current = detect_file_drift(root, state.file_manifest, PATTERNS, previous)
    assert not report.has_drift and current.hashed == 0
    written = orjson.loads(state.model_dump_json())  # and it is written back packed
    assert written["schema_version"] == 4 and stored_manifest(written) == manifest.files


def _damaged(raw: dict[str, Any], how: str) -> None:
    packed = raw["file_manifest"]
    if how == "digits cut":
        packed["sha256"] = packed["sha256"][:-1]
    elif how == "not hex":
        packed["sha256"] = "Z" + packed["sha256"][1:]
    elif how == "upper case":
        packed["sha256"] = packed["sha256"].upper()
    elif how == "a path twice":
        packed["paths"][1] = packed["paths"][0]
    elif how == "a path not a string":
        packed["paths"][0] = 7
    elif how == "paths not a list":
        packed["paths"] = "agent_spec.md"
    else:
        packed["extra"] = True


@pytest.mark.parametrize(
    "how",
    [
        "digits cut",
        "not hex",
        "upper case",
        "a path twice",
        "a path not a string",
        "paths not a list",
        "another key",
    ],
)
def test_a_damaged_packed_manifest_is_refused_with_a_warning(
    trees: SettledTrees, tmp_path: Path, how: str
) -> None:
    _, manifest = trees.take()
    raw = snapshot_json(manifest)
    _damaged(raw, how)
    path = tmp_path / f"{SESSION}.json"
    path.write_bytes(orjson.dumps(raw))
    warnings: list[str] = []
    assert read_snapshot_file(path, SESSION, warnings) == (None, None)  # rebuilt from the log
    assert "file_manifest" in warnings[0] and "snapshot ignored" in warnings[0]


def test_a_manifest_value_that_is_no_digest_is_packed_as_one_of_no_file() -> None:
    state = SessionState(session_id=SESSION)
    state.file_manifest = {"a.md": "0" * 63, "b.md": "f" * 64, "c.md": "not hex"}  # a bad log
    raw = orjson.loads(state.model_dump_json())
    assert stored_manifest(raw) == {"a.md": "0" * 64, "b.md": "f" * 64, "c.md": "0" * 64}
    store_manifest(raw, {"a.md": "1" * 64})
    assert SessionState.model_validate(raw).file_manifest == {"a.md": "1" * 64}
