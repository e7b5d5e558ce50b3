"""Fixtures every suite that starts the real server shares (suites may override them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI
from tests.fixtures import make_workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server
