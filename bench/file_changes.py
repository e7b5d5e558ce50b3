"""A turn with edits, recording what each write replaced and wrote (#42) vs not recording it.

Each turn is what the runner records for a model that edits files: turn/start, step/start,
20 streamed chunks, three `write_file` calls (tool/call, the real tool writing the file
directly, tool/result), the answer, step/end, turn/end (fsynced) and the automatic
checkpoint after a turn that wrote files. Ours records the `FileChange`s and keeps both
contents as blobs; the baseline is the same turn in another project with
`record_file_change` switched off. Turns alternate between the two, each in its own project.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from pathlib import Path

from engine.model.tools import ToolDeps, write_file
from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from session.store.backend import SessionStore

from .append import counting_fsync
from .common import Mode, Result, Row, fmt_s, median, scratch_dir
from .product_loop import NoEditor
from .resume import TurnPool, text_response, user_request

TURNS: dict[Mode, int] = {"smoke": 12, "default": 100, "long": 400}
CHUNKS = 20
FILES = ("src/app.py", "src/config.yaml", "docs/notes.md")  # written by each turn
FILE_BYTES = 4096
TEMPLATES = 50  # tracked files the checkpoints copy (the default globs' `templates/**`)
TARGET = 1.10


Opener = Callable[[Path, Path], SessionStore]  # (workspace, home) -> the store


def local_store(workspace: Path, home: Path) -> SessionStore:
    return SessionManager(workspace, home=home)


def project(root: Path, recording: bool, opener: Opener) -> tuple[SessionLifecycle, ToolDeps]:
    """Make a workspace with tracked templates and open a fresh session in it."""
    workspace = root / "ws"
    (workspace / "templates").mkdir(parents=True)
    (workspace / "agent_spec.md").write_text("# Agent spec\n")
    for n in range(TEMPLATES):
        (workspace / "templates" / f"t{n:03d}.md").write_text(f"template {n}\n" * 20)
    lifecycle = SessionLifecycle(opener(workspace, root / "home"), f"bench{int(recording)}")
    lifecycle.resume_or_start(None, True)
    if not recording:
        lifecycle.record_file_change = lambda *args, **kwargs: None  # type: ignore[method-assign]
    return lifecycle, ToolDeps(lifecycle, NoEditor())


def contents(rng: random.Random) -> list[str]:
    """Return a new version of each file: mostly the same lines, a few changed."""
    return [
        "".join(f"{path} {n}: {rng.randrange(1000)}\n" for n in range(FILE_BYTES // 24))
        for path in FILES
    ]


async def one_turn(
    lifecycle: SessionLifecycle, deps: ToolDeps, prompt: str, text: str, files: list[str]
) -> None:
    recorder = lifecycle.begin_turn(prompt)
    recorder.start_step([user_request(prompt)])
    step = max(1, len(text) // CHUNKS)
    for i in range(CHUNKS):
        recorder.chunk(text[i * step : (i + 1) * step] if i < CHUNKS - 1 else text[i * step :])
    recorder.flush()
    for n, (path, content) in enumerate(zip(FILES, files, strict=True)):
        call = f"call-{n}"
        recorder.tool_call(call, "write_file", {"path": path, "content": content})
        recorder.tool_result(call, "write_file", await write_file(deps, path, content, call))
    recorder.end_step({"input_tokens": 100, "output_tokens": 50})
    recorder.start_step([])
    recorder.assistant_message(text_response(text))
    recorder.end_step({"input_tokens": 120, "output_tokens": 60})
    recorder.end("completed")


def run(mode: Mode, opener: Opener = local_store, name: str = "file_changes") -> Result:
    """Run the benchmark (on the local files, or the store `opener` opens) and return its rows."""
    turns = TURNS[mode]
    result = Result(name)
    pool = TurnPool(seed=11)
    rng = random.Random(5)
    times: dict[bool, list[float]] = {True: [], False: []}
    fsyncs: dict[bool, int] = {True: 0, False: 0}
    with scratch_dir(name) as tmp:
        projects = {
            flag: project(tmp / ("on" if flag else "off"), flag, opener) for flag in (True, False)
        }
        loop = asyncio.new_event_loop()
        try:
            for number in range(turns):
                prompt = pool.prompts[number % len(pool.prompts)]
                text, _ = pool.responses[number % len(pool.responses)]
                files = contents(rng)
                order = (True, False) if number % 2 else (False, True)
                for flag in order:
                    lifecycle, deps = projects[flag]
                    with counting_fsync() as counted:
                        t0 = time.perf_counter()
                        loop.run_until_complete(one_turn(lifecycle, deps, prompt, text, files))
                        elapsed = time.perf_counter() - t0
                    if number:  # the first turn of each warms up
                        times[flag].append(elapsed)
                        fsyncs[flag] += counted[0]
        finally:
            loop.close()
        lifecycle = projects[True][0]
        recorded = sum(
            len(getattr(e.data, "files", ()))
            for e in lifecycle.store.read_events(lifecycle.session_id).events
            if e.type == "tool/result"
        )
        for lifecycle, _ in projects.values():
            lifecycle.close()
    on, off = median(times[True]), median(times[False])
    measured = len(times[True])
    result.rows.append(
        Row(
            f"a turn with 3 edits ({len(FILES)} × {FILE_BYTES // 1024} KB), recording vs not",
            fmt_s(on),
            fmt_s(off),
            on / off,
            target=f"≤ {TARGET:.2f}",
            ok=on / off <= TARGET,
        )
    )
    if opener is local_store:
        result.rows.append(
            Row(
                "os.fsync calls per turn with edits, recording vs not",
                f"{fsyncs[True] / measured:.2f}",
                f"{fsyncs[False] / measured:.2f}",
                (fsyncs[True] / fsyncs[False]) if fsyncs[False] else None,
                target="≤ 1.00 (no fsync added)",
                ok=fsyncs[True] <= fsyncs[False],
            )
        )
    result.details.append(
        f"{measured} turns each (after one warm-up), alternating: turn/start, step/start, "
        f"{CHUNKS} chunks, 3 write_file calls, step/end, the answer's step, turn/end and the "
        f"automatic checkpoint ({TEMPLATES + 1} tracked files + the 3 written); "
        f"{recorded} FileChanges recorded"
    )
    return result
