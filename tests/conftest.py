"""Fixtures every suite that starts the real server shares (suites may override them)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI
from tests import figures
from tests.fixtures import make_workspace
from tests.install.readme import make_home


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: the controller prints the figures
        figures.hand_over(workeroutput)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    figures.take_over(getattr(node, "workeroutput", None) or {})


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    figures.summarise(terminalreporter)


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


@pytest.fixture
def scratch_home(tmp_path: Path) -> Iterator[Path]:
    """A fresh HOME for one of the READMEs' installs (`tests/install/readme.py`).

    Removed afterwards (pytest keeps its last tmp dirs).
    """
    home = make_home(tmp_path)
    yield home
    shutil.rmtree(tmp_path)
