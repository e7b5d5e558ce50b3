"""Drift detection on an unchanged (and a 1%-changed) tree vs `git status` and a full rehash."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from session.workspace import Manifest, TrackedPatterns, build_file_manifest, detect_file_drift

from .common import Mode, Result, Row, fmt_s, median, ratio_row, scratch_dir, spread, timed_runs

SIZES: dict[Mode, int] = {"smoke": 500, "default": 20_000, "long": 100_000}
REPEATS = 5
PATTERNS = TrackedPatterns(("agent_spec.md", "templates/**"))
FILES_PER_DIR = 100
DIRS_PER_GROUP = 20
GIT_TARGET = 2.0  # ours ≤ 2× git status
HASH_TARGET = 0.25  # ours ≥ 4× faster than hashing every file


def template_path(index: int) -> str:
    """Return the relative path of file `index`: templates/gNN/sNN/tNNNNNN.md (3 levels)."""
    leaf = index // FILES_PER_DIR
    return f"templates/g{leaf // DIRS_PER_GROUP:03d}/s{leaf % DIRS_PER_GROUP:02d}/t{index:06d}.md"


def template_body(index: int) -> bytes:
    """Return a ~200-byte template body, distinct per file."""
    head = f"# Template {index}\n\nHello {{name}}, this is prompt template number {index}.\n"
    filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 4
    return (head + filler)[:199].encode() + b"\n"


def make_tree(root: Path, count: int) -> list[str]:
    """Create `agent_spec.md` and `count` small files under templates/; return their paths."""
    (root / "agent_spec.md").write_text("# Agent spec\n\nUse the templates.\n")
    paths = [template_path(i) for i in range(count)]
    made: set[Path] = set()
    for index, relative in enumerate(paths):
        target = root / relative
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        target.write_bytes(template_body(index))
    return paths


def git_env(home: Path) -> dict[str, str]:
    """Return an environment for git that ignores the user's and the system's config."""
    return {
        **os.environ,
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "GIT_TERMINAL_PROMPT": "0",
    }


def git(root: Path, env: dict[str, str], *args: str) -> str:
    """Run a git command in `root` and return its stdout."""
    done = subprocess.run(
        ["git", "-C", str(root), *args], env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def hash_everything(root: Path) -> int:
    """Baseline: walk the tracked files and sha256 each one (read whole); return the count."""
    count = 0
    spec = root / "agent_spec.md"
    hashlib.sha256(spec.read_bytes()).hexdigest()
    for dirpath, _dirnames, filenames in os.walk(root / "templates"):
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as fh:
                hashlib.sha256(fh.read()).hexdigest()
            count += 1
    return count + 1


def run(mode: Mode) -> Result:
    """Run the drift benchmark and return its rows."""
    count = SIZES[mode]
    result = Result("drift")
    with scratch_dir("drift") as tmp:
        root = tmp / "ws"
        root.mkdir()
        start = time.perf_counter()
        paths = make_tree(root, count)
        result.details.append(
            f"tree: {count:,} files of ~200 B under templates/ in "
            f"{-(-count // FILES_PER_DIR):,} leaf dirs (3 levels), made in "
            f"{fmt_s(time.perf_counter() - start)}"
        )

        have_git = shutil.which("git") is not None
        env = git_env(tmp)
        if have_git:
            start = time.perf_counter()
            git(root, env, "init", "-q")
            git(root, env, "add", "-A")
            git(root, env, "commit", "-q", "--no-gpg-sign", "-m", "templates")
            result.details.append(f"git init+add+commit: {fmt_s(time.perf_counter() - start)}")

        start = time.perf_counter()
        first = build_file_manifest(root, PATTERNS)
        result.details.append(
            f"first manifest (hash all {first.hashed:,}): {fmt_s(time.perf_counter() - start)}"
        )
        # Entries whose mtime is in the second the manifest was recorded are "racy" and
        # always rehashed: let the clock move on before recording the manifest we reuse.
        time.sleep(1.1)
        manifest = build_file_manifest(root, PATTERNS, previous=first)
        if have_git:
            git(root, env, "status", "--porcelain", "--untracked-files=no")  # refresh index

        def ours() -> None:
            report, _ = detect_file_drift(root, manifest.files, PATTERNS, previous=manifest)
            assert not report.has_drift

        report, current = detect_file_drift(root, manifest.files, PATTERNS, previous=manifest)
        assert not report.has_drift and report.unchanged == count + 1, report
        result.details.append(
            f"unchanged tree: drift re-hashed {current.hashed} of {report.unchanged:,} files "
            "(stat cache warm)"
        )
        ours_times = timed_runs(ours, REPEATS)
        result.details.append(f"drift, unchanged: {spread(ours_times)}")

        if have_git:

            def git_status() -> None:
                out = git(root, env, "status", "--porcelain", "--untracked-files=no")
                assert out == "", out

            git_times = timed_runs(git_status, REPEATS)
            result.details.append(f"git status, unchanged: {spread(git_times)}")
            result.rows.append(
                ratio_row(
                    f"drift, {count:,} files unchanged vs `git status`",
                    median(ours_times),
                    median(git_times),
                    GIT_TARGET,
                )
            )
        else:
            result.rows.append(Row("drift vs `git status`", "git not installed", ok=None))

        hash_times = timed_runs(lambda: hash_everything(root), REPEATS)
        result.details.append(f"sha256 of every file: {spread(hash_times)}")
        row = ratio_row(
            f"drift, {count:,} files unchanged vs sha256 of every file",
            median(ours_times),
            median(hash_times),
            HASH_TARGET,
        )
        row.target = f"≤ {HASH_TARGET:g}× (≥ {1 / HASH_TARGET:g}× faster)"
        result.rows.append(row)

        # 1% changed: every 100th file gets a line appended.
        changed = paths[::100]
        for relative in changed:
            with open(root / relative, "ab") as fh:
                fh.write(b"edited\n")

        def ours_changed() -> Manifest:
            report, fresh = detect_file_drift(root, manifest.files, PATTERNS, previous=manifest)
            assert len(report.modified) == len(changed), len(report.modified)
            return fresh

        fresh = ours_changed()
        result.details.append(
            f"1% changed ({len(changed):,} files): drift re-hashed {fresh.hashed:,} files"
        )
        changed_times = timed_runs(ours_changed, REPEATS)
        result.details.append(f"drift, 1% changed: {spread(changed_times)}")
        result.rows.append(
            ratio_row(
                f"drift, {count:,} files, 1% changed vs drift unchanged",
                median(changed_times),
                median(ours_times),
                None,
            )
        )
        if have_git:

            def git_changed() -> None:
                out = git(root, env, "status", "--porcelain", "--untracked-files=no")
                assert out.count("\n") == len(changed)

            git_changed_times = timed_runs(git_changed, REPEATS)
            result.details.append(f"git status, 1% changed: {spread(git_changed_times)}")
            result.rows.append(
                ratio_row(
                    f"drift, {count:,} files, 1% changed vs `git status`",
                    median(changed_times),
                    median(git_changed_times),
                    None,
                )
            )
    return result
