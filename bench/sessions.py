"""Session lists and resume in a project with many sessions, against the same with one.

One real session (a few turns, recorded by `SessionLifecycle`) is copied under new ids, each
with its own modification time, to 1,000 and 10,000 sessions. Timed, each as a ratio to the
same measure with a single session in the same run:

- `SessionManager.list_sessions()` warm (the listing projection up to date, `sessions/`
  unchanged for more than the 1 s racy margin: only the logs are stat'ed), just after a change
  to `sessions/` (every file stat'ed) and cold (built from every snapshot: what every listing
  cost before the projection);
- `agentAssist/sessions` over LSP, in the real server process (the editors' pickers), and a
  page of 50;
- `agent-assist sessions list --json` (every row) and the table (the newest 50) as a
  subprocess (the admin CLI), and the table a second after a session was saved (its snapshot
  replaced: `sessions/` changed, every file stat'ed, that row rebuilt), as a user meets it
  after working;
- spawn → resumed session over LSP (start-up with many sessions on disk).

The subprocess measures (the CLI, spawn → resumed) at 1,000 and 10,000 sessions are each
interleaved run by run with the same at one session, their baseline.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from session.lifecycle import SessionLifecycle
from session.local.listing_db import LISTING_FILE
from session.local.manager import SessionManager

from .common import Mode, Result, Row, fmt_s, median, scratch_dir, spread, timed_runs
from .resume import spawn_to_session
from .server_process import PYCACHE, BenchClient, server_env

COUNTS: dict[Mode, list[int]] = {
    "smoke": [1, 100],
    "default": [1, 1_000, 10_000],
    "long": [1, 1_000, 10_000],
}
REPEATS: dict[Mode, int] = {"smoke": 3, "default": 9, "long": 15}
SPAWNS: dict[Mode, int] = {"smoke": 1, "default": 5, "long": 9}
LIST_TARGET_S = 0.100  # "answer within ~100 ms at 10,000 sessions", paged when asked
TABLE = "`agent-assist sessions list` (the table: the newest 50)"
AFTER_SAVE = "`agent-assist sessions list` (the table), a second after a session was saved"
SESSION_PAGE = 200  # what the editors' pickers ask for (VS Code's constants.ts, Neovim's)
PICKER = "`agentAssist/sessions` over LSP, the pickers' page of 200, just after a save"
TARGETED = (
    "list, warm",
    "`agentAssist/sessions` over LSP",
    "`agentAssist/sessions` over LSP, a page of 50",
    PICKER,
    "`agent-assist sessions list --json`",
    TABLE,
)
INSTANCE = "bench"
SETTLE_S = 1.1  # past the listing's racy margin: sessions/ unchanged since, as between saves
Timings = dict[str, list[float]]  # measure name -> seconds of each run


def touch_directory(sessions_dir: Path) -> None:
    """Change sessions/ itself (an entry added and removed), as a save or a new session does."""
    marker = sessions_dir / ".bench-marker"
    marker.write_bytes(b"")
    marker.unlink()


def make_project(root: Path, home: Path, count: int) -> str:
    """Record one session of a few turns and copy it to `count` sessions; return the first."""
    root.mkdir(parents=True)
    (root / "agent_spec.md").write_text("# Agent spec\n")
    manager = SessionManager(root, home=home)
    lifecycle = SessionLifecycle(manager, INSTANCE)
    lifecycle.resume_or_start(None, True)
    for n in range(3):
        recorder = lifecycle.begin_turn(f"question {n} about the reply templates")
        recorder.start_step([{"kind": "request", "parts": []}])
        recorder.chunk(f"answer {n}")
        recorder.end_step({"input_tokens": 1, "output_tokens": 1})
        recorder.end("completed")
    first = lifecycle.session_id
    assert lifecycle.close()
    log = manager.layout.log_path(first).read_bytes()
    snapshot = manager.layout.snapshot_path(first).read_bytes()
    base = time.time() - count * 60
    for n in range(1, count):
        other = secrets.token_hex(6)
        for path, data in (
            (manager.layout.log_path(other), log.replace(first.encode(), other.encode())),
            (manager.layout.snapshot_path(other), snapshot.replace(first.encode(), other.encode())),
        ):
            path.write_bytes(data)
            os.utime(path, (base + n * 60, base + n * 60))
    return first


def cli_list(env: dict[str, str], root: Path, *options: str) -> None:
    """Run `agent-assist sessions list` (with `options`) for the project."""
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", "sessions", "list", *options],
        cwd=root,
        env=env,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()


async def lsp_lists(
    env: dict[str, str], root: Path, repeats: int, save: Callable[[], None]
) -> tuple[list[float], ...]:
    """Time `agentAssist/sessions` in one server process: all, a page of 50, and the page
    the editors' pickers ask for (`SESSION_PAGE`) just after `save` replaced a snapshot."""
    client = BenchClient(env, root, options={"autoResume": "always"})
    await client.start()
    await client.initialize()
    await client.ready()
    await client.request("agentAssist/sessions", {})  # warm: the projection is current
    await asyncio.sleep(SETTLE_S)  # the resume wrote this instance's pointer: let it age
    await client.request("agentAssist/sessions", {})
    full: list[float] = []
    page: list[float] = []
    picker: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        await client.request("agentAssist/sessions", {})
        full.append(time.perf_counter() - start)
        start = time.perf_counter()
        answer = await client.request("agentAssist/sessions", {"limit": 50})
        page.append(time.perf_counter() - start)
        assert len(answer["sessions"]) == min(50, answer["total"])
    for _ in range(repeats):
        save()
        start = time.perf_counter()
        answer = await client.request("agentAssist/sessions", {"limit": SESSION_PAGE})
        picker.append(time.perf_counter() - start)
        assert len(answer["sessions"]) == min(SESSION_PAGE, answer["total"])
        await asyncio.sleep(SETTLE_S)  # the next save changes a directory that had settled
    await client.stop()
    return full, page, picker


