"""Lists that stay fast (#43): `listable` kept by a trigger, the listing index, the upgrade.

A page is read from the index in the listing's order (schema version 6), so its results
must be those of the query it replaced, which read every row: for a database migrated from
version 5, for rows written since, and for another role's rows the migration could not fill.
"""

from __future__ import annotations

import json
import threading
from typing import Any, cast

import pytest

from session.pg import PgStore, listing, records
from session.pg.migrations import MIGRATIONS
from session.snapshot import SessionState
from tests.pg.conftest import connect, new_id

BEFORE = MIGRATIONS[:5]  # the schema before the listing index
PROJECT = "path:/work/listing"


def add(dsn: str, schema: str, project: str = PROJECT, **columns: object) -> str:
    """Insert a session row as the role of `dsn` (what older servers wrote), newest last."""
    session_id = new_id()
    values = {"session_id": session_id, "project": project, **columns}
    if "snapshot" in values:
        values["snapshot"] = json.dumps(values["snapshot"])
    names = ", ".join(values)
    marks = ", ".join(["%s"] * len(values))
    with connect(dsn) as conn:
        conn.execute(
            f'INSERT INTO "{schema}".sessions ({names}, updated_at)'  # noqa: S608
            f" VALUES ({marks}, now() + make_interval(secs => (SELECT count(*)"
            f' FROM "{schema}".sessions)))',
            list(values.values()),
        )
    return session_id


def kinds(dsn: str, schema: str) -> dict[str, str]:
    """One session of each kind the listing tells apart; return name → id."""
    return {
        "empty": add(dsn, schema),
        "turn": add(dsn, schema, turns=2),
        "title": add(dsn, schema, title="a title, no turn counted"),
        "summary": add(dsn, schema, snapshot={"summary": "what was done"}),
        "recent": add(dsn, schema, snapshot={"recent_messages": [{"kind": "request"}]}),
        "blank snapshot": add(dsn, schema, snapshot={"summary": "", "recent_messages": []}),
        "elsewhere": add(dsn, schema, project="path:/work/other", turns=1),
    }


LISTED = ["recent", "summary", "title", "turn"]  # newest first


def page(
    store: PgStore, offset: int = 0, limit: int | None = None, **kw: Any
) -> tuple[list[str], int, int]:
    rows, total, folded = store.list_sessions_page(PROJECT, offset, limit, **kw)
    return [row.session_id for row in rows], total, folded


def listable(dsn: str, schema: str) -> dict[str, bool | None]:
    with connect(dsn) as conn:
        rows = conn.execute(f'SELECT session_id, listable FROM "{schema}".sessions').fetchall()  # noqa: S608
    return {str(sid): cast(bool | None, value) for sid, value in rows}


def expected(ids: dict[str, str]) -> list[tuple[list[str], int, int]]:
    """What the four pages of `pages` are (the query of version 5 said the same)."""
    listed = [ids[k] for k in LISTED]
    every = [ids["blank snapshot"], *listed, ids["empty"]]
    return [(listed, 4, 2), (every, 6, 0), (listed[1:3], 4, 2), ([*listed, ids["empty"]], 5, 1)]


def pages(store: PgStore, ids: dict[str, str]) -> list[tuple[list[str], int, int]]:
    return [page(store), page(store, empty=True), page(store, 1, 2), page(store, keep=ids["empty"])]


def test_a_database_of_version_5_is_upgraded_and_lists_as_before(pg_dsn: str, schema: str) -> None:
    PgStore.open(pg_dsn, schema=schema, migrations=BEFORE).close()
    ids = kinds(pg_dsn, schema)
    with PgStore.open(pg_dsn, schema=schema) as store:
        assert store.status is not None and store.status.applied == (6,)
        filled = listable(pg_dsn, schema)  # by the migration, before any listing
        assert pages(store, ids) == expected(ids)
    assert {name: filled[sid] for name, sid in ids.items()} == {
        "empty": False,
        "turn": True,
        "title": True,
        "summary": True,
        "recent": True,
        "blank snapshot": False,
        "elsewhere": True,
    }
    with connect(pg_dsn) as conn:
        indexes = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename = 'sessions'",
            (schema,),
        ).fetchall()
    assert {"sessions_listing", "sessions_unfilled"} <= {row[0] for row in indexes}
    assert "sessions_by_project" not in {row[0] for row in indexes}  # replaced


