"""Opening connections, and turning "the database went away" into one clear error."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import set_json_loads

from .dsn import DsnInfo, is_connection_failure, unreachable
from .query import Conn

CONNECT_TIMEOUT = 5  # seconds; libpq's default is to wait for ever
# A writer's lock lives as long as its connection: notice a dead server in about 30 s.
_KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 15,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}


def connect_kwargs(dsn: str, purpose: str) -> dict[str, Any]:
    """Return the connection settings we add, each only where the DSN does not set it."""
    given = conninfo_to_dict(dsn)
    # shown in pg_stat_activity, so "in use" can say by whom (PostgreSQL keeps 63 bytes)
    name = f"agent-assist {purpose}, pid {os.getpid()} on {socket.gethostname()}"
    ours: dict[str, Any] = {
        "connect_timeout": CONNECT_TIMEOUT,
        "application_name": name.encode()[:63].decode(errors="ignore"),
        **_KEEPALIVES,
    }
    return {key: value for key, value in ours.items() if key not in given}


def configure(conn: Conn) -> None:
    """Set up a new connection: jsonb read with orjson."""
    set_json_loads(orjson.loads, conn)


def open_connection(dsn: str, info: DsnInfo, purpose: str) -> Conn:
    """Open one autocommit connection, or raise `DatabaseUnreachableError` naming the host."""
    with reporting(info, connecting=True):
        conn = psycopg.connect(dsn, autocommit=True, **connect_kwargs(dsn, purpose))
    configure(conn)
    return conn


@contextmanager
def reporting(info: DsnInfo, *, connecting: bool = False) -> Iterator[None]:
    """Turn a lost or refused connection inside the block into `DatabaseUnreachableError`.

    While `connecting`, any operational error (a refused password too) is one.
    """
    try:
        yield
    except psycopg.Error as exc:
        if is_connection_failure(exc) or (connecting and isinstance(exc, psycopg.OperationalError)):
            raise unreachable(info, exc) from None
        raise