@dataclass
class Project:
    """A benchmark project: its root, its store, and the session its editor resumes."""

    root: Path
    home: Path
    first: str

    @property
    def env(self) -> dict[str, str]:
        return server_env(self.home, PYCACHE)


async def spawn_resumed(project: Project) -> float:
    """Spawn the server in `project` and return its spawn → resumed time (seconds)."""
    seconds, reason, got = await spawn_to_session(project.env, project.root)
    assert (reason, got) == ("resumed", project.first), (reason, got)
    return seconds


def interleaved(project: Project, one: Project | None, mode: Mode) -> tuple[Timings, Timings]:
    """Time the subprocess measures at `project`, each run followed by the same at `one`.

    Spawns and CLI runs swing with the machine by tens of milliseconds within a minute;
    alternating with the one-session project makes each ratio one of neighbouring runs.
    Return (the times at `project`, those at `one`: empty without it).
    """
    measures: dict[str, Callable[[Project], object]] = {
        "`agent-assist sessions list --json`": lambda p: cli_list(p.env, p.root, "--json"),
        TABLE: lambda p: cli_list(p.env, p.root),
        AFTER_SAVE: lambda p: cli_list(p.env, p.root),
        "spawn → resumed over LSP": lambda p: asyncio.run(spawn_resumed(p)),
    }
    ours: Timings = {name: [] for name in measures}
    base: Timings = {name: [] for name in measures} if one else {}
    time.sleep(SETTLE_S)  # a server's exit (its autosave) changed sessions/: let it age
    for name, run in measures.items():
        count = SPAWNS[mode] if name.startswith("spawn") else max(1, REPEATS[mode] // 3)
        for _ in range(count):
            if name == AFTER_SAVE:  # both saved, then a second for the listing's margin
                for saved in (project, one):
                    if saved is not None:
                        save_again(saved)
                time.sleep(SETTLE_S)
            ours[name] += timed_runs(partial(run, project), 1)
            if one is not None:
                base[name] += timed_runs(partial(run, one), 1)
    return ours, base


def save_again(project: Project) -> None:
    """Replace the snapshot of the project's first session by a copy, as a save does."""
    path = SessionManager(project.root, home=project.home).layout.snapshot_path(project.first)
    copy = path.with_name(f".{path.name}.bench")
    copy.write_bytes(path.read_bytes())
    os.replace(copy, path)


def measure(
    mode: Mode, tmp: Path, count: int, one: Project | None
) -> tuple[Project, Timings, Timings]:
    """Return the project of `count` sessions, every timing there, the interleaved at `one`."""
    root, home = tmp / f"p{count}", tmp / f"h{count}"
    project = Project(root, home, make_project(root, home, count))
    manager = SessionManager(root, home=home)
    listing = manager.layout.project_dir / LISTING_FILE

    def cold() -> None:
        listing.unlink(missing_ok=True)
        assert len(manager.list_sessions()) == count

    def warm() -> None:
        assert len(manager.list_sessions()) == count

    def changed() -> None:
        touch_directory(manager.layout.sessions_dir)
        assert len(manager.list_sessions()) == count

    repeats = REPEATS[mode]
    cold_times = timed_runs(cold, max(1, repeats // 3))
    changed_times = timed_runs(changed, repeats)
    time.sleep(SETTLE_S)
    warm()  # records sessions/ as unchanged
    warm_times = timed_runs(warm, repeats)
    full, page, picker = asyncio.run(
        lsp_lists(project.env, root, repeats, partial(save_again, project))
    )
    ours, base = interleaved(project, one, mode)
    figures = {
        "list, warm": warm_times,
        "list, warm, just after a change to sessions/": changed_times,
        "list, cold (every snapshot read)": cold_times,
        "`agentAssist/sessions` over LSP": full,
        "`agentAssist/sessions` over LSP, a page of 50": page,
        PICKER: picker,
        **ours,
    }
    return project, figures, base


def run(mode: Mode) -> Result:
    """Run the many-sessions benchmark and return its rows."""
    result = Result("sessions")
    counts = COUNTS[mode]
    with scratch_dir("sessions") as tmp:
        one, one_figures, _ = measure(mode, tmp, counts[0], None)
        figures = {count: measure(mode, tmp, count, one)[1:] for count in counts[1:]}
    for count in counts[1:]:
        ours_of, paired = figures[count]
        for name, times in ours_of.items():
            base_times = paired.get(name) or one_figures[name]
            ours, base = median(times), median(base_times)
            row = Row(
                f"{name}, {count:,} sessions vs 1",
                fmt_s(ours),
                fmt_s(base),
                ours / base if base else None,
            )
            if name in TARGETED and count >= 10_000:
                row.target = f"≤ {fmt_s(LIST_TARGET_S)}"
                row.ok = ours <= LIST_TARGET_S
            result.rows.append(row)
            result.details.append(f"{name}, {count:,} sessions: {spread(times)}")
            if name in paired:
                result.details.append(f"{name}, 1 session, interleaved: {spread(base_times)}")
    return result