def test_the_trigger_keeps_listable_as_rows_are_written(store: PgStore, pg_dsn: str) -> None:
    schema = store.schema
    first = store.create_session(new_id(), PROJECT).session_id
    second = store.create_session(new_id(), PROJECT).session_id
    assert listable(pg_dsn, schema)[first] is False
    assert page(store) == ([], 0, 2)
    with store.connection() as conn:
        records.set_listing(conn, schema, first, None, 1, None)  # a turn ended
    assert listable(pg_dsn, schema)[first] is True
    assert page(store) == ([first], 1, 1)
    assert page(store, keep=second) == ([second, first], 2, 0)  # the current one, newer
    # An append touches only next_seq and updated_at: the column stays as it was.
    with connect(pg_dsn) as conn:
        conn.execute(
            f'UPDATE "{schema}".sessions SET next_seq = next_seq + 1,'  # noqa: S608
            " updated_at = now() + interval '1 hour' WHERE session_id = %s",
            (first,),
        )
    assert page(store, empty=True) == ([first, second], 2, 0)
    assert page(store, 2, 10, empty=True) == ([], 2, 0)  # past the end: the counts still


def test_another_roles_rows_from_before_are_read_then_filled_by_its_listing(
    pg_dsn: str, pg_other_dsn: str, schema: str
) -> None:
    PgStore.open(pg_dsn, schema=schema, migrations=BEFORE).close()
    PgStore.open(pg_other_dsn, schema=schema, migrations=BEFORE).close()
    ids = kinds(pg_other_dsn, schema)
    PgStore.open(pg_dsn, schema=schema).close()  # the owner migrates: it sees its rows only
    assert set(listable(pg_other_dsn, schema).values()) == {None}
    with PgStore.open(pg_other_dsn, schema=schema, read_only=True) as reader:
        assert pages(reader, ids) == expected(ids)
        assert page(reader, 40, 10) == ([], 4, 2)
    assert set(listable(pg_other_dsn, schema).values()) == {None}  # a reader wrote nothing
    with PgStore.open(pg_other_dsn, schema=schema) as other:
        assert pages(other, ids) == expected(ids)
    filled = listable(pg_other_dsn, schema)
    assert filled[ids["elsewhere"]] is None  # another project: filled by its own listing
    assert {filled[ids[k]] for k in LISTED} == {True}
    assert filled[ids["empty"]] is False


