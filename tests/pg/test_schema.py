"""Schema creation and migration: versioned, idempotent, and read-only when newer."""

from __future__ import annotations

import threading

import pytest

from session.errors import ReadOnlySessionError
from session.pg import PgReadOnlyError, PgStore, SchemaMigrationError
from session.pg.events import EventDraft
from session.pg.migrations import MIGRATIONS, Migration
from session.pg.schema import known_version
from tests.pg.conftest import connect, new_id

TABLES = (
    "sessions",
    "events",
    "pointers",
    "blobs",
    "checkpoints",
    "checkpoint_files",
    "session_counts",
)
SEARCH_TABLES = ("search_texts", "search_progress")
LATEST = len(MIGRATIONS)
ALL = list(range(1, LATEST + 1))
EXTRA = Migration(LATEST + 1, "a test table", ("CREATE TABLE {s}.extra (id integer)",))


def versions(dsn: str, schema: str) -> list[int]:
    with connect(dsn) as conn:
        rows = conn.execute(f'SELECT version FROM "{schema}".schema_version ORDER BY 1').fetchall()
    return [row[0] for row in rows]


def test_a_fresh_database_gets_the_schema_with_forced_row_level_security(
    pg_dsn: str, schema: str
) -> None:
    with PgStore.open(pg_dsn, schema=schema) as store:
        assert store.status is not None
        assert store.status.applied == tuple(ALL)
        assert store.status.version == known_version() == LATEST
        assert store.read_only_reason is None
    with connect(pg_dsn) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, p.polname"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " LEFT JOIN pg_policy p ON p.polrelid = c.oid"
            " WHERE n.nspname = %s AND c.relkind = 'r' ORDER BY 1",
            (schema,),
        ).fetchall()
    by_table = {row[0]: row[1:] for row in rows}
    assert set(by_table) == {*TABLES, *SEARCH_TABLES, "schema_version"}
    for table in (*TABLES, "search_progress"):
        assert by_table[table] == (True, True, "owner_only"), table


def test_opening_again_migrates_nothing(pg_dsn: str, schema: str) -> None:
    PgStore.open(pg_dsn, schema=schema).close()
    with PgStore.open(pg_dsn, schema=schema) as store:
        assert store.status is not None
        assert store.status.applied == ()
        assert store.status.version == LATEST
    assert versions(pg_dsn, schema) == ALL


def test_servers_starting_at_once_create_the_schema_once(pg_dsn: str, schema: str) -> None:
    applied: list[tuple[int, ...]] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            with PgStore.open(pg_dsn, schema=schema, pool_size=1) as store:
                assert store.status is not None
                applied.append(store.status.applied)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(applied) == [(), (), tuple(ALL)]
    assert versions(pg_dsn, schema) == ALL


def test_a_newer_migration_is_applied_once(pg_dsn: str, schema: str) -> None:
    PgStore.open(pg_dsn, schema=schema).close()
    with PgStore.open(pg_dsn, schema=schema, migrations=(*MIGRATIONS, EXTRA)) as store:
        assert store.status is not None
        assert store.status.applied == (EXTRA.version,)
    with PgStore.open(pg_dsn, schema=schema, migrations=(*MIGRATIONS, EXTRA)) as store:
        assert store.status is not None
        assert store.status.applied == ()
    assert versions(pg_dsn, schema) == [*ALL, EXTRA.version]
    with connect(pg_dsn) as conn:
        assert conn.execute(f'SELECT count(*) FROM "{schema}".extra').fetchone() == (0,)


def test_a_schema_newer_than_the_code_opens_read_only(pg_dsn: str, schema: str) -> None:
    session_id = new_id()
    with PgStore.open(pg_dsn, schema=schema) as store:
        store.create_session(session_id, "proj")
        with store.acquire_writer(session_id) as writer:
            writer.append([EventDraft("session/start", {"session_id": session_id})])
    with PgStore.open(pg_dsn, schema=schema, migrations=(*MIGRATIONS, EXTRA)):
        pass  # a newer server migrated the database to the next version

    with PgStore.open(pg_dsn, schema=schema) as old:
        reason = old.read_only_reason
        assert reason is not None
        assert f"version {EXTRA.version}" in reason and f"({LATEST})" in reason
        assert "read-only" in reason
        # reads still work
        assert [row.session_id for row in old.list_sessions()] == [session_id]
        assert [event["seq"] for event in old.read_events(session_id)] == [0]
        # writes do not, and say why
        with pytest.raises(PgReadOnlyError, match=f"version {EXTRA.version}") as raised:
            old.create_session(new_id(), "proj")
        assert isinstance(raised.value, ReadOnlySessionError)
        with pytest.raises(PgReadOnlyError):
            old.acquire_writer(session_id)
        with pytest.raises(PgReadOnlyError):
            old.put_blob(b"x")
        with pytest.raises(PgReadOnlyError):
            old.set_pointer("proj", "inst", session_id)
    assert versions(pg_dsn, schema) == [*ALL, EXTRA.version]  # untouched


def test_a_role_that_cannot_migrate_is_told_so(pg_dsn: str, pg_other_dsn: str, schema: str) -> None:
    PgStore.open(pg_dsn, schema=schema).close()
    with pytest.raises(SchemaMigrationError) as raised:
        PgStore.open(pg_other_dsn, schema=schema, migrations=(*MIGRATIONS, EXTRA))
    message = str(raised.value)
    assert "agent_assist_test_other" in message and f"version {EXTRA.version}" in message
    assert versions(pg_dsn, schema) == ALL


def test_migrations_must_be_numbered_from_one() -> None:
    assert known_version(MIGRATIONS) == len(MIGRATIONS)
    with pytest.raises(ValueError, match="1..N"):
        known_version((EXTRA,))
