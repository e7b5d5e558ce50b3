"""Who sees what: each role sees and writes only its own rows, the tables' owner included."""

from __future__ import annotations

import hashlib
from pathlib import Path

import psycopg
import pytest

from session.errors import SessionNotFoundError
from session.pg import PgStore
from session.pg.events import EventDraft
from tests.pg.conftest import connect, new_id


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


REPO = Path(__file__).resolve().parents[2]
TABLES = (
    "sessions",
    "events",
    "pointers",
    "blobs",
    "checkpoints",
    "checkpoint_files",
    "session_counts",
)


def fill(store: PgStore, text: str) -> str:
    session_id = new_id()
    store.create_session(session_id, "proj")
    with store.acquire_writer(session_id) as writer:
        writer.append(
            [
                EventDraft("session/start", {"session_id": session_id}),
                EventDraft("turn/start", {"input": text}, turn=1),
            ]
        )
    store.set_pointer("proj", "inst", session_id)
    store.put_blob(text.encode())
    return session_id


def test_each_role_sees_only_its_own_sessions_through_the_store(
    store: PgStore, other_store: PgStore
) -> None:
    assert (store.owner, other_store.owner) == ("agent_assist_test", "agent_assist_test_other")
    mine, theirs = fill(store, "owner's words"), fill(other_store, "other's words")

    assert [row.session_id for row in store.list_sessions()] == [mine]
    assert [row.session_id for row in other_store.list_sessions()] == [theirs]
    assert store.session(theirs) is None and other_store.session(mine) is None
    assert store.read_events(theirs) == [] and other_store.read_events(mine) == []
    assert store.pointer("proj", "inst") == mine and other_store.pointer("proj", "inst") == theirs
    assert store.blob(_digest("other's words")) is None
    assert other_store.blob(_digest("owner's words")) is None
    # nor can a role write into, point at or delete another role's session
    with other_store.acquire_writer(mine) as writer, pytest.raises(SessionNotFoundError):
        writer.append([EventDraft("turn/start", {"input": "intrusion"}, turn=2)])
    with pytest.raises(SessionNotFoundError):
        other_store.set_pointer("proj", "inst2", mine)
    assert other_store.delete_session(mine) is False
    assert [event["seq"] for event in store.read_events(mine)] == [0, 1]


def test_the_same_session_id_in_two_roles_is_two_sessions(
    store: PgStore, other_store: PgStore
) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    other_store.create_session(session_id, "proj")
    with store.acquire_writer(session_id) as a, other_store.acquire_writer(session_id) as b:
        a.append([EventDraft("session/start", {"session_id": session_id})])
        assert [event.seq for event in b.append([EventDraft("turn/start", {"input": "b"})])] == [0]
    assert [event["type"] for event in store.read_events(session_id)] == ["session/start"]
    assert [event["type"] for event in other_store.read_events(session_id)] == ["turn/start"]


def test_by_sql_too_each_role_reads_only_its_rows_even_the_tables_owner(
    store: PgStore, other_store: PgStore, pg_dsn: str, pg_other_dsn: str
) -> None:
    fill(store, "owner's words")
    fill(other_store, "other's words")
    s = store.schema
    for dsn, role in ((pg_dsn, "agent_assist_test"), (pg_other_dsn, "agent_assist_test_other")):
        with connect(dsn) as conn:
            for table in TABLES:
                owners = conn.execute(f'SELECT DISTINCT owner FROM "{s}".{table}').fetchall()
                assert owners in ([(role,)], []), (role, table, owners)
            texts = conn.execute(
                f"SELECT event->'data'->>'input' FROM \"{s}\".events WHERE type = 'turn/start'"
            ).fetchall()
            assert texts == [("owner's words" if role == "agent_assist_test" else "other's words",)]
    with connect(pg_dsn) as conn:  # the tables' owner is bound by the policy: forced RLS
        table_owner = conn.execute(
            "SELECT tableowner FROM pg_tables WHERE schemaname = %s AND tablename = 'events'", (s,)
        ).fetchone()
        assert table_owner == ("agent_assist_test",)
        assert conn.execute(f'DELETE FROM "{s}".sessions').rowcount == 1  # its own only
    assert [row.owner for row in other_store.list_sessions()] == ["agent_assist_test_other"]


def test_no_role_can_write_rows_as_another(
    store: PgStore, other_store: PgStore, pg_dsn: str, pg_other_dsn: str
) -> None:
    mine = fill(store, "owner's words")
    s = store.schema
    with connect(pg_dsn) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                f'INSERT INTO "{s}".sessions (owner, session_id, project) VALUES (%s, %s, %s)',
                ("agent_assist_test_other", new_id(), "proj"),
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                f'UPDATE "{s}".sessions SET owner = %s WHERE session_id = %s',
                ("agent_assist_test_other", mine),
            )
    with connect(pg_other_dsn) as conn:
        # privileges: no TRUNCATE (which row-level security does not cover), no UPDATE of events
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f'TRUNCATE "{s}".events')
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f'UPDATE "{s}".events SET type = type')
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f'UPDATE "{s}".blobs SET size = size')
    assert [row.session_id for row in store.list_sessions()] == [mine]


def team_read_sql(schema: str, team: str) -> str:
    """The team read policy exactly as docs/scaling.md gives it, for `schema` and `team`."""
    doc = (REPO / "docs" / "scaling.md").read_text()
    block = doc.split("<!-- team-read: begin -->")[1].split("<!-- team-read: end -->")[0]
    sql = block.strip().removeprefix("```sql").removesuffix("```")
    return sql.replace("agent_assist.%I", f'"{schema}".%I').replace("agent_assist_team", team)


@pytest.mark.parametrize(
    ("team", "shared"), [("agent_assist_test_team", True), ("agent_assist_test_solo", False)]
)
def test_the_documented_team_policy_lets_members_read_and_only_read(
    store: PgStore, other_store: PgStore, pg_other_dsn: str, pg_dsn: str, team: str, shared: bool
) -> None:
    mine = fill(store, "owner's words")
    with connect(pg_dsn) as conn:  # the schema's owner applies the policy
        conn.execute(team_read_sql(store.schema, team))
    s = store.schema
    with connect(pg_other_dsn) as conn:
        events = conn.execute(f'SELECT count(*) FROM "{s}".events WHERE session_id = %s', (mine,))
        sessions = conn.execute(
            f'SELECT count(*) FROM "{s}".sessions WHERE session_id = %s', (mine,)
        )
        expected = (2, 1) if shared else (0, 0)
        assert (events.fetchone()[0], sessions.fetchone()[0]) == expected  # type: ignore[index]
        # reading, never writing: the owner-only policy still guards every change
        changed = conn.execute(
            f'UPDATE "{s}".sessions SET title = %s WHERE session_id = %s', ("mine now", mine)
        )
        assert changed.rowcount == 0
        gone = conn.execute(f'DELETE FROM "{s}".events WHERE session_id = %s', (mine,))
        assert gone.rowcount == 0
    # and agent-assist itself still lists only the role's own sessions
    assert other_store.session(mine) is None
    assert [event["seq"] for event in store.read_events(mine)] == [0, 1]
