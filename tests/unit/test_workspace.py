"""Safe paths, manifests and drift detection."""

from __future__ import annotations

import logging
import os
import random
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from session.workspace import find as find_tool
from session.workspace import prefetch as prefetch_tool
from session.workspace import scanner
from session.workspace.drift import DriftReport, compare_manifests, detect_file_drift
from session.workspace.manifest import Manifest, is_utf8
from session.workspace.patterns import TrackedPatterns, glob_to_regex
from session.workspace.prefetch import Prefetch, scan_hint
from session.workspace.safe_paths import is_safe_relative_path
from session.workspace.scanner import build_file_manifest
from session.workspace.tracker import WorkspaceTracker


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "../x",
        "a/../../x",
        "a/b/../../../c",
        "a\x00b",
        "",
        "C:/x",
        "a\\..\\b",
        "a//b",
    ],
)
def test_unsafe_paths_are_rejected(tmp_path: Path, path: str) -> None:
    assert not is_safe_relative_path(tmp_path, path)


def test_symlinked_parent_escaping_root_is_rejected(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (root / "link").symlink_to(tmp_path / "outside")
    assert not is_safe_relative_path(root, "link/secret.txt")
    assert is_safe_relative_path(root, "templates/x.txt")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab./\\\x00:~-", max_size=20))
def test_safe_paths_always_resolve_inside(
    tmp_path_factory: pytest.TempPathFactory, rel: str
) -> None:
    root = tmp_path_factory.getbasetemp() / "prop_root"
    root.mkdir(exist_ok=True)
    if is_safe_relative_path(root, rel):
        resolved = (root / rel).resolve()
        assert resolved == root.resolve() or root.resolve() in resolved.parents


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("templates/**", "templates/a.txt", True),
        ("templates/**", "templates/x/y/z.md", True),
        ("templates/**", "templatesx/a", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "pkg/sub/a.py", True),
        ("src/*.ts", "src/a.ts", True),
        ("src/*.ts", "src/x/a.ts", False),
        ("agent_spec.md", "agent_spec.md", True),
        ("doc?.md", "doc1.md", True),
        ("[ab].txt", "c.txt", False),
    ],
)
def test_glob_matching(pattern: str, path: str, expected: bool) -> None:
    assert (glob_to_regex(pattern).fullmatch(path) is not None) is expected


def age(path: Path, seconds: float = 5.0) -> None:
    """Back-date a file so its stat entry is not racy."""
    st_ = path.stat()
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns - int(seconds * 1e9)))


def test_drift_unchanged_modified_deleted_created(workspace: Path) -> None:
    (workspace / "templates" / "b.txt").write_text("b")
    manifest = build_file_manifest(workspace)
    assert set(manifest.files) == {"agent_spec.md", "templates/prompt.txt", "templates/b.txt"}
    (workspace / "agent_spec.md").write_text("changed")
    (workspace / "templates" / "b.txt").unlink()
    (workspace / "templates" / "new").mkdir()
    (workspace / "templates" / "new" / "c.txt").write_text("c")
    (workspace / "unrelated.txt").write_text("not tracked")
    report, _ = detect_file_drift(workspace, manifest.files)
    assert report.modified == ["agent_spec.md"]
    assert report.deleted == ["templates/b.txt"]
    assert report.created == ["templates/new/c.txt"]
    assert report.unchanged == 1


def test_file_replaced_by_symlink_is_reported_deleted(workspace: Path, tmp_path: Path) -> None:
    manifest = build_file_manifest(workspace)
    outside = tmp_path / "outside.md"
    outside.write_text("# Spec\nthree tools\n")  # same content: still not followed
    (workspace / "agent_spec.md").unlink()
    (workspace / "agent_spec.md").symlink_to(outside)
    report, current = detect_file_drift(workspace, manifest.files)
    assert report.deleted == ["agent_spec.md"]
    assert "agent_spec.md" not in current.files


def test_symlinks_are_never_hashed_or_walked(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "key.txt").write_text("s3cret")
    (workspace / "templates" / "escape").symlink_to(tmp_path / "secret")
    (workspace / "templates" / "f.txt").symlink_to(tmp_path / "secret" / "key.txt")
    manifest = build_file_manifest(workspace)
    assert set(manifest.files) == {"agent_spec.md", "templates/prompt.txt"}


