"""What a connection string names (host, port, database, role), never its password."""

from __future__ import annotations

import os
from dataclasses import dataclass

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .errors import DatabaseUnreachableError, InvalidDsnError

# SQLSTATE classes that mean the connection, not the statement, failed: connection
# exceptions (08), and the server shutting down or not accepting connections yet (57P).
_CONNECTION_STATES = ("08", "57P")


@dataclass(frozen=True)
class DsnInfo:
    """The parts of a DSN that may be shown to a user."""

    host: str
    port: str
    dbname: str
    user: str
    password: str | None  # kept to scrub it from messages; never shown

    @property
    def secrets(self) -> tuple[str, ...]:
        """The passwords a message or a row must never hold: the DSN's and `$PGPASSWORD`."""
        return tuple(p for p in (self.password, os.environ.get("PGPASSWORD")) if p)

    @property
    def where(self) -> str:
        """Return `host:port` (or the local socket), for messages."""
        return f"{self.host}:{self.port}" if self.port else self.host


def parse_dsn(dsn: str) -> DsnInfo:
    """Parse a libpq connection string (URI or `key=value`), filling libpq's defaults."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        # libpq's message quotes the string, which may hold a password
        raise InvalidDsnError(
            "the PostgreSQL connection string cannot be parsed "
            "(it is not shown here because it may hold a password)"
        ) from None
    env = os.environ
    host = str(params.get("host") or params.get("hostaddr") or env.get("PGHOST") or "")
    return DsnInfo(
        host=host or "the local socket",
        port=str(params.get("port") or env.get("PGPORT") or ("5432" if host else "")),
        dbname=str(params.get("dbname") or env.get("PGDATABASE") or "(default database)"),
        user=str(params.get("user") or env.get("PGUSER") or "(default role)"),
        password=str(params["password"]) if params.get("password") else None,
    )


def without_secrets(text: str, info: DsnInfo) -> str:
    """Return `text` with the DSN's password (and `$PGPASSWORD`) replaced by `***`."""
    for secret in info.secrets:
        text = text.replace(secret, "***")
    return text


def is_connection_failure(exc: BaseException) -> bool:
    """Return True if `exc` says the database is unreachable, not that a statement failed."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state.startswith(_CONNECTION_STATES)


def unreachable(info: DsnInfo, exc: BaseException | str) -> DatabaseUnreachableError:
    """Return the error telling that the database at `info` cannot be reached, and why."""
    reason = str(exc).strip().splitlines()
    detail = without_secrets(reason[0] if reason else type(exc).__name__, info)
    return DatabaseUnreachableError(
        f"cannot connect to the PostgreSQL store at {info.where} "
        f"(database {info.dbname}, role {info.user}): {detail}",
        host=info.host,
    )
