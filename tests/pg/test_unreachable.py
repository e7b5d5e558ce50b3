"""An unreachable database: the error names the host, never the password.

Most of these need no server at all, so they run everywhere.
"""

from __future__ import annotations

import os
import socket

import pytest

from session.pg import DatabaseUnreachableError, InvalidDsnError, PgStore
from tests.pg.conftest import connect

PASSWORD = "pw-Very-Secret-9f3a"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("form", ["uri", "keywords"])
def test_an_unreachable_server_is_named_by_host_and_never_by_password(form: str) -> None:
    port = closed_port()
    dsn = (
        f"postgresql://alice:{PASSWORD}@127.0.0.1:{port}/sessions?sslmode=disable"
        if form == "uri"
        else f"host=127.0.0.1 port={port} user=alice password={PASSWORD} dbname=sessions"
    )
    with pytest.raises(DatabaseUnreachableError) as raised:
        PgStore.open(dsn, schema="aat_unused")
    message = str(raised.value)
    assert f"127.0.0.1:{port}" in message
    assert "database sessions" in message and "role alice" in message
    assert "refused" in message.lower()  # and why
    assert PASSWORD not in message and PASSWORD not in repr(raised.value.args)
    assert raised.value.host == "127.0.0.1"
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_pgpassword_is_not_shown_either(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    monkeypatch.setenv("PGHOST", "127.0.0.1")
    monkeypatch.setenv("PGPORT", str(closed_port()))
    with pytest.raises(DatabaseUnreachableError) as raised:
        PgStore.open("dbname=sessions user=alice", schema="aat_unused")
    assert "127.0.0.1" in str(raised.value) and PASSWORD not in str(raised.value)


def test_a_dsn_that_cannot_be_parsed_is_not_echoed() -> None:
    with pytest.raises(InvalidDsnError) as raised:
        PgStore(f"host=db password={PASSWORD} garbage")
    assert PASSWORD not in str(raised.value) and "garbage" not in str(raised.value)


def test_a_wrong_password_names_the_host_and_not_the_password(pg_dsn: str) -> None:
    store = PgStore(pg_dsn)
    assert store.info.password
    wrong = pg_dsn.replace(store.info.password, PASSWORD)
    with pytest.raises(DatabaseUnreachableError) as raised:
        PgStore.open(wrong, schema="aat_unused")
    message = str(raised.value)
    assert store.info.host in message and "password authentication failed" in message
    assert PASSWORD not in message and store.info.password not in message


def test_pooled_connections_the_server_dropped_are_replaced(store: PgStore, pg_dsn: str) -> None:
    store.create_session("0123456789ab", "proj")
    with connect(pg_dsn) as admin:
        ended = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE usename = current_user AND pid <> pg_backend_pid()"
            " AND application_name LIKE %s",  # this process's: tests run side by side
            (f"agent-assist pool, pid {os.getpid()} %",),
        ).fetchone()
    assert ended is not None and ended[0] >= 1
    assert [row.session_id for row in store.list_sessions()] == ["0123456789ab"]
