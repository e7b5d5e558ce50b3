"""Fixtures for the command-line tests: a workspace, a private store, the loopback model."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI

REPO = Path(__file__).resolve().parents[2]


def clean_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Our store, no real model credentials, a predictable terminal."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_ASSIST_"))}
    env.update(
        {
            "AGENT_ASSIST_HOME": str(home),
            "AGENT_ASSIST_SEED_HOME": str(home.parent / "no-seed-store"),  # not this machine's
            "PYDANTIC_AI_NO_BANNER": "1",
            "PYTHONUNBUFFERED": "1",
            "TERM": "xterm",
            "NO_COLOR": "1",
            "PROMPT_TOOLKIT_NO_CPR": "1",
            "COLUMNS": "160",
        }
    )
    env.update(extra or {})
    return env


def model_env(fake: FakeOpenAI) -> dict[str, str]:
    """Point the server at the loopback model."""
    return {
        "AGENT_ASSIST_LLM_MODEL_NAME": fake.model_id,
        "AGENT_ASSIST_LLM_BASE_URL": fake.base_url,
        "AGENT_ASSIST_LLM_API_KEY": "sk-test-KEY-0123456789abcdef",
    }


def run_cli(
    *args: str, env: dict[str, str], input: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run `agent-assist ARGS` as a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", *args],
        env=env,
        cwd=str(REPO),
        input=input if input is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(label="test") as server:
        yield server


@pytest.fixture(params=["local", "postgresql"])
def store_env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The store the server and the commands use: the local files, or a fresh schema."""
    if request.param == "local":
        yield {}
        return
    dsn = os.environ.get("AGENT_ASSIST_TEST_PG")
    if not dsn:
        pytest.skip("AGENT_ASSIST_TEST_PG is not set: no PostgreSQL server for the store tests")
    schema = f"aac_{secrets.token_hex(6)}"
    yield {"AGENT_ASSIST_STORE": dsn, "AGENT_ASSIST_STORE_SCHEMA": schema}
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