def test_tampered_manifest_paths_are_skipped_not_opened(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "victim.txt").write_text("v")
    stored = {"../victim.txt": "0" * 64, "/etc/passwd": "0" * 64, "agent_spec.md": "0" * 64}
    report, current = detect_file_drift(workspace, stored)
    assert sorted(report.unsafe) == ["../victim.txt", "/etc/passwd"]
    assert report.modified == ["agent_spec.md"]
    assert all(not p.startswith(("/", "..")) for p in current.files)


def test_stat_cache_skips_rehashing_unchanged_files(workspace: Path) -> None:
    for i in range(20):
        (workspace / "templates" / f"f{i}.txt").write_text(str(i))
    for path in (workspace / "templates").iterdir():
        age(path)
    age(workspace / "agent_spec.md")
    first = build_file_manifest(workspace)
    assert first.hashed == 22
    second = build_file_manifest(workspace, previous=first)
    assert second.hashed == 0
    assert second.files == first.files


def test_racy_same_second_change_is_detected(workspace: Path) -> None:
    spec = workspace / "agent_spec.md"
    first = build_file_manifest(workspace)
    # Same size, same inode, and mtime forced back to the recorded value: only a hash
    # can tell. The entry is racy (mtime not older than the second it was recorded in).
    before = spec.stat()
    spec.write_text("# Spec\nthree TOOLS\n")
    os.utime(spec, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert spec.stat().st_size == before.st_size
    report, _ = detect_file_drift(workspace, first.files, previous=first)
    assert report.modified == ["agent_spec.md"]


def test_extra_paths_join_the_manifest(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("print(1)")
    manifest = build_file_manifest(
        workspace, TrackedPatterns(("agent_spec.md",)), extra=["src/main.py"]
    )
    assert set(manifest.files) == {"agent_spec.md", "src/main.py"}


def test_the_assistants_unsaved_write_is_not_drift_once_saved(workspace: Path) -> None:
    tracker = WorkspaceTracker(workspace, TrackedPatterns(("agent_spec.md", "templates/**")))
    tracker.baseline()
    reply = workspace / "templates" / "reply.txt"
    assert tracker.note_write("templates/reply.txt", b"first\n")
    assert tracker.note_write("templates/reply.txt", b"second\n")  # both unsaved
    tracker.refresh(())  # a checkpoint hashes disk: the old content is the baseline again
    assert tracker.check(["templates/reply.txt"]) is None  # nothing saved: no change
    reply.write_text("first\n")  # an earlier write saved: still the assistant's
    assert tracker.check(["templates/reply.txt"]) is None
    reply.write_text("second\n")
    assert tracker.check(["templates/reply.txt"]) is None
    reply.write_text("the user's\n")  # nothing of the assistant's pending: plain drift
    report = tracker.check(["templates/reply.txt"])
    assert report is not None and report.modified == ["templates/reply.txt"]
    assert report.after_assistant_edit == []


def test_a_user_change_to_the_assistants_write_is_named(workspace: Path) -> None:
    tracker = WorkspaceTracker(workspace, TrackedPatterns(("agent_spec.md", "templates/**")))
    tracker.baseline()
    assert tracker.note_write("templates/reply.txt", b"the assistant's\n")
    (workspace / "templates" / "reply.txt").write_text("the assistant's, and mine\n")
    report = tracker.check(["templates/reply.txt"])
    assert report is not None and report.modified == ["templates/reply.txt"]
    assert report.after_assistant_edit == ["templates/reply.txt"]
    tracker.pending_drift.append(report)
    note = tracker.take_drift_note()
    assert note is not None and "templates/reply.txt: changed by the user after your edit" in note


def test_a_tracked_file_opened_unsaved_is_told_once(workspace: Path) -> None:
    tracker = WorkspaceTracker(workspace, TrackedPatterns(("agent_spec.md", "templates/**")))
    tracker.baseline()
    spec = (workspace / "agent_spec.md").read_bytes()
    assert not tracker.note_open_document("agent_spec.md", spec)  # as on disk
    assert not tracker.note_open_document("notes.txt", b"untracked\n")
    assert tracker.note_write("templates/reply.txt", b"the assistant's\n")
    assert not tracker.note_open_document("templates/reply.txt", b"the assistant's\n")
    assert tracker.note_open_document("agent_spec.md", spec + b"typed, not saved\n")
    note = tracker.take_drift_note()
    assert note is not None and "unsaved changes:\n- agent_spec.md\n" in note
    assert tracker.take_drift_note() is None


# -- the find(1) fast path -------------------------------------------------------------------

PATTERNS = TrackedPatterns(("agent_spec.md", "templates/**"))
EVERYWHERE = TrackedPatterns(("**/*.md",))
NAMES = ["a.md", "b.txt", "new\nline.md", "-dash.md", "[glob]*?.md", "sp ace.md", "ü.md"]


def gnu_find_available() -> bool:
    return find_tool._gnu_find(os.environ.get("PATH")) is not None


needs_find = pytest.mark.skipif(not gnu_find_available(), reason="no GNU find (Linux only)")


@pytest.fixture
def find_always(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Use find on trees of any size; record whether each walk got an answer from it."""
    monkeypatch.setattr(scanner, "_FIND_MIN_FILES", 0)
    monkeypatch.setattr(prefetch_tool, "FIND_MIN_FILES", 0)
    answers: list[bool] = []
    real = scanner._find_changes

    def spy(*args: object) -> object:
        found = real(*args)  # type: ignore[arg-type]
        answers.append(found is not None)
        return found

    monkeypatch.setattr(scanner, "_find_changes", spy)
    return answers


def wait_until_ctimes_are_old(root: Path) -> None:
    """Sleep until every ctime under `root` is before the next manifest's safe second."""
    newest = max(os.lstat(os.path.join(d, n)).st_ctime_ns for d, ds, fs in os.walk(root)
                 for n in [*ds, *fs, "."])  # fmt: skip
    while time.time_ns() < (newest // 1_000_000_000 + 2) * 1_000_000_000 + 200_000_000:
        time.sleep(0.05)


def listing_of(manifest: Manifest) -> dict[str, tuple[list[str], list[str]]]:
    assert manifest.listing is not None
    return {d: (sorted(f), sorted(s)) for d, (f, s) in manifest.listing.items()}


def assert_each_file_listed_once(manifest: Manifest) -> None:
    """A scan's listing and orphans hold each of its files exactly once (what a reuse needs)."""
    assert manifest.listing is not None and manifest.orphans is not None
    listed = [f for files, _ in manifest.listing.values() for f in files] + manifest.orphans
    assert sorted(listed) == sorted(manifest.files)
    for directory, (files, _) in manifest.listing.items():
        assert all(f.rpartition("/")[0] == directory for f in files)


class RandomTree:
    """A workspace that random edits are applied to; remembers edits stats cannot see."""

    def __init__(self, root: Path, outside: Path, seed: int) -> None:
        self.root = root
        self.outside = outside
        self.rng = random.Random(seed)
        self.stealth: set[int] = set()  # inodes: same size, same mtime, new content
        self.sneaky: set[str] = set()  # directories whose mtime was put back
        root.mkdir()
        outside.mkdir()
        (outside / "secret.md").write_text("outside the workspace\n")
        (root / "agent_spec.md").write_text("# Spec\n")
        for _ in range(40):
            self.create()
        (root / "templates" / "node_modules").mkdir()
        (root / "templates" / "node_modules" / "dep.md").write_text("pruned\n")
        os.mkdir(os.path.join(os.fsencode(root), b"templates/d\xfe"))
        with open(os.path.join(os.fsencode(root), b"templates/d\xfe/x.md"), "wb") as fh:
            fh.write(b"not UTF-8 dir\n")

    def dirs(self) -> list[Path]:
        found = [self.root / "templates"]
        for dirpath, dirnames, _ in os.walk(self.root / "templates"):
            dirnames[:] = [
                d
                for d in dirnames
                if d != "node_modules" and is_utf8(d) and not os.path.islink(f"{dirpath}/{d}")
            ]
            found += [Path(dirpath) / d for d in dirnames]
        return found

    def files(self) -> list[Path]:
        return [
            p
            for d in self.dirs()
            for p in d.iterdir()
            if p.is_file() and not p.is_symlink() and is_utf8(p.name)
        ]

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def create(self) -> None:
        rng = self.rng
        parent = self.root / "templates"
        for _ in range(rng.randint(0, 3)):
            parent /= rng.choice(["g1", "g2", "sub dir", "-x"])
        parent.mkdir(parents=True, exist_ok=True)
        if parent.is_symlink() or not parent.is_dir():
            return
        name = f"{rng.randint(0, 99)}{rng.choice(NAMES)}"
        (parent / name).write_bytes(rng.randbytes(rng.randint(0, 300)))

    def change(self) -> str:
        """Apply one random change; return its name."""
        rng = self.rng
        files = self.files()
        kind = rng.choice(
            ["same size and mtime", "append", "truncate", "delete", "create", "create",
             "rename", "rename over", "symlink", "to directory", "chmod", "pruned", "not utf-8",
             "hard link", "rmtree", "move directory", "directory to symlink",
             "create, directory mtime put back"]
        )  # fmt: skip
        if not files:
            kind = "create"
        target = rng.choice(files) if files else self.root
        if kind == "same size and mtime":
            before = target.stat()
            if before.st_size:
                target.write_bytes(bytes(b ^ 0xFF for b in target.read_bytes()))
                os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
                self.stealth.add(before.st_ino)
        elif kind == "append":
            with target.open("ab") as fh:
                fh.write(b"more\n")
        elif kind == "truncate":
            target.write_bytes(b"")
        elif kind == "delete":
            target.unlink()
        elif kind == "create":
            self.create()
        elif kind == "rename":
            target.rename(rng.choice(self.dirs()) / f"moved{rng.randint(0, 99)}.md")
        elif kind == "rename over":
            other = rng.choice(files)
            if other != target:
                target.rename(other)
        elif kind == "symlink":
            target.unlink()
            target.symlink_to(self.outside / "secret.md")
        elif kind == "to directory":
            target.unlink()
            target.mkdir()
            (target / "inner.md").write_text("inside a new directory\n")
        elif kind == "chmod":
            target.chmod(0o600 if target.stat().st_mode & 0o044 else 0o644)
        elif kind == "pruned":
            dep = self.root / "templates" / "node_modules" / "dep.md"
            dep.write_text(dep.read_text() + "x")
        elif kind == "not utf-8":
            parent = os.fsencode(rng.choice(self.dirs()))
            with open(os.path.join(parent, b"bad\xff%d.md" % rng.randint(0, 9)), "wb") as fh:
                fh.write(b"skipped\n")
        elif kind == "hard link":
            linked = rng.choice(self.dirs()) / f"link{rng.randint(0, 99)}.md"
            if not linked.exists():
                os.link(target, linked)
        elif kind in ("rmtree", "move directory", "directory to symlink"):
            subdirs = self.dirs()[1:]
            if subdirs:
                victim = rng.choice(subdirs)
                if kind == "rmtree":
                    shutil.rmtree(victim)
                elif kind == "move directory":
                    victim.rename(self.root / "templates" / f"moved{rng.randint(0, 99)}")
                else:
                    shutil.rmtree(victim)
                    victim.symlink_to(self.outside)
        elif kind == "create, directory mtime put back":
            parent = rng.choice(self.dirs())
            before = parent.stat()
            (parent / f"sneaky{rng.randint(0, 99)}.md").write_text("created\n")
            os.utime(parent, ns=(before.st_atime_ns, before.st_mtime_ns))
            self.sneaky.add(self.relative(parent))
        return kind


@needs_find
@pytest.mark.parametrize("finds", [1, 2])
def test_find_path_matches_python_and_the_truth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, find_always: list[bool], finds: int
) -> None:
    ran: list[int] = []  # finds run at once, per walk
    if finds == 2:  # a second find for some subtrees of each walk root, at the same time
        monkeypatch.setattr(find_tool, "_SPLIT_MIN_FILES", 0)
        monkeypatch.setattr(find_tool, "_CORES", 2)

        class Counted(find_tool.RunningFinds):
            def __init__(self, commands: list[list[str]], *args: Any, **kwargs: Any) -> None:
                ran.append(len(commands))
                super().__init__(commands, *args, **kwargs)

        monkeypatch.setattr(find_tool, "RunningFinds", Counted)
    trees = [RandomTree(tmp_path / f"ws{s}", tmp_path / f"out{s}", seed=s) for s in range(3)]
    for tree in trees:
        wait_until_ctimes_are_old(tree.root)
    for tree in trees:
        previous = {}
        for patterns in (PATTERNS, EVERYWHERE):  # walks from templates/, and from the root
            first = build_file_manifest(tree.root, patterns)
            previous[patterns] = build_file_manifest(tree.root, patterns, previous=first)
            assert previous[patterns].hashed == 0  # old ctimes: find printed no file
        assert find_always == [True, True]
        find_always.clear()
        for _ in range(20):
            time.sleep(0.02)  # past the kernel's timestamp granularity
            tree.stealth.clear()
            tree.sneaky.clear()
            changes = [tree.change() for _ in range(tree.rng.randint(1, 4))]
            for patterns, before in previous.items():
                previous[patterns] = check_round(tree, patterns, before, changes, monkeypatch)
                assert find_always == [True], changes
                find_always.clear()
    assert (2 in ran) == (finds == 2)


def check_round(
    tree: RandomTree,
    patterns: TrackedPatterns,
    previous: Manifest,
    changes: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Manifest:
    """Compare drift with find, without it, with prefetched finds, and everything hashed anew."""
    hint = scan_hint(previous)
    assert hint is not None
    prefetch = Prefetch(tree.root, hint, patterns)  # started first, taken last
    report, fast = detect_file_drift(tree.root, previous.files, patterns, previous=previous)
    pre_report, pre = detect_file_drift(
        tree.root, previous.files, patterns, previous=previous, prefetch=prefetch
    )
    assert not prefetch.runs, "the scan did not take the finds its hint started"
    assert (pre_report, pre.files, pre.stats, pre.dirs) == (
        report,
        fast.files,
        fast.stats,
        fast.dirs,
    )
    assert pre.recorded_ns < fast.recorded_ns  # as of the prefetch's start
    with monkeypatch.context() as patch:
        patch.setattr(scanner, "_find_changes", lambda *args: None)
        slow_report, slow = detect_file_drift(
            tree.root, previous.files, patterns, previous=previous
        )
    truth = build_file_manifest(tree.root, patterns, extra=previous.files.keys())
    # find sees everything; stats alone miss what `stealth` and `sneaky` list.
    assert fast.files == truth.files, changes
    assert report == compare_manifests(previous.files, truth, patterns), changes
    assert fast.stats == truth.stats and fast.dirs == truth.dirs, changes
    assert_each_file_listed_once(fast)
    assert_each_file_listed_once(slow)
    differ = {p for p in fast.files.keys() | slow.files.keys()
              if fast.files.get(p) != slow.files.get(p)}  # fmt: skip
    for path in differ:
        assert (path in fast.files and fast.stats[path][2] in tree.stealth) or path.rpartition("/")[
            0
        ] in tree.sneaky, (path, changes)
    if not differ:
        assert report == slow_report and fast.stats == slow.stats, changes
        assert fast.dirs == slow.dirs and listing_of(fast) == listing_of(slow), changes
    assert all("secret" not in p and "node_modules" not in p for p in fast.files)
    return fast


def drift_after_edits(root: Path) -> tuple[DriftReport, Manifest, Manifest]:
    """A manifest, then edits (modify, delete, create), then drift with `previous`."""
    for i in range(30):
        (root / "templates" / f"f{i}.md").write_text(f"file {i}\n")
    first = build_file_manifest(root, PATTERNS)
    (root / "templates" / "f1.md").write_text("changed\n")
    (root / "templates" / "f2.md").unlink()
    (root / "templates" / "new").mkdir()
    (root / "templates" / "new" / "n.md").write_text("new\n")
    report, current = detect_file_drift(root, first.files, PATTERNS, previous=first)
    return report, current, build_file_manifest(root, PATTERNS)


def expect_fallback(workspace: Path, find_always: list[bool]) -> None:
    report, current, truth = drift_after_edits(workspace)
    assert find_always == [False]  # asked, and fell back to the Python scanner
    assert report.modified == ["templates/f1.md"]
    assert report.deleted == ["templates/f2.md"]
    assert report.created == ["templates/new/n.md"]
    assert current.files == truth.files and current.stats == truth.stats
    assert current.dirs == truth.dirs


def test_without_find_on_path_the_python_scanner_is_used(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, find_always: list[bool]
) -> None:
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    expect_fallback(workspace, find_always)


def fake_find(tmp_path: Path, script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    (bin_dir / "find").write_text(f"#!/bin/sh\n{script}\n")
    (bin_dir / "find").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


@needs_find
def test_a_find_that_fails_midway_is_not_trusted(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, find_always: list[bool]
) -> None:
    real = shutil.which("find")
    # Passes the probe, then prints part of an answer and fails (as on an unreadable dir).
    fake_find(
        tmp_path,
        f'case "$*" in *maxdepth*) exec {real} "$@";; esac\n'
        "printf 'd./templates\\0000.0\\000ext4\\000'; exit 1",
        monkeypatch,
    )
    assert find_tool._gnu_find(os.environ["PATH"]) == str(tmp_path / "fake-bin" / "find")
    expect_fallback(workspace, find_always)


@needs_find
def test_a_find_that_is_not_gnu_find_is_not_used(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, find_always: list[bool]
) -> None:
    fake_find(tmp_path, "exit 0", monkeypatch)  # accepts anything, prints nothing
    expect_fallback(workspace, find_always)


@needs_find
@pytest.mark.parametrize("mtime_ns", [1_700_000_000_500_000_000, 1_700_000_000, -5_250_000_000])
def test_find_times_parse_to_the_stat_ns(tmp_path: Path, mtime_ns: int) -> None:
    target = tmp_path / "f"
    target.write_text("x")
    os.utime(target, ns=(mtime_ns, mtime_ns))
    exe = find_tool._gnu_find(os.environ.get("PATH"))
    assert exe is not None
    printed = subprocess.run(
        [exe, str(target), "-printf", "%T@"], capture_output=True, text=True, check=True
    ).stdout
    assert find_tool._parse_find_time(printed) == target.stat().st_mtime_ns == mtime_ns


@needs_find
def test_find_path_skips_non_utf8_names_with_the_warning(
    workspace: Path, find_always: list[bool], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="session")  # the admin CLI quiets it in-process
    first = build_file_manifest(workspace, PATTERNS)
    with open(os.path.join(os.fsencode(workspace), b"templates/bad\xff.md"), "wb") as fh:
        fh.write(b"x")
    report, current = detect_file_drift(workspace, first.files, PATTERNS, previous=first)
    assert find_always == [True]
    assert not report.has_drift and set(current.files) == set(first.files)
    assert "templates/bad\\udcff.md" in caplog.text and "not UTF-8" in caplog.text


@needs_find
def test_a_directory_moved_over_another_with_the_same_mtime_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, find_always: list[bool]
) -> None:
    # templates/a/x and templates/b/x: same names, same directory mtimes, other content.
    root = tmp_path / "ws"
    for side in ("a", "b"):
        (root / "templates" / side / "x").mkdir(parents=True)
        (root / "templates" / side / "x" / "f.md").write_text(f"{side} content\n")
    (root / "templates" / "b" / "x" / "only_b").mkdir()
    (root / "templates" / "b" / "x" / "only_b" / "g.md").write_text("only in b\n")
    (root / "templates" / "a" / "x" / "only_b").mkdir()  # same subdirectory names
    (root / "templates" / "b" / "x" / "extra").mkdir()
    (root / "templates" / "b" / "x" / "extra" / "h.md").write_text("extra\n")
    for side in ("a", "b"):
        os.utime(root / "templates" / side / "x", ns=(1_600_000_000_000_000_000,) * 2)
        os.utime(root / "templates" / side / "x" / "only_b", ns=(1_600_000_000_000_000_000,) * 2)
    wait_until_ctimes_are_old(root)
    previous = build_file_manifest(root, PATTERNS, previous=build_file_manifest(root, PATTERNS))
    # The move keeps the ctime of everything below b: only b itself (and templates) move.
    shutil.rmtree(root / "templates" / "a")
    (root / "templates" / "b").rename(root / "templates" / "a")
    report, current = detect_file_drift(root, previous.files, PATTERNS, previous=previous)
    assert find_always[-1] is True
    truth = build_file_manifest(root, PATTERNS)
    assert current.files == truth.files
    assert report.modified == ["templates/a/x/f.md"]
    assert report.created == ["templates/a/x/extra/h.md", "templates/a/x/only_b/g.md"]


@pytest.mark.parametrize(
    "leftover",
    [
        "templates/#reply.txt#",
        "templates/.#reply.txt",
        "templates/reply.txt~",
        "templates/.reply.txt.swp",
        "templates/.reply.txt.swo",
        "templates/4913",
        "#x#",
    ],
)
def test_an_editors_leftovers_are_never_tracked(leftover: str) -> None:
    """Emacs's auto-save, lock and backup files, Vim's swap files and write probe."""
    from session.workspace.patterns import TrackedPatterns

    patterns = TrackedPatterns(("templates/**", "#x#"))
    assert not patterns.matches(leftover) and patterns.fullmatch(leftover) is None
    assert patterns.matches("templates/reply.txt") and patterns.matches("templates/a#b~c.txt")
