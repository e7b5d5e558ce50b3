"""Fixtures for e2e tests: a workspace, a private store, the loopback model, editors.

Every e2e test runs against the local files with both clients' capabilities, and against
PostgreSQL (a schema of its own, dropped after it) with VS Code's: the LSP behaviour is the
same whichever store holds the sessions. The PostgreSQL runs need `AGENT_ASSIST_TEST_PG`
(`.ci/run` sets it; by hand `eval "$(tests/pg/start-postgres.sh)"`) and skip without it.
A test marked `local_store` looks at the local files themselves and runs only on them.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI
from session.store.choose import SCHEMA_ENV, STORE_ENV

from . import harness
from .harness import Editor

PG_ENV = "AGENT_ASSIST_TEST_PG"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run PostgreSQL with one client, and never the tests that read the local files."""
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        on_pg = params.get("store_kind") == "postgresql"
        if on_pg and (
            params.get("client_name") == "neovim" or item.get_closest_marker("local_store")
        ):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(params=["vscode", "neovim"])
def client_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["local", "postgresql"], autouse=True)
def store_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    """Which store the server of this test keeps its sessions in."""
    if request.param == "local":
        yield "local"
        return
    dsn = os.environ.get(PG_ENV)
    if not dsn:
        pytest.skip(f"{PG_ENV} is not set: no PostgreSQL server for the e2e suite's store runs")
    schema = f"aae_{secrets.token_hex(6)}"
    harness.STORE_ENV.update({STORE_ENV: dsn, SCHEMA_ENV: schema})
    try:
        yield "postgresql"
    finally:
        harness.STORE_ENV.clear()
        harness.close_stored()
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
async def make_editor(
    workspace: Path, home: Path, fake: FakeOpenAI, client_name: str
) -> AsyncIterator[Callable[..., Editor]]:
    editors: list[Editor] = []

    def make(**kwargs: Any) -> Editor:
        options = kwargs.pop("options", None)
        if options is None:
            options = {"instanceId": "test-window"}
        options.setdefault(
            "model",
            {
                "name": "test-model",
                "baseUrl": fake.base_url,
                "apiKey": "sk-test-KEY-0123456789abcdef",
            },
        )
        if options["model"] is None:
            del options["model"]
        kwargs.setdefault("client", client_name)
        editor = Editor(workspace, home, options=options, **kwargs)
        editors.append(editor)
        return editor

    yield make
    for editor in editors:
        if editor.client._server is not None and editor.client._server.returncode is None:
            try:
                await editor.stop()
            except Exception:
                editor.process.kill()
