"""Reliability suite: CI mode by default, long mode with --reliability-long.

Figures (runs, kills, cases, escapes...) are collected in `tests.figures.FIGURES` and printed
at the end of the run; set AGENT_ASSIST_RELIABILITY_REPORT=path.json to also write them to a
file. After each test, no store it used may hold the API key or a planted secret.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI
from tests.figures import FIGURES

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

STORES: list[Path] = []  # every store a test used, scanned for secrets after its module


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


def secrets_in(stores: list[Path]) -> tuple[int, list[str]]:
    """The files the stores hold, and each planted secret or API key found in one."""
    needles = [s.encode() for s in (API_KEY, *PLANTED_SECRETS)]
    hits: list[str] = []
    files = 0
    for store in stores:
        for dirpath, _, names in os.walk(store):
            for name in names:
                path = Path(dirpath) / name
                if path.is_symlink() or not path.is_file():
                    continue
                files += 1
                data = path.read_bytes()
                hits += [f"{path}: {n[:8]!r}..." for n in needles if n in data]
    return files, hits


@pytest.fixture(scope="module", autouse=True)
def no_secret_reaches_a_store() -> Iterator[None]:
    """After a module's tests (their servers gone): no store they used holds a secret.

    The crash-torture chats carry planted credentials in the user's text and every server is
    configured with `API_KEY`.
    """
    first = len(STORES)
    yield
    files, hits = secrets_in(STORES[first:])
    FIGURES["secrets.files_scanned"] += files
    FIGURES["secrets.hits"] += len(hits)
    assert not hits, hits
