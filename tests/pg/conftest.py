"""The PostgreSQL store's tests run against a real server named by the environment.

`AGENT_ASSIST_TEST_PG` (the role that owns the tables) and `AGENT_ASSIST_TEST_PG_OTHER`
(a second role) are set by `.ci/run`, or by hand: `eval "$(tests/pg/start-postgres.sh)"`.
Unset, the tests that need a server skip; set, a server that does not answer fails them.
Each test gets a schema of its own (dropped after it), so tests never see each other's rows.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import psycopg
import pytest

from session.pg import PgStore

MAIN_ENV = "AGENT_ASSIST_TEST_PG"
OTHER_ENV = "AGENT_ASSIST_TEST_PG_OTHER"
HOW = 'eval "$(tests/pg/start-postgres.sh)" starts one; .ci/run always does'


def _dsn(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set: no PostgreSQL server for the store tests ({HOW})")
    return value


@pytest.fixture
def pg_dsn() -> str:
    return _dsn(MAIN_ENV)


@pytest.fixture
def pg_other_dsn() -> str:
    return _dsn(OTHER_ENV)


def connect(dsn: str) -> psycopg.Connection[tuple[object, ...]]:
    """A plain autocommit connection, for looking at the tables with SQL."""
    return psycopg.connect(dsn, autocommit=True, connect_timeout=5)


@pytest.fixture
def schema(pg_dsn: str) -> Iterator[str]:
    name = f"aat_{secrets.token_hex(6)}"
    yield name
    with connect(pg_dsn) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
def store(pg_dsn: str, schema: str) -> Iterator[PgStore]:
    with PgStore.open(pg_dsn, schema=schema) as opened:
        yield opened


@pytest.fixture
def other_store(store: PgStore, pg_other_dsn: str) -> Iterator[PgStore]:
    """The second role's store on the same schema (created by the first role)."""
    with PgStore.open(pg_other_dsn, schema=store.schema) as opened:
        yield opened


def new_id() -> str:
    return secrets.token_hex(6)
