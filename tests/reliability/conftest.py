"""Reliability suite: CI mode by default, long mode with --reliability-long.

Figures (runs, kills, cases, escapes...) are collected in `FIGURES` and printed at the end of
the run; set AGENT_ASSIST_RELIABILITY_REPORT=path.json to also write them to a file.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI

API_KEY = "sk-relia-KEY-7c1f0e9d2b3a4c5d6e7f"
# Secrets a user might paste: each must be redacted before anything reaches the store.
PLANTED_SECRETS = (
    "ghp_RELIAxxSECRETxx0123456789abcdefABCD",
    "hunter2-relia-password",
    "AKIARELIA1234567890Z",
)
SECRET_TEXT = (
    f"my token is {PLANTED_SECRETS[0]} and password={PLANTED_SECRETS[1]} aws {PLANTED_SECRETS[2]}"
)

FIGURES: Counter[str] = Counter()
STORES: list[Path] = []  # every store the suite used, scanned for secrets at the end


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reliability-long",
        action="store_true",
        default=False,
        help="run the reliability suite in long mode (>=200 kills, 10,000 protocol messages)",
    )


def is_long(config: pytest.Config) -> bool:
    return bool(
        config.getoption("--reliability-long", default=False)
        or os.environ.get("AGENT_ASSIST_RELIABILITY_LONG") == "1"
    )


@pytest.fixture(scope="session")
def long_mode(pytestconfig: pytest.Config) -> bool:
    return is_long(pytestconfig)


def model_options(fake: FakeOpenAI) -> dict[str, str]:
    return {"name": "test-model", "baseUrl": fake.base_url, "apiKey": API_KEY}


def register_store(home: Path) -> Path:
    STORES.append(home)
    return home


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return register_store(tmp_path / "store")


def clear_queue(fake: FakeOpenAI) -> None:
    """Forget scripted replies a killed server never asked for."""
    with fake._lock:
        fake._queue.clear()
    fake.release()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for key in sorted(FIGURES):
        terminalreporter.write_line(f"{key}: {FIGURES[key]}")
    target = os.environ.get("AGENT_ASSIST_RELIABILITY_REPORT")
    if target:
        Path(target).write_text(json.dumps(dict(sorted(FIGURES.items())), indent=2) + "\n")
