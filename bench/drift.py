"""Drift detection on unchanged and 1%-changed trees vs `git status` and a full rehash."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from session.workspace.drift import detect_file_drift
from session.workspace.manifest import Manifest
from session.workspace.patterns import TrackedPatterns
from session.workspace.scanner import build_file_manifest

from .common import (
    Mode,
    Plot,
    Result,
    Row,
    fmt_s,
    median,
    ratio_row,
    scratch_dir,
    spread,
    timed_runs,
)
from .drift_server import ResumePair, make_small_project, paired_cost, resume_times

# Tracked files per size (each size is a separate tree, measured unchanged and 1% changed).
SIZES: dict[Mode, list[int]] = {
    "smoke": [200, 1_000],
    "default": [1_000, 20_000, 100_000],
    "long": [1_000, 20_000, 100_000],
}
REPEATS = 5
SMALL_REPEATS = 11  # trees of up to SMALL_TREE files take a few ms: more runs, same budget
SMOKE_REPEATS = 3  # smoke mode checks that the code runs; its times mean nothing
SMALL_TREE = 5_000
PATTERNS = TrackedPatterns(("agent_spec.md", "templates/**"))
FILES_PER_DIR = 100
DIRS_PER_GROUP = 20
GIT_TARGET = 2.0  # ours ≤ 2× git status
SPAWNS: dict[Mode, int] = {"smoke": 1, "default": 5, "long": 9}  # per tree state, per project
HASH_TARGET = 0.25  # ours ≥ 4× faster than hashing every file
CHANGED_TARGET = 2.0  # a resume finding 1% changed ≤ 2× one finding nothing (#39)


def template_path(index: int) -> str:
    """Return the relative path of file `index`: templates/gNN/sNN/tNNNNNN.md (3 levels)."""
    leaf = index // FILES_PER_DIR
    return f"templates/g{leaf // DIRS_PER_GROUP:03d}/s{leaf % DIRS_PER_GROUP:02d}/t{index:06d}.md"


def template_body(index: int) -> bytes:
    """Return a ~200-byte template body, distinct per file."""
    head = f"# Template {index}\n\nHello {{name}}, this is prompt template number {index}.\n"
    filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 4
    return (head + filler)[:199].encode() + b"\n"


SPEC_BODY = b"# Agent spec\n\nUse the templates.\n"


def make_tree(root: Path, count: int) -> list[str]:
    """Create `agent_spec.md` and `count` small files under templates/; return their paths."""
    (root / "agent_spec.md").write_bytes(SPEC_BODY)
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


def git_commit_tree(root: Path, env: dict[str, str], paths: list[str]) -> None:
    """Commit the tree in one pack (`git fast-import`) and check out its index.

    `git add` of 100,000 files writes as many loose objects (and deleting them afterwards
    costs a minute on a disk mounted with `discard`); a clone has its objects packed anyway.
    The index has no stat data yet: the caller's first `git status` fills it in.
    """
    git(root, env, "init", "-q")
    git(root, env, "symbolic-ref", "HEAD", "refs/heads/main")
    files = [("agent_spec.md", SPEC_BODY)]
    files += [(relative, template_body(index)) for index, relative in enumerate(paths)]
    proc = subprocess.Popen(
        ["git", "-C", str(root), "fast-import", "--quiet"],
        env=env,
        stdin=subprocess.PIPE,
    )
    assert proc.stdin is not None
    with proc.stdin as out:
        for mark, (_relative, body) in enumerate(files, 1):
            out.write(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(body), body))
        out.write(
            b"commit refs/heads/main\ncommitter bench <bench@example.invalid> 0 +0000\n"
            b"data 10\ntemplates\n\n"
        )
        for mark, (relative, _body) in enumerate(files, 1):
            out.write(b"M 100644 :%d %s\n" % (mark, relative.encode()))
        out.write(b"\n")
    assert proc.wait() == 0, "git fast-import failed"
    git(root, env, "read-tree", "HEAD")


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


def target_rows(label: str, ours: float, git_s: float | None, hash_s: float) -> list[Row]:
    """Rows of one tree state: ours vs `git status` (≤ 2×) and vs hashing everything (≥ 4×)."""
    rows = []
    if git_s is None:
        rows.append(Row(f"{label} vs `git status`", "git not installed", ok=None))
    else:
        rows.append(ratio_row(f"{label} vs `git status`", ours, git_s, GIT_TARGET))
    row = ratio_row(f"{label} vs sha256 of every file", ours, hash_s, HASH_TARGET)
    row.target = f"≤ {HASH_TARGET:g}× (≥ {1 / HASH_TARGET:g}× faster)"
    rows.append(row)
    return rows


def measure_size(mode: Mode, count: int, tmp: Path, result: Result, plot: Plot) -> None:
    """Build a tree of `count` files, time drift / git / hashing unchanged and 1% changed."""
    repeats = SMALL_REPEATS if count <= SMALL_TREE else REPEATS
    if mode == "smoke":
        repeats = SMOKE_REPEATS
    tag = f"{count:,} files"
    root = tmp / f"ws{count}"
    root.mkdir()
    start = time.perf_counter()
    paths = make_tree(root, count)
    made = time.perf_counter() - start

    have_git = shutil.which("git") is not None
    env = git_env(tmp)
    setup = f"{tag}: tree of ~200 B files in {-(-count // FILES_PER_DIR):,} leaf dirs (3 levels) "
    setup += f"made in {fmt_s(made)}"
    if have_git:
        start = time.perf_counter()
        git_commit_tree(root, env, paths)
        setup += f"; git init + fast-import commit {fmt_s(time.perf_counter() - start)}"

    start = time.perf_counter()
    first = build_file_manifest(root, PATTERNS)
    setup += f"; first manifest (hash all {first.hashed:,}) {fmt_s(time.perf_counter() - start)}"
    result.details.append(setup)
    # Entries whose mtime is in the second the manifest was recorded are "racy" and
    # always rehashed: let the clock move on before recording the manifest we reuse.
    time.sleep(1.1)
    manifest = build_file_manifest(root, PATTERNS, previous=first)
    if have_git:  # fill in the index's stat data (and check the commit holds the tree)
        out = git(root, env, "status", "--porcelain", "--untracked-files=no")
        assert out == "", out
        out = git(root, env, "status", "--porcelain", "--untracked-files=no")
        assert out == "", out

    # -- unchanged tree ------------------------------------------------------------------
    def ours() -> None:
        report, _ = detect_file_drift(root, manifest.files, PATTERNS, previous=manifest)
        assert not report.has_drift

    report, current = detect_file_drift(root, manifest.files, PATTERNS, previous=manifest)
    assert not report.has_drift and report.unchanged == count + 1, report
    assert current.hashed == 0, f"drift re-hashed {current.hashed} files of an unchanged tree"
    ours_times = timed_runs(ours, repeats)
    git_times: list[float] | None = None
    if have_git:

        def git_status() -> None:
            out = git(root, env, "status", "--porcelain", "--untracked-files=no")
            assert out == "", out

        git_times = timed_runs(git_status, repeats)
    hash_times = timed_runs(lambda: hash_everything(root), repeats)
    result.details.append(
        f"{tag}, unchanged (drift re-hashed 0 of {report.unchanged:,}, stat cache warm): "
        f"drift {spread(ours_times)}"
        + ("" if git_times is None else f"; git status {spread(git_times)}")
        + f"; sha256 of every file {spread(hash_times)}"
    )

    # -- the same, where the user feels it: spawn → resumed session over LSP ---------------
    one_file = make_small_project(tmp / f"one{count}", SPEC_BODY)
    pair = ResumePair(root, one_file, tmp / f"lsp{count}")
    lsp_unchanged = pair.measure(SPAWNS[mode])
    # ...for a session the user ended with a save, on to the editor's `agentAssist/resume`
    saved_pair = ResumePair(root, one_file, tmp / f"lsp-saved{count}", saved=True)
    saved_unchanged = saved_pair.measure(SPAWNS[mode])

    # -- 1% changed: every 100th file gets a line appended ---------------------------------
    changed = paths[::100]
    for relative in changed:
        with open(root / relative, "ab") as fh:
            fh.write(b"edited\n")

    def ours_changed() -> Manifest:
        report, fresh = detect_file_drift(root, manifest.files, PATTERNS, previous=manifest)
        assert len(report.modified) == len(changed), len(report.modified)
        return fresh

    fresh = ours_changed()
    assert fresh.hashed == len(changed), (fresh.hashed, len(changed))
    changed_times = timed_runs(ours_changed, repeats)
    git_changed_times: list[float] | None = None
    if have_git:

        def git_changed() -> None:
            out = git(root, env, "status", "--porcelain", "--untracked-files=no")
            assert out.count("\n") == len(changed), out

        git_changed_times = timed_runs(git_changed, repeats)
    hash_changed_times = timed_runs(lambda: hash_everything(root), repeats)
    result.details.append(
        f"{tag}, 1% changed ({len(changed):,} files; drift re-hashed exactly those): "
        f"drift {spread(changed_times)} ({median(changed_times) / median(ours_times):.2f}× "
        "unchanged)"
        + ("" if git_changed_times is None else f"; git status {spread(git_changed_times)}")
        + f"; sha256 of every file {spread(hash_changed_times)}"
    )

    lsp_changed = pair.measure(SPAWNS[mode])
    saved_changed = saved_pair.measure(SPAWNS[mode])
    git_s = None if git_times is None else median(git_times)
    git_changed_s = None if git_changed_times is None else median(git_changed_times)
    costs: dict[str, float] = {}
    for state, (big, small), git_state_s in (
        ("unchanged", lsp_unchanged, git_s),
        ("1% changed", lsp_changed, git_changed_s),
        ("unchanged, ended by a save", saved_unchanged, git_s),
        ("1% changed, ended by a save", saved_changed, git_changed_s),
    ):
        (big_spawn, big_settle), (small_spawn, small_settle) = map(resume_times, (big, small))
        cost = costs[state] = paired_cost(big_settle, small_settle)
        label = f"resume over LSP, {tag} {state}: cost over 1 file"
        result.details.append(
            f"{label}: initialize answered → resumed {spread(big_settle)} vs one tracked "
            f"file {spread(small_settle)}, median paired difference {fmt_s(cost)}; spawn → "
            f"resumed {spread(big_spawn)} vs {spread(small_spawn)}, median paired difference "
            f"{fmt_s(paired_cost(big_spawn, small_spawn))}"
        )
        if git_state_s is None:
            result.rows.append(Row(f"{label} vs `git status`", "git not installed", ok=None))
        else:
            result.rows.append(ratio_row(f"{label} vs `git status`", cost, git_state_s, GIT_TARGET))
    for ended in ("", ", ended by a save"):
        result.rows.append(
            ratio_row(
                f"resume over LSP, {tag}{ended}: cost over 1 file, 1% changed vs unchanged",
                costs[f"1% changed{ended}"],
                max(costs[f"unchanged{ended}"], 1e-4),  # (a cost within noise of zero)
                CHANGED_TARGET,
            )
        )
    result.rows += target_rows(
        f"drift, {tag} unchanged", median(ours_times), git_s, median(hash_times)
    )
    result.rows += target_rows(
        f"drift, {tag}, 1% changed",
        median(changed_times),
        git_changed_s,
        median(hash_changed_times),
    )
    for state, style, ours_s, git_state_s, hash_s in (
        ("unchanged", "-", median(ours_times), git_s, median(hash_times)),
        ("1% changed", "--", median(changed_times), git_changed_s, median(hash_changed_times)),
    ):
        plot.add(f"ours (detect_file_drift), {state}", count, ours_s, linestyle=style)
        if git_state_s is not None:
            plot.add(f"git status, {state}", count, git_state_s, color="C1", linestyle=style)
        plot.add(f"sha256 of every file, {state}", count, hash_s, color="C2", linestyle=style)
    # Untimed, but it can be the slowest step: deleting files already written back costs
    # ~0.5 ms each on a disk mounted with `discard` (about a minute for 100,000 files).
    start = time.perf_counter()
    shutil.rmtree(root, ignore_errors=True)
    result.details.append(f"{tag}: tree removed in {fmt_s(time.perf_counter() - start)}")


def run(mode: Mode) -> Result:
    """Run the drift benchmark at every size of `mode` and return its rows."""
    result = Result("drift")
    result.plot = Plot("drift check (unchanged: solid; 1% changed: dashed)", "tracked files")
    with scratch_dir("drift") as tmp:
        for count in SIZES[mode]:
            measure_size(mode, count, tmp, result, result.plot)
    return result
