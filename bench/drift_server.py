"""Drift where the user feels it: spawn → resumed session over LSP, N tracked files vs one.

The same project state is resumed by the real server process (`agent-assist serve`, LSP
over stdio, `autoResume: always`) and timed to `sessionChanged: resumed` (the resume
context is ready then). A project with a single tracked file is resumed in the same loop,
interleaved; the cost of the N files is the median of the paired differences, set against
`git status` on the same tree. The difference is taken from the `initialize` answer on:
the interpreter's start before it is the same for both projects, and on these machines
moves a spawn by ±150 ms, which would bury what the files cost; spawn → resumed is
reported beside it. Each spawn starts from a copy of the same store, so every resume sees
the same drift (a resume records it, and the next would see none).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager

from .common import median
from .resume import Spawned, spawn_timed
from .server_process import PYCACHE, server_env

INSTANCE = "bench"  # the instance id BenchClient sends


def record_session(root: Path, home: Path, *, saved: bool = False) -> str:
    """Record a session of `root` whose snapshot holds the manifest of its files now.

    `saved`: ended by the user's save (a checkpoint of every file; the log's last line is
    the `session/save` event with the whole manifest), else by the exit's autosave.
    """
    lifecycle = SessionLifecycle(SessionManager(root, home=home), INSTANCE)
    lifecycle.resume_or_start(None, True)
    lifecycle.record_decision("Measure the resume of this project.")
    if saved:
        lifecycle.explicit_save()
    session_id = lifecycle.session_id
    assert lifecycle.close(), "the session was not saved"
    return session_id


def _link_blobs(source: str, target: str) -> None:
    """Copy a store file, but hard-link checkpoint copies (read only: 100,000 of them).

    And checkpoint records: written once and never changed, they keep their inode from
    one launch to the next in a real store, which a copy would not (their derived index
    then checks the record's bytes, as it does for a store copied by hand).
    """
    if "/blobs/" in source or ("/checkpoints/" in source and source.endswith(".json")):
        os.link(source, target)
    else:
        shutil.copy2(source, target)


class ResumePair:
    """A project of N tracked files and one of a single file, each with a saved session.

    `saved`: the sessions were ended by a save (see `record_session`), and each spawn is
    timed on to the answer of `agentAssist/resume` (the changed files and their copies).
    """

    def __init__(self, root: Path, small_root: Path, scratch: Path, *, saved: bool = False) -> None:
        self.root = root
        self.small_root = small_root
        self.scratch = scratch
        self.saved = saved
        self.homes: dict[str, tuple[Path, str]] = {}
        for name, project in (("big", root), ("small", small_root)):
            pristine = scratch / f"{name}-home"
            self.homes[name] = (pristine, record_session(project, pristine, saved=saved))

    async def _spawn(self, name: str, project: Path) -> Spawned:
        pristine, session_id = self.homes[name]
        home = self.scratch / f"{name}-run"
        shutil.rmtree(home, ignore_errors=True)
        shutil.copytree(pristine, home, symlinks=True, copy_function=_link_blobs)
        # A relaunched editor finds its store at rest, not just written: without this the
        # resume's first append to the copied log could wait for the kernel's writeback of
        # the copy's last page (measured: one `write` of the drift event took ~14 ms).
        os.sync()
        spawned = await spawn_timed(server_env(home, PYCACHE), project, ask_resume=self.saved)
        assert spawned.reason == "resumed" and spawned.session_id == session_id, spawned
        return spawned

    def measure(self, spawns: int) -> tuple[list[Spawned], list[Spawned]]:
        """Return the (N files, one file) spawns, interleaved."""

        async def run() -> tuple[list[Spawned], list[Spawned]]:
            big: list[Spawned] = []
            small: list[Spawned] = []
            await self._spawn("small", self.small_root)  # warm the page cache and bytecode
            for _ in range(spawns):
                big.append(await self._spawn("big", self.root))
                small.append(await self._spawn("small", self.small_root))
            return big, small

        return asyncio.run(run())


def paired_cost(big: list[float], small: list[float]) -> float:
    """Return the median of the per-pair differences (N files minus one file)."""
    return median([b - s for b, s in zip(big, small, strict=True)])


def resume_times(spawns: list[Spawned]) -> tuple[list[float], list[float]]:
    """Return (spawn → resumed, initialize answered → resumed) of each spawn."""
    return [s.seconds for s in spawns], [s.after_initialize for s in spawns]


def make_small_project(root: Path, spec: bytes) -> Path:
    """Return a project whose only tracked file is its spec."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent_spec.md").write_bytes(spec)
    return root
