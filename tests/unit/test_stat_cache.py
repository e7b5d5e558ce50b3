"""The stat cache packed in the snapshot: what it proves, and what if it does not fit."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from session.local.snapshots import read_snapshot_file
from session.snapshot import SessionState, record_manifest, recorded_manifest
from session.workspace import find as find_tool
from session.workspace import scanner
from session.workspace.drift import detect_file_drift
from session.workspace.manifest import Manifest, children_index
from session.workspace.patterns import TrackedPatterns
from session.workspace.scanner import build_file_manifest
from session.workspace.tracker import WorkspaceTracker
from tests.fixtures import add_to_manifest, store_manifest, stored_manifest

from .test_workspace import (
    assert_each_file_listed_once,
    listing_of,
    needs_find,
    wait_until_ctimes_are_old,
)

PATTERNS = TrackedPatterns(("agent_spec.md", "templates/**"))
SESSION = "0123456789ab"


def make_tree(root: Path) -> list[str]:
    """A spec, templates two levels deep, and a file no glob covers (the assistant's)."""
    paths = ["agent_spec.md", "notes/x.txt"]
    paths += [f"templates/{d}/t{i}.md" for d in ("a", "b/c", "b") for i in range(5)]
    for relative in paths:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(f"{relative}\n")
    return paths


RACY = "templates/b/t0.md"


class SettledTrees:
    """Trees with manifests whose stat caches prove every file, made a batch at a time.

    Proven means older than the second a manifest was recorded in (ctimes too, for find):
    that takes a wait, once per batch rather than once per test. In a `racy` tree, RACY has
    an mtime in the future: never proven by its stat.
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        self.ready: dict[bool, list[tuple[Path, Manifest]]] = {False: [], True: []}
        self.made = 0

    def take(self, *, racy: bool = False) -> tuple[Path, Manifest]:
        if not self.ready[racy]:
            firsts = []
            for _ in range(6):
                self.made += 1
                root = self.base / f"tree{self.made}"
                root.mkdir()
                make_tree(root)
                if racy:
                    future = time.time_ns() + 3_600 * 10**9
                    os.utime(root / RACY, ns=(future, future))
                firsts.append((root, build_file_manifest(root, PATTERNS, extra=["notes/x.txt"])))
            wait_until_ctimes_are_old(self.base)
            for root, first in firsts:
                again = build_file_manifest(root, PATTERNS, extra=["notes/x.txt"], previous=first)
                self.ready[racy].append((root, again))
        return self.ready[racy].pop()


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> SettledTrees:
    return SettledTrees(tmp_path_factory.mktemp("settled"))


def snapshot_json(manifest: Manifest) -> dict[str, Any]:
    """The snapshot as the local store writes it (JSON), with `manifest` recorded."""
    state = SessionState(session_id=SESSION)
    record_manifest(state, manifest)
    return orjson.loads(orjson.dumps(state.model_dump(mode="json")))  # type: ignore[no-any-return]


def resumed(raw: dict[str, Any]) -> tuple[SessionState, Manifest]:
    state = SessionState.model_validate(raw)
    return state, recorded_manifest(state)


@pytest.fixture(params=["find", "python"])
def walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run with the find fast path (two finds at once) and with the Python walk."""
    if request.param == "find":
        if find_tool._gnu_find(os.environ.get("PATH")) is None:
            pytest.skip("no GNU find (Linux only)")
        monkeypatch.setattr(scanner, "_FIND_MIN_FILES", 0)
        monkeypatch.setattr(find_tool, "_SPLIT_MIN_FILES", 0)
        monkeypatch.setattr(find_tool, "_CORES", 2)
    else:
        monkeypatch.setattr(scanner, "_FIND_MIN_FILES", 10**9)
    return str(request.param)


def test_the_stat_cache_round_trips_packed_with_each_directory_together(
    trees: SettledTrees,
) -> None:
    _, manifest = trees.take()
    raw = snapshot_json(manifest)
    assert raw["file_stats"] == {} and isinstance(raw["stat_cache"], str)
    assert set(raw["stat_cache"]) <= set("0123456789abcdef")  # nothing the redactor scrubs
    state, back = resumed(raw)
    assert back.files == manifest.files and back.stats == manifest.stats
    assert back.dirs == manifest.dirs and back.recorded_ns == manifest.recorded_ns
    # The listing comes back as the grouping by directory a pass over the paths would give.
    expected, orphans = children_index(Manifest(dict(manifest.files), dirs=dict(manifest.dirs)))
    assert listing_of(back) == listing_of(Manifest(listing=expected))
    assert back.orphans is not None and sorted(back.orphans) == sorted(orphans)
    assert "notes/x.txt" in back.orphans and "agent_spec.md" in back.orphans
    # Through a second JSON round trip (how PostgreSQL stores it) nothing changes.
    again = SessionState.model_validate_json(state.model_dump_json())
    assert recorded_manifest(again).stats == manifest.stats


def test_a_resume_from_the_packed_cache_rehashes_nothing_and_sees_every_change(
    trees: SettledTrees, walk: str
) -> None:
    tmp_path, manifest = trees.take()
    state, previous = resumed(snapshot_json(manifest))
    report, current = detect_file_drift(tmp_path, state.file_manifest, PATTERNS, previous)
    assert not report.has_drift and current.hashed == 0
    (tmp_path / "templates/b/c/t1.md").write_text("changed\n")
    (tmp_path / "templates/a/t2.md").unlink()
    (tmp_path / "templates/b/new.md").write_text("new\n")
    (tmp_path / "notes/x.txt").write_text("the assistant's file, edited by hand\n")
    state, previous = resumed(snapshot_json(previous))
    report, current = detect_file_drift(tmp_path, state.file_manifest, PATTERNS, previous)
    assert report.modified == ["notes/x.txt", "templates/b/c/t1.md"]
    assert report.deleted == ["templates/a/t2.md"] and report.created == ["templates/b/new.md"]
    truth = build_file_manifest(tmp_path, PATTERNS, extra=["notes/x.txt"])
    assert current.files == truth.files and current.stats == truth.stats
    assert_each_file_listed_once(current)


def _flip_last_digit(raw: dict[str, Any]) -> None:
    text = raw["stat_cache"]
    raw["stat_cache"] = text[:-1] + ("0" if text[-1] != "0" else "1")


DAMAGE: dict[str, Callable[[dict[str, Any]], None]] = {
    "truncated": lambda raw: raw.update(stat_cache=raw["stat_cache"][:-8]),
    "not hex": lambda raw: raw.update(stat_cache="zz" + raw["stat_cache"][2:]),
    "empty": lambda raw: raw.update(stat_cache=""),
    "another magic": lambda raw: raw.update(stat_cache="00" + raw["stat_cache"][2:]),
    "a stat byte flipped": _flip_last_digit,
    "a manifest entry added": lambda raw: add_to_manifest(raw, {"templates/z.md": "0" * 64}),
    "the manifest reordered": lambda raw: store_manifest(
        raw, dict(reversed(stored_manifest(raw).items()))
    ),
    "a directory dropped": lambda raw: raw["dir_stats"].pop("templates/b"),
    "the recording time moved": lambda raw: raw.update(
        manifest_recorded_ns=raw["manifest_recorded_ns"] + 10**9
    ),
    "other patterns": lambda raw: raw.update(tracked_patterns=["templates/**"]),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_stat_cache_that_does_not_fit_is_not_used_and_every_file_is_hashed(
    tmp_path: Path, walk: str, damage: str
) -> None:
    make_tree(tmp_path)  # proven or not: a cache that does not fit proves nothing
    raw = snapshot_json(build_file_manifest(tmp_path, PATTERNS, extra=["notes/x.txt"]))
    (tmp_path / "templates/a/t1.md").write_text("changed\n")
    DAMAGE[damage](raw)
    state, previous = resumed(raw)
    assert previous.stats == {}  # not used: no stat vouches for any hash
    report, current = detect_file_drift(tmp_path, state.file_manifest, PATTERNS, previous)
    truth = build_file_manifest(tmp_path, PATTERNS, extra=state.file_manifest.keys())
    assert current.files == truth.files and current.stats == truth.stats
    assert current.hashed == len(truth.files)
    assert "templates/a/t1.md" in report.modified
    if damage == "a manifest entry added":
        assert report.deleted == ["templates/z.md"]


def test_a_snapshot_with_the_stat_cache_inline_still_proves_its_files(
    trees: SettledTrees,
) -> None:
    tmp_path, manifest = trees.take()
    raw = snapshot_json(manifest)
    del raw["stat_cache"]  # as written before the packed cache
    raw["file_stats"] = {path: list(key) for path, key in manifest.stats.items()}
    state, previous = resumed(raw)
    assert previous.stats == manifest.stats
    report, current = detect_file_drift(tmp_path, state.file_manifest, PATTERNS, previous)
    assert not report.has_drift and current.hashed == 0


def test_a_file_without_a_stat_is_hashed_even_in_a_directory_seen_unchanged(
    trees: SettledTrees, walk: str
) -> None:
    tmp_path, manifest = trees.take()
    tracker = WorkspaceTracker(tmp_path, PATTERNS)
    tracker.manifest = manifest
    # The assistant wrote content an editor has not saved: its hash, and no stat.
    assert tracker.note_write("templates/a/t3.md", b"unsaved in the editor\n")
    state, previous = resumed(snapshot_json(tracker.manifest))
    assert "templates/a/t3.md" not in previous.stats
    report, current = detect_file_drift(tmp_path, state.file_manifest, PATTERNS, previous)
    assert report.modified == ["templates/a/t3.md"]  # what is on disk is not what was noted
    assert current.hashed == 1 and "templates/a/t3.md" in current.stats
    assert_each_file_listed_once(current)


def test_a_file_modified_in_the_second_its_stat_was_taken_is_hashed_again(
    trees: SettledTrees, walk: str
) -> None:
    tmp_path, manifest = trees.take(racy=True)
    state, previous = resumed(snapshot_json(manifest))
    report, current = detect_file_drift(tmp_path, state.file_manifest, PATTERNS, previous)
    assert not report.has_drift
    assert current.hashed == 1  # racy: its stat proves nothing, whatever find says
    assert_each_file_listed_once(current)
    (tmp_path / RACY).write_text("same size?\n")
    report, _ = detect_file_drift(tmp_path, state.file_manifest, PATTERNS, previous)
    assert report.modified == [RACY]


def test_a_snapshot_manifest_of_other_types_is_refused(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.json"
    raw = snapshot_json(Manifest())
    for manifest in ({"agent_spec.md": 5}, ["agent_spec.md"], {"agent_spec.md": None}):
        path.write_bytes(orjson.dumps({**raw, "file_manifest": manifest}))
        warnings: list[str] = []
        assert read_snapshot_file(path, SESSION, warnings) == (None, None)
        assert "file_manifest" in warnings[0]
    path.write_bytes(orjson.dumps({**raw, "file_manifest": {"agent_spec.md": "0" * 64}}))
    state, _ = read_snapshot_file(path, SESSION)
    assert state is not None and state.file_manifest == {"agent_spec.md": "0" * 64}


@needs_find
def test_two_finds_split_a_walk_root_by_its_subtrees(trees: SettledTrees) -> None:
    tmp_path, manifest = trees.take()
    listing, _ = children_index(manifest)
    assert find_tool.split_subtrees("templates", listing) == []  # small: one find
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(find_tool, "_SPLIT_MIN_FILES", 0)
        patch.setattr(find_tool, "_CORES", 2)
        second = find_tool.split_subtrees("templates", listing)
        assert second == ["templates/a"]  # 5 of 15 files: not more than half
        patch.setattr(find_tool, "_CORES", 1)
        assert find_tool.split_subtrees("templates", listing) == []
    one = find_tool._find_changes(str(tmp_path), "templates", manifest.recorded_ns)
    two = find_tool._find_changes(str(tmp_path), "templates", manifest.recorded_ns, second)
    assert one is not None and one == two
    # A subtree gone since (or never there) is walked by the first find, if at all.
    gone = find_tool._find_changes(str(tmp_path), "templates", manifest.recorded_ns, ["x/y"])
    assert gone == one


@needs_find
def test_a_find_not_probed_yet_is_probed_along_with_the_walk(
    trees: SettledTrees, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, manifest = trees.take()
    real = shutil.which("find")
    assert real is not None
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "find").symlink_to(real)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert str(tmp_path / "bin") not in find_tool._gnu_find.verdicts
    first = find_tool._find_changes(str(root), "templates", manifest.recorded_ns)
    assert find_tool._gnu_find.verdicts[str(tmp_path / "bin")] == str(tmp_path / "bin" / "find")
    assert first is not None and first.dirs and not first.files
    assert first == find_tool._find_changes(str(root), "templates", manifest.recorded_ns)


@needs_find
def test_a_find_proven_by_the_last_process_is_not_probed_again(
    trees: SettledTrees, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan hint carries the proof: same PATH, same find, same binary → no probe."""
    from session.workspace.prefetch import _parse_find

    root, manifest = trees.take()
    real = shutil.which("find")
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "find"
    exe.symlink_to(real)
    monkeypatch.setenv("PATH", str(bin_dir))
    find_tool._find_changes(str(root), "templates", manifest.recorded_ns)  # probed
    proof = find_tool.proven_find()
    assert proof is not None and proof[:2] == (str(bin_dir), str(exe))
    assert _parse_find(list(proof)) == proof  # as the hint stores it

    # A new process (its verdicts empty) takes the proof: its finds run without the probe.
    monkeypatch.setattr(find_tool._gnu_find, "verdicts", {})
    find_tool.trust_proven_find(*proof)
    running = find_tool.start_finds(str(root), "templates", manifest.recorded_ns)
    assert running is not None and running.probing is None  # no probe among its commands
    running.collect()

    # Another binary behind the same name (a stat key that no longer fits): probed anew.
    monkeypatch.setattr(find_tool._gnu_find, "verdicts", {})
    stale = (proof[0], proof[1], [*proof[2][:-1], proof[2][-1] + 1])
    find_tool.trust_proven_find(*stale)
    assert str(bin_dir) not in find_tool._gnu_find.verdicts
    running = find_tool.start_finds(str(root), "templates", manifest.recorded_ns)
    assert running is not None and running.probing == (str(bin_dir), str(exe))
    running.collect()
    # ...and another PATH never takes it.
    monkeypatch.setattr(find_tool._gnu_find, "verdicts", {})
    find_tool.trust_proven_find("/elsewhere", *proof[1:])
    assert find_tool._gnu_find.verdicts == {}


@pytest.mark.parametrize(
    "bad",
    [
        None,
        [],
        ["/p", "/f"],
        ["/p", "find", [1, 2, 3, 4, 5]],
        ["/p", "/f", [1, 2, 3]],
        ["/p", "/f", [1, 2, 3, 4, "5"]],
        [1, "/f", [1, 2, 3, 4, 5]],
    ],
)
def test_a_hints_find_proof_that_is_not_ours_is_ignored(bad: object) -> None:
    from session.workspace.prefetch import _parse_find

    assert _parse_find(bad) is None
