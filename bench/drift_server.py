"""Drift where the user feels it: spawn → resumed session over LSP, N tracked files vs one.

The same project state is resumed by the real server process (`agent-assist serve`, LSP
over stdio, `autoResume: always`) and timed from spawn to `sessionChanged: resumed` (the
resume context is ready then). A project with a single tracked file is resumed in the same
loop, interleaved; the cost of the N files is the median of the paired differences, set
against `git status` on the same tree. Each spawn starts from a copy of the same store, so
every resume sees the same drift (a resume records it, and the next would see none).
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from session.lifecycle import SessionLifecycle
from session.store.manager import SessionManager

from .common import median
from .resume import spawn_to_session
from .server_process import PYCACHE, server_env

INSTANCE = "bench"  # the instance id BenchClient sends


def record_session(root: Path, home: Path) -> str:
    """Record a session of `root` whose snapshot holds the manifest of its files now."""
    lifecycle = SessionLifecycle(SessionManager(root, home=home), INSTANCE)
    lifecycle.resume_or_start(None, True)
    lifecycle.record_decision("Measure the resume of this project.")
    session_id = lifecycle.session_id
    assert lifecycle.close(), "the session was not saved"
    return session_id


class ResumePair:
    """A project of N tracked files and one of a single file, each with a saved session."""

    def __init__(self, root: Path, small_root: Path, scratch: Path) -> None:
        self.root = root
        self.small_root = small_root
        self.scratch = scratch
        self.homes: dict[str, tuple[Path, str]] = {}
        for name, project in (("big", root), ("small", small_root)):
            pristine = scratch / f"{name}-home"
            self.homes[name] = (pristine, record_session(project, pristine))

    async def _spawn(self, name: str, project: Path) -> float:
        pristine, session_id = self.homes[name]
        home = self.scratch / f"{name}-run"
        shutil.rmtree(home, ignore_errors=True)
        shutil.copytree(pristine, home, symlinks=True)
        seconds, reason, got = await spawn_to_session(server_env(home, PYCACHE), project)
        assert (reason, got) == ("resumed", session_id), (reason, got, session_id)
        return seconds

    def measure(self, spawns: int) -> tuple[list[float], list[float]]:
        """Return (N files, one file) spawn → resumed times, interleaved."""

        async def run() -> tuple[list[float], list[float]]:
            big: list[float] = []
            small: list[float] = []
            await self._spawn("small", self.small_root)  # warm the page cache and bytecode
            for _ in range(spawns):
                big.append(await self._spawn("big", self.root))
                small.append(await self._spawn("small", self.small_root))
            return big, small

        return asyncio.run(run())


def paired_cost(big: list[float], small: list[float]) -> float:
    """Return the median of the per-pair differences (N files minus one file)."""
    return median([b - s for b, s in zip(big, small, strict=True)])


def make_small_project(root: Path, spec: bytes) -> Path:
    """Return a project whose only tracked file is its spec."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent_spec.md").write_bytes(spec)
    return root
