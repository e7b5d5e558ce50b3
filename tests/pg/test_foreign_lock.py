"""Another database role takes a session's lock key: the owner still writes, or hears "in use".

Every role sees every advisory lock held (`pg_locks`), so a second role can take a key it
once saw. A session's writer lock has several keys (generations): a key held by another
role is skipped, never trusted, and when another role holds every one the owner is told the
session is in use by another database role — never an internal error.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI
from session.errors import SessionLockedError
from session.pg import PgStore
from session.pg.writer import GENERATIONS, held_sessions, session_keys
from tests.pg.conftest import connect, new_id
from tests.pg.test_outage import editor_on


def role_of(dsn: str) -> str:
    user = urlsplit(dsn).username
    assert user
    return user


@pytest.fixture
def foreign(pg_other_dsn: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A connection of the second role: it takes what it can of the first role's keys."""
    with connect(pg_other_dsn) as conn:
        yield conn


def take(conn: psycopg.Connection[tuple[object, ...]], keys: list[int]) -> None:
    for key in keys:
        row = conn.execute("SELECT pg_try_advisory_lock(%s::bigint)", (key,)).fetchone()
        assert row and row[0]


def test_a_key_another_role_holds_is_skipped_and_never_trusted(
    store: PgStore, pg_dsn: str, foreign: psycopg.Connection[tuple[object, ...]]
) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    keys = session_keys(store.schema, role_of(pg_dsn), session_id)
    take(foreign, keys[:3])  # the keys it saw (or guessed)
    with PgStore.open(pg_dsn, schema=store.schema) as elsewhere:
        writer = store.acquire_writer(session_id)
        assert writer.key == keys[3] and writer.holds_lock()
        assert store.session(session_id) is not None
        with store.connection() as conn:
            assert held_sessions(conn, store.schema, store.owner, [session_id]) == {session_id}
        # A second writer of the owner's role is refused: one writer per session still.
        with pytest.raises(SessionLockedError, match="in use by another agent-assist"):
            elsewhere.acquire_writer(session_id)
        writer.release()
        with store.connection() as conn:  # the other role's keys do not make it in use
            assert held_sessions(conn, store.schema, store.owner, [session_id]) == set()
        with elsewhere.acquire_writer(session_id) as second:
            assert second.key == keys[3]


def test_every_key_held_by_another_role_is_a_clear_in_use(
    store: PgStore, pg_dsn: str, pg_other_dsn: str, foreign: psycopg.Connection[tuple[object, ...]]
) -> None:
    session_id = new_id()
    store.create_session(session_id, "proj")
    keys = session_keys(store.schema, role_of(pg_dsn), session_id)
    assert len(keys) == GENERATIONS
    take(foreign, keys)
    with pytest.raises(SessionLockedError) as refused:
        store.acquire_writer(session_id)
    message = str(refused.value)
    assert f"session {session_id} is in use by another database role" in message
    assert role_of(pg_other_dsn) in message and "NoneType" not in message


async def test_the_owners_server_opens_its_session_or_says_in_use(
    pg_dsn: str,
    pg_other_dsn: str,
    schema: str,
    workspace: Path,
    home: Path,
    fake: FakeOpenAI,
    foreign: psycopg.Connection[tuple[object, ...]],
) -> None:
    fake.add("first answer", "second answer", "third answer")
    first = editor_on(workspace, home, fake, pg_dsn, schema)
    await first.start()
    session_id = (await first.ready())["sessionId"]
    await first.request("agentAssist/chat", {"text": "before"})
    await first.stop()
    keys = session_keys(schema, role_of(pg_dsn), session_id)

    take(foreign, keys[:1])  # the key today's servers use: the other role saw it held
    second = editor_on(workspace, home, fake, pg_dsn, schema)
    await second.start()
    assert (await second.ready())["sessionId"] == session_id  # resumed, as ever
    reply = await second.request("agentAssist/chat", {"text": "after"})
    assert reply["sessionId"] == session_id
    status = await second.request("agentAssist/status")
    assert status["sessionId"] == session_id and status["store"]["online"] is True
    await second.stop()

    take(foreign, keys[1:])  # now every key: the session cannot be written
    third = editor_on(workspace, home, fake, pg_dsn, schema)
    await third.start()
    started = await third.ready()
    with pytest.raises(JsonRpcException) as refused:
        await third.request("agentAssist/open", {"sessionId": session_id})
    assert refused.value.code != -32603, refused.value.message
    assert "in use by another database role" in refused.value.message
    assert role_of(pg_other_dsn) in refused.value.message
    status = await third.request("agentAssist/status")
    assert status["sessionId"] == started["sessionId"] != session_id
    await third.stop()
    for editor in (first, second, third):
        logged = [m.message for m in editor.client.messages]
        logged += [m.message for m in editor.client.log_messages]  # window/logMessage
        assert not [m for m in logged if "NoneType" in m or "JsonRpcInternalError" in m], logged
        assert not [m for m in logged if "Traceback" in m], logged  # a refusal is no crash
