"""Shared fixtures for the session-core unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from session.lifecycle import LifecycleConfig, SessionLifecycle, TurnRecorder
from session.local.manager import SessionManager


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "agent_spec.md").write_text("# Spec\nthree tools\n")
    (root / "templates").mkdir()
    (root / "templates" / "prompt.txt").write_text("hello {name}\n")
    return root


@pytest.fixture(autouse=True)
def no_seed_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never this machine's own seed store (`tests/unit/test_seed_store.py` lays one out)."""
    monkeypatch.setenv("AGENT_ASSIST_SEED_HOME", str(tmp_path / "no-seed-store"))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("AGENT_ASSIST_HOME", str(path))
    return path


@pytest.fixture
def manager(workspace: Path, home: Path) -> SessionManager:
    return SessionManager(workspace, home=home)


def make_lifecycle(
    manager: SessionManager, instance: str = "inst", **config: object
) -> SessionLifecycle:
    return SessionLifecycle(manager, instance, LifecycleConfig(**config))  # type: ignore[arg-type]


def request(text: str) -> dict[str, object]:
    return {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": text}]}


def response(text: str) -> dict[str, object]:
    return {"kind": "response", "parts": [{"part_kind": "text", "content": text}]}


def run_turn(
    lifecycle: SessionLifecycle, text: str, reply: str, *, end: str | None = "completed"
) -> TurnRecorder:
    turn = lifecycle.begin_turn(text)
    turn.start_step([request(text)])
    turn.request_header("test-model", {}, "You are a helpful assistant.")
    for i in range(0, len(reply), 4):
        turn.chunk(reply[i : i + 4])
    if end is not None:
        turn.assistant_message(response(reply))
        turn.end_step({"input_tokens": 10, "output_tokens": 5})
        turn.end(end)  # type: ignore[arg-type]
    return turn
