"""One fixture, `backend`, yielding each store behind the one interface.

The PostgreSQL store needs `AGENT_ASSIST_TEST_PG` (`eval "$(tests/pg/start-postgres.sh)"`,
or `.ci/run`); without it its cases skip and say so. Each PostgreSQL case gets a schema of
its own, dropped after it.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from session.store.backend import SessionStore
from session.store.choose import open_store

PG_ENV = "AGENT_ASSIST_TEST_PG"
HOW = 'eval "$(tests/pg/start-postgres.sh)" starts one; .ci/run always does'


@dataclass
class Backend:
    """A store under test, a way to open the same store again, and its blob count."""

    kind: str
    store: SessionStore
    reopen: Callable[[], SessionStore]  # another instance on the same data (another process's)
    blob_count: Callable[[], int]
    holder_args: list[str]  # what `tests/store/holder.py` needs to open the same store


@pytest.fixture(params=["local", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    if request.param == "local":
        home = tmp_path / "home"

        def local() -> SessionStore:
            return open_store(None, workspace, home=home)

        store = local()

        def local_blobs() -> int:
            blobs = store.layout.blobs_dir  # type: ignore[attr-defined]
            return sum(1 for path in blobs.rglob("*") if path.is_file()) if blobs.is_dir() else 0

        yield Backend("local", store, local, local_blobs, ["local", str(workspace), str(home)])
        return
    dsn = os.environ.get(PG_ENV)
    if not dsn:
        pytest.skip(f"{PG_ENV} is not set: no PostgreSQL server for the store contract ({HOW})")
    import psycopg

    schema = f"aat_{secrets.token_hex(6)}"
    opened: list[SessionStore] = []

    def pg() -> SessionStore:
        one = open_store(dsn, workspace, schema=schema, pool_size=2)
        opened.append(one)
        return one

    def pg_blobs() -> int:
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute(f'SELECT count(*) FROM "{schema}".blobs').fetchone()
        return int(row[0]) if row else 0

    try:
        yield Backend("postgresql", pg(), pg, pg_blobs, ["postgresql", str(workspace), schema])
    finally:
        for one in opened:
            one.close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
