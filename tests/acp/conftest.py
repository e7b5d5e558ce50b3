"""Fixtures of the ACP suite: a workspace and a store of its own (tests/conftest.py), the agent.

The tests of what the store holds (sessions, their replay and resume, lifetime, deletion,
listing, history commands, the cross-edge ones) run on the local files and on PostgreSQL
(a schema of its own, dropped after it; `AGENT_ASSIST_TEST_PG`, else skipped), as the e2e
suite does. The tests of the protocol alone (`ON_ANY_STORE`: bad input, prompts, edits,
reads, options, MCP, modes) run on the local files only: the store is behind the same
interface, proved on both by tests/store and the e2e suite, and CI's time is better spent.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI
from session.store.backend import SessionStore
from session.store.choose import SCHEMA_ENV, STORE_ENV, open_store

from .harness import Running, running_agent

PG_ENV = "AGENT_ASSIST_TEST_PG"
ON_ANY_STORE = {
    "test_bad_input",
    "test_commands",
    "test_config",
    "test_edits",
    "test_files",
    "test_mcp",
    "test_modes",
    "test_prompt",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the protocol-only modules' tests on the local store only (see the module doc)."""
    here = Path(__file__).parent
    kept, dropped = [], []
    for item in items:
        ours = item.path.parent == here and item.path.stem in ON_ANY_STORE
        (dropped if ours and "[postgresql" in item.nodeid else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(params=["local", "postgresql"])
def store_env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The store the agents of this test use, as environment variables."""
    if request.param == "local":
        yield {}
        return
    dsn = os.environ.get(PG_ENV)
    if not dsn:
        pytest.skip(f"{PG_ENV} is not set: no PostgreSQL server for the ACP suite's store runs")
    schema = f"aaacp_{secrets.token_hex(6)}"
    yield {STORE_ENV: dsn, SCHEMA_ENV: schema}
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def stored(
    workspace: Path, home: Path, store_env: dict[str, str]
) -> Iterator[Callable[[], SessionStore]]:
    """Return how to open the test's store, to read what the agents wrote."""
    opened: list[SessionStore] = []

    def open_it() -> SessionStore:
        store = open_store(
            store_env.get(STORE_ENV, "local"),
            workspace.resolve(),
            home=home,
            schema=store_env.get(SCHEMA_ENV),
        )
        opened.append(store)
        return store

    yield open_it
    for store in opened:
        store.close()


@pytest.fixture
def model_args(fake: FakeOpenAI) -> tuple[str, ...]:
    return ("--model", "test-model", "--base-url", fake.base_url)


@pytest.fixture
def start(
    workspace: Path, home: Path, model_args: tuple[str, ...], store_env: dict[str, str]
) -> Callable[..., AbstractAsyncContextManager[Running]]:
    """Return how to start an agent on this test's workspace and store."""

    def make(*args: str, **kwargs: Any) -> AbstractAsyncContextManager[Running]:
        env = {"AGENT_ASSIST_LLM_API_KEY": "sk-test-KEY-0123456789abcdef", **store_env}
        env.update(kwargs.pop("env", {}))
        return running_agent(workspace, home, *(args or model_args), env=env, **kwargs)

    return make


@pytest.fixture
async def agent(
    start: Callable[..., AbstractAsyncContextManager[Running]],
) -> AsyncIterator[Running]:
    """An initialized agent."""
    async with start() as running:
        await running.initialize()
        yield running
