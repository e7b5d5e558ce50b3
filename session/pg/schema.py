"""Creating and migrating the schema, versioned in `schema_version`, run by our code.

A database whose schema is newer than this code knows is left untouched: the store opens
it read-only. Migrations run in one transaction under an advisory lock, so servers that
start at once on a fresh database create the schema once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from .errors import SchemaMigrationError, SchemaNotReadyError
from .migrations import MIGRATIONS, Migration
from .query import Conn, advisory_key, q

_VERSION_TABLE = """CREATE TABLE IF NOT EXISTS {s}.schema_version (
    version integer PRIMARY KEY,
    description text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    applied_by text NOT NULL DEFAULT current_user
)"""

_RECORD = "INSERT INTO {s}.schema_version (version, description) VALUES (%s, %s)"


@dataclass(frozen=True)
class SchemaStatus:
    """The schema version found in the database, and what this code knows."""

    version: int
    known: int
    applied: tuple[int, ...] = ()  # migrations this call applied

    @property
    def read_only_reason(self) -> str | None:
        """Why the store must not be written (a newer schema), or None."""
        if self.version <= self.known:
            return None
        return (
            f"the database's agent-assist schema is version {self.version}, newer than this "
            f"agent-assist knows ({self.known}): the store is read-only; upgrade agent-assist "
            "to write to it"
        )


def known_version(migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Return the newest version of `migrations` (which must be numbered 1, 2, ... N)."""
    numbers = [m.version for m in migrations]
    if numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"migrations must be numbered 1..N, not {numbers}")
    return len(numbers)


def read_version(conn: Conn, schema: str) -> int | None:
    """Return the database's schema version, or None when it has no schema yet."""
    row = conn.execute(
        "SELECT to_regclass(quote_ident(%s) || '.schema_version') IS NOT NULL", (schema,)
    ).fetchone()
    if not row or not row[0]:
        return None
    found = conn.execute(q(schema, "SELECT max(version) FROM {s}.schema_version")).fetchone()
    value = found[0] if found else None
    return value if isinstance(value, int) else 0


def check_schema(
    conn: Conn, schema: str, label: str, migrations: Sequence[Migration] = MIGRATIONS
) -> SchemaStatus:
    """Return the schema's status without creating or migrating anything (`label`: where).

    `SchemaNotReadyError` when there is no schema, or one older than this code: a command
    that only reads never changes the database (a server's start creates and upgrades it,
    and an upgrade would turn older servers on other machines read-only).
    """
    known = known_version(migrations)
    version = read_version(conn, schema)
    if version is None:
        raise SchemaNotReadyError(
            f"{label} has no agent-assist schema {schema!r}: no session was ever stored there "
            "(a server creates it at its first start; is the database name right?)"
        )
    if version < known:
        raise SchemaNotReadyError(
            f"{label} has agent-assist schema version {version}, older than this "
            f"agent-assist needs ({known}): commands that only read do not upgrade it; a server "
            "of this version upgrades it when it starts (or `agent-assist sessions migrate "
            "--to` this database, which upgrades it first)"
        )
    return SchemaStatus(version, known)


def ensure_schema(
    conn: Conn,
    schema: str,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> SchemaStatus:
    """Create or migrate the schema up to the newest migration; never touch a newer one.

    `conn` must be in autocommit mode (each migration run is its own transaction).
    """
    known = known_version(migrations)
    try:
        version = read_version(conn, schema)
        if version is not None and version >= known:
            return SchemaStatus(version, known)
        with conn.transaction():
            lock = advisory_key(schema, "migrate")
            conn.execute("SELECT pg_advisory_xact_lock(%s::bigint)", (lock,))
            exists = conn.execute("SELECT to_regnamespace(quote_ident(%s))", (schema,)).fetchone()
            if not exists or exists[0] is None:
                conn.execute(q(schema, "CREATE SCHEMA {s}"))
            conn.execute(q(schema, _VERSION_TABLE))
            version = read_version(conn, schema) or 0  # again: another server may have won
            applied: list[int] = []
            for migration in migrations:
                if migration.version <= version:
                    continue
                for statement in migration.statements:
                    conn.execute(q(schema, statement))
                conn.execute(q(schema, _RECORD), (migration.version, migration.description))
                applied.append(migration.version)
    except psycopg.errors.InsufficientPrivilege as exc:
        user = conn.info.user
        raise SchemaMigrationError(
            f"role {user} cannot create or migrate the agent-assist schema {schema!r} to "
            f"version {known} ({exc.diag.message_primary or exc}): run agent-assist once as "
            "the role that owns the schema, or grant this role CREATE on the database"
        ) from None
    return SchemaStatus(applied[-1] if applied else version, known, tuple(applied))