def test_pages_walk_the_listing_in_order_with_ties(store: PgStore, pg_dsn: str) -> None:
    schema = store.schema
    ids = [store.create_session(new_id(), PROJECT).session_id for _ in range(12)]
    with connect(pg_dsn) as conn:  # half of them at the same instant: the id breaks the tie
        for n, sid in enumerate(ids):
            conn.execute(
                f'UPDATE "{schema}".sessions SET turns = 1, updated_at ='  # noqa: S608
                " timestamptz '2026-12-06 08:00Z' + make_interval(mins => %s)"
                " WHERE session_id = %s",
                (n // 2 * 2 if n < 6 else n, sid),
            )
    whole, total, folded = page(store)
    assert (total, folded) == (12, 0)
    walked = [sid for at in range(0, 12, 5) for sid in page(store, at, 5)[0]]
    assert walked == whole
    rows = store.list_sessions(PROJECT)
    assert whole == [row.session_id for row in rows]  # the same order as the whole list


def kept(dsn: str, schema: str, project: str = PROJECT) -> tuple[int, int] | None:
    with connect(dsn) as conn:
        found = conn.execute(
            f'SELECT listed, folded FROM "{schema}".session_counts WHERE project = %s',  # noqa: S608
            (project,),
        ).fetchone()
    return (cast(int, found[0]), cast(int, found[1])) if found else None


def recount(dsn: str, schema: str, project: str = PROJECT) -> tuple[int, int]:
    with connect(dsn) as conn:
        found = conn.execute(
            "SELECT count(*) FILTER (WHERE listable), count(*) FILTER (WHERE NOT listable)"
            f' FROM "{schema}".sessions WHERE project = %s',  # noqa: S608
            (project,),
        ).fetchone()
    assert found is not None
    return cast(int, found[0]), cast(int, found[1])


def test_the_kept_counts_follow_every_write(store: PgStore, pg_dsn: str) -> None:
    schema = store.schema
    assert page(store) == ([], 0, 0)  # the first listing counts the project: nothing yet
    assert kept(pg_dsn, schema) == (0, 0)
    ids = [store.create_session(new_id(), PROJECT).session_id for _ in range(4)]
    assert kept(pg_dsn, schema) == (0, 4)
    with store.connection() as conn:
        for sid in ids[:3]:
            records.set_listing(conn, schema, sid, None, 1, None)
        records.set_listing(conn, schema, ids[0], "titled", 2, None)  # listed still
    assert kept(pg_dsn, schema) == (3, 1) == recount(pg_dsn, schema)
    store.put_snapshot(SessionState(session_id=ids[3], summary="what was done"))
    assert kept(pg_dsn, schema) == (4, 0)
    store.put_snapshot(SessionState(session_id=ids[2]))  # no turn, title or summary: folded
    assert kept(pg_dsn, schema) == (3, 1) == recount(pg_dsn, schema)
    assert store.delete_session(ids[0])
    assert kept(pg_dsn, schema) == (2, 1)
    page(store)  # nothing kept for the other project yet: made at its first listing
    assert store.list_sessions_page("path:/work/moved", 0, None) == ([], 0, 0)
    assert store.rename_project(PROJECT, "path:/work/moved") == 3
    assert kept(pg_dsn, schema) == (0, 0)
    assert kept(pg_dsn, schema, "path:/work/moved") == (2, 1)
    rows, total, folded = store.list_sessions_page("path:/work/moved", 0, 1, keep=ids[2])
    assert (len(rows), total, folded) == (1, 3, 0)  # the kept folded one is listed and counted


def test_another_roles_counts_are_made_by_its_first_listing_unless_it_only_reads(
    pg_dsn: str, pg_other_dsn: str, schema: str
) -> None:
    PgStore.open(pg_dsn, schema=schema, migrations=BEFORE).close()
    PgStore.open(pg_other_dsn, schema=schema, migrations=BEFORE).close()
    ids = kinds(pg_other_dsn, schema)
    kinds(pg_dsn, schema)  # the owner's own, counted by its migration
    PgStore.open(pg_dsn, schema=schema).close()
    assert kept(pg_dsn, schema) == (4, 2)
    assert kept(pg_other_dsn, schema) is None
    with PgStore.open(pg_other_dsn, schema=schema, read_only=True) as reader:
        assert pages(reader, ids) == expected(ids)
    assert kept(pg_other_dsn, schema) is None
    with PgStore.open(pg_other_dsn, schema=schema) as other:
        assert pages(other, ids) == expected(ids)
        assert kept(pg_other_dsn, schema) == (4, 2)
        assert pages(other, ids) == expected(ids)  # now from the kept counts


def test_a_listing_that_cannot_lock_the_table_at_once_counts_instead(
    store: PgStore, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = store.schema
    listed = store.create_session(new_id(), PROJECT).session_id
    with store.connection() as conn:
        records.set_listing(conn, schema, listed, None, 1, None)
        conn.execute(f'DELETE FROM "{schema}".session_counts')  # noqa: S608
    monkeypatch.setattr(listing, "LOCK_WAIT", "50ms")
    with connect(pg_dsn) as writing:
        writing.execute("BEGIN")  # a server's write in progress holds the table
        writing.execute(
            f'INSERT INTO "{schema}".sessions (session_id, project) VALUES (%s, %s)',  # noqa: S608
            (new_id(), PROJECT),
        )
        assert page(store) == ([listed], 1, 0)  # counted: the write is not committed
        assert kept(pg_dsn, schema) is None
        writing.execute("COMMIT")
    assert page(store) == ([listed], 1, 1)
    assert kept(pg_dsn, schema) == (1, 1)


def test_counts_made_while_sessions_are_written_match_a_recount(
    store: PgStore, pg_dsn: str
) -> None:
    """Writers create sessions and give them turns while listings make the counts anew."""
    schema = store.schema
    done = threading.Event()
    problems: list[BaseException] = []

    def write(number: int) -> None:
        try:
            with connect(pg_dsn) as conn:
                for n in range(40):
                    sid = new_id()
                    conn.execute(
                        f'INSERT INTO "{schema}".sessions (session_id, project) VALUES (%s, %s)',  # noqa: S608
                        (sid, PROJECT),
                    )
                    if (n + number) % 3:
                        conn.execute(
                            f'UPDATE "{schema}".sessions SET turns = 1'  # noqa: S608
                            " WHERE session_id = %s",
                            (sid,),
                        )
        except BaseException as exc:  # noqa: BLE001 - reported below
            problems.append(exc)

    def list_anew() -> None:
        try:
            while not done.is_set():
                with connect(pg_dsn) as conn:
                    conn.execute(f'DELETE FROM "{schema}".session_counts')  # noqa: S608
                page(store, 0, 5)
        except BaseException as exc:  # noqa: BLE001 - reported below
            problems.append(exc)

    writers = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    lister = threading.Thread(target=list_anew)
    lister.start()
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    lister.join()
    assert not problems, problems
    _ids, total, folded = page(store)  # makes the counts if the last listing could not
    assert kept(pg_dsn, schema) == recount(pg_dsn, schema) == (total, folded) == (80, 40)
