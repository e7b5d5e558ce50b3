"""The `timeline` benchmark: a file's timeline (`session.timeline.file_history`) over a project.

A project of 1,000 sessions and 1M events (smoke: 20 sessions, 10k events), written through
the real log writer (`SessionManager.create_session` → `Session.append`): turns of a
`turn/start`, a `step/start`, streamed chunks, the `assistant/message`, a `write_file` call
and its `tool/result` with `files` (one of 40 paths; `config.yaml` one turn in ten, its
contents kept as blobs), `step/end`, `turn/end`. Generating it takes minutes, so the project
is kept between runs under the system temp dir, keyed by its size and this generator's
version, and reused when its completion marker is there.

Timed (ours): `file_history(manager, root, "config.yaml")` (the default limit, 200 changes
with their diffs read from the blobs) with the index warm: the catch-up before it finds
nothing appended (a listing and a `stat` per log). Baseline, in the same run: `grep -F -r -l`
for the path over the same logs, which only finds the logs naming it. Also reported: the
index built from nothing, and the catch-up after one more turn in one session.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from session.local.manager import SessionManager
from session.timeline import file_history
from session.timeline.index import INDEX_FILE, TimelineIndex

from .common import Mode, Result, Row, fmt_s, median, spread, timed_runs

GENERATOR = 2  # bump when the generated project changes
SIZES: dict[Mode, tuple[int, int]] = {  # sessions, events
    "smoke": (20, 10_000),
    "default": (1_000, 1_000_000),
    "long": (1_000, 1_000_000),
}
TARGET_S = 0.100
CHUNKS = 28  # per turn: with the other 9 events, 37 events a turn (27 turns: 1,000 a session)
PATHS = [f"src/module_{i:02d}.py" for i in range(39)] + ["config.yaml"]
CACHE = Path(tempfile.gettempdir()) / f"agent-assist-bench-timeline-{os.getuid()}"


def _version(n: int) -> bytes:
    return "".join(f"key_{k}: {n * 7 + k}\n" for k in range(30)).encode()


def _turn(session: object, store: SessionManager, turn: int, rng: int) -> None:
    append = session.append  # type: ignore[attr-defined]
    append("turn/start", {"input": f"change number {turn} please, carefully"}, turn=turn)
    append("step/start", {"messages": []}, turn=turn, step=1)
    for c in range(CHUNKS):
        append("assistant/chunk", {"delta": f"word{c} and more text "}, turn=turn, step=1)
    message = {"kind": "response", "parts": [{"part_kind": "text", "content": "done"}]}
    append("assistant/message", {"message": message}, turn=turn, step=1)
    path = "config.yaml" if rng % 10 == 0 else PATHS[rng % 39]
    call = {"tool_call_id": f"c{turn}", "name": "write_file", "args": {"path": path}}
    append("tool/call", call, turn=turn, step=1)
    files = []
    if path == "config.yaml":
        before, after = _version(rng), _version(rng + 1)
        store.put_blob(before)
        store.put_blob(after)
        files.append(
            {
                "path": path,
                "before": hashlib.sha256(before).hexdigest(),
                "after": hashlib.sha256(after).hexdigest(),
            }
        )
    else:
        files.append({"path": path, "before": "0" * 64, "after": "1" * 64, "withheld": "bench"})
    result = {"tool_call_id": f"c{turn}", "name": "write_file", "content": "ok", "files": files}
    append("tool/result", result, turn=turn, step=1)
    append("step/end", {"usage": {}}, turn=turn, step=1)
    append("turn/end", {"reason": "completed"}, turn=turn)


def project(mode: Mode, result: Result) -> tuple[SessionManager, Path]:
    """Return the benchmark's project: kept from an earlier run, else generated."""
    sessions, events = SIZES[mode]
    root = CACHE / f"v{GENERATOR}-{sessions}-{events}"
    workspace, marker = root / "ws", root / "complete.json"
    manager = SessionManager(workspace, home=root / "home") if marker.exists() else None
    if manager is not None:
        result.details.append(f"project kept from an earlier run: {root}")
        return manager, root
    shutil.rmtree(root, ignore_errors=True)
    workspace.mkdir(parents=True)
    manager = SessionManager(workspace, home=root / "home")
    per_session = events // sessions
    turns = max(1, (per_session - 1) // (CHUNKS + 9))
    start = time.perf_counter()
    written = 0
    for s in range(sessions):
        writer = manager.create_session()
        for t in range(1, turns + 1):
            _turn(writer, manager, t, s * 7919 + t)
        writer.close()
        written += 1 + turns * (CHUNKS + 9)
    marker.write_text(json.dumps({"sessions": sessions, "events": written}))
    result.details.append(
        f"project generated through the log writer: {sessions:,} sessions, {written:,} events "
        f"in {fmt_s(time.perf_counter() - start)} (kept in {root})"
    )
    return manager, root


def run(mode: Mode) -> Result:
    """Run the timeline benchmark and return its rows."""
    result = Result("timeline")
    manager, root = project(mode, result)
    workspace = manager.workspace_root
    (manager.layout.project_dir / INDEX_FILE).unlink(missing_ok=True)
    index = TimelineIndex.for_project(manager.layout)
    build = timed_runs(lambda: index.catch_up(manager.layout), 1)[0]
    index.close()
    found = file_history(manager, workspace, "config.yaml")
    assert found.changes and (found.truncated or len(found.changes) < 200), len(found.changes)
    assert all(c.diff for c in found.changes), "every config.yaml change has its diff"
    repeats = 5 if mode == "smoke" else 21
    ours = timed_runs(lambda: file_history(manager, workspace, "config.yaml"), repeats)
    grep = shutil.which("grep") or "grep"
    command = [grep, "-F", "-r", "-l", '"path":"config.yaml"', str(manager.layout.sessions_dir)]

    def baseline() -> None:
        subprocess.run(command, check=True, capture_output=True)

    base = timed_runs(baseline, repeats)
    p50, b50 = median(ours), median(base)
    result.rows.append(
        Row(
            f"file_history p50, warm index ({len(found.changes)} changes with diffs)",
            fmt_s(p50),
            f"{fmt_s(b50)} (grep -F -r -l)",
            p50 / b50 if b50 else None,
            f"≤ {fmt_s(TARGET_S)}",
            p50 <= TARGET_S,
        )
    )
    result.details.append(f"file_history, warm: {spread(ours)}")
    result.details.append(f"grep -F -r -l over the logs: {spread(base)}")
    result.details.append(f"index built from nothing: {fmt_s(build)}")
    writer = manager.create_session()  # one more session, deleted after: the project is kept
    _turn(writer, manager, 1, 0)
    writer.close()
    one = timed_runs(lambda: TimelineIndex.for_project(manager.layout).catch_up(manager.layout), 1)[
        0
    ]
    manager.delete_session(writer.session_id)
    result.details.append(f"catch-up after a new session of one turn: {fmt_s(one)}")
    size = (manager.layout.project_dir / INDEX_FILE).stat().st_size
    result.details.append(f"index size: {size / 1e6:.1f} MB; the project: {root}")
    return result
