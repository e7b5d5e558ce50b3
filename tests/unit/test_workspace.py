"""Safe paths, manifests and drift detection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from session.workspace import (
    TrackedPatterns,
    build_file_manifest,
    detect_file_drift,
    glob_to_regex,
    is_safe_relative_path,
)


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
