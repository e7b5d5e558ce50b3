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
  subprocess (the admin CLI);
- spawn → resumed session over LSP (start-up with many sessions on disk).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

from session.lifecycle import SessionLifecycle
from session.store.listing_index import LISTING_FILE
from session.store.manager import SessionManager

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
TARGETED = (
    "list, warm",
    "`agentAssist/sessions` over LSP",
    "`agentAssist/sessions` over LSP, a page of 50",
    "`agent-assist sessions list --json`",
    "`agent-assist sessions list` (the table: the newest 50)",
)
INSTANCE = "bench"
SETTLE_S = 1.1  # past the listing's racy margin: sessions/ unchanged since, as between saves


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
    log = manager.log_path(first).read_bytes()
    snapshot = manager.snapshot_path(first).read_bytes()
    base = time.time() - count * 60
    for n in range(1, count):
        other = secrets.token_hex(6)
        for path, data in (
            (manager.log_path(other), log.replace(first.encode(), other.encode())),
            (manager.snapshot_path(other), snapshot.replace(first.encode(), other.encode())),
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


async def lsp_lists(env: dict[str, str], root: Path, repeats: int) -> tuple[list[float], ...]:
    """Time `agentAssist/sessions` (all, then a page of 50) in one server process."""
    client = BenchClient(env, root, options={"autoResume": "always"})
    await client.start()
    await client.initialize()
    await client.ready()
    await client.request("agentAssist/sessions", {})  # warm: the projection is current
    await asyncio.sleep(SETTLE_S)  # the resume wrote this instance's pointer: let it age
    await client.request("agentAssist/sessions", {})
    full: list[float] = []
    page: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        await client.request("agentAssist/sessions", {})
        full.append(time.perf_counter() - start)
        start = time.perf_counter()
        answer = await client.request("agentAssist/sessions", {"limit": 50})
        page.append(time.perf_counter() - start)
        assert len(answer["sessions"]) == min(50, answer["total"])
    await client.stop()
    return full, page


def measure(mode: Mode, tmp: Path, count: int) -> dict[str, list[float]]:
    """Return every timing at `count` sessions."""
    root, home = tmp / f"p{count}", tmp / f"h{count}"
    first = make_project(root, home, count)
    manager = SessionManager(root, home=home)
    listing = manager.project_dir / LISTING_FILE

    def cold() -> None:
        listing.unlink(missing_ok=True)
        assert len(manager.list_sessions()) == count

    def warm() -> None:
        assert len(manager.list_sessions()) == count

    def changed() -> None:
        touch_directory(manager.sessions_dir)
        assert len(manager.list_sessions()) == count

    repeats = REPEATS[mode]
    cold_times = timed_runs(cold, max(1, repeats // 3))
    changed_times = timed_runs(changed, repeats)
    time.sleep(SETTLE_S)
    warm()  # records sessions/ as unchanged
    warm_times = timed_runs(warm, repeats)
    env = server_env(home, PYCACHE)
    cli_times = timed_runs(lambda: cli_list(env, root, "--json"), max(1, repeats // 3))
    table_times = timed_runs(lambda: cli_list(env, root), max(1, repeats // 3))
    full, page = asyncio.run(lsp_lists(env, root, repeats))

    async def spawns() -> list[float]:
        out = []
        for _ in range(SPAWNS[mode]):
            seconds, reason, got = await spawn_to_session(env, root)
            assert (reason, got) == ("resumed", first), (reason, got)
            out.append(seconds)
        return out

    return {
        "list, warm": warm_times,
        "list, warm, just after a change to sessions/": changed_times,
        "list, cold (every snapshot read)": cold_times,
        "`agentAssist/sessions` over LSP": full,
        "`agentAssist/sessions` over LSP, a page of 50": page,
        "`agent-assist sessions list --json`": cli_times,
        "`agent-assist sessions list` (the table: the newest 50)": table_times,
        "spawn → resumed over LSP": asyncio.run(spawns()),
    }


def run(mode: Mode) -> Result:
    """Run the many-sessions benchmark and return its rows."""
    result = Result("sessions")
    counts = COUNTS[mode]
    with scratch_dir("sessions") as tmp:
        figures = {count: measure(mode, tmp, count) for count in counts}
    one = figures[counts[0]]
    for count in counts[1:]:
        for name, times in figures[count].items():
            ours, base = median(times), median(one[name])
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
    return result
