"""Fixtures of the terminal tests: a tmux terminal (skipped without tmux), the loopback model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI

from .screen import Terminal


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(label="terminal") as server:
        yield server


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Callable[[int, int], Terminal]]:
    made: list[Terminal] = []

    def make(columns: int = 120, rows: int = 40) -> Terminal:
        term = Terminal(tmp_path, columns, rows)
        made.append(term)
        return term

    yield make
    for term in made:
        term.close()
