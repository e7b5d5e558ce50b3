"""`agent-assist doctor` on a PostgreSQL store: the database, only read.

Reachable (or why not, naming host, port, database and role, never the password), the
server's version, the schema's version against the one this code knows (never created or
migrated here: the connection is read-only), row-level security enabled and forced on every
table of user data, a role that bypasses it, latency, and this project's sessions.
psycopg is imported only when this runs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from session.terminal_text import counted

if TYPE_CHECKING:
    from session.pg.query import Conn

    from .doctor_report import DoctorReport, Level

    Say = Callable[[Level, str], None]

# The server, the role and whether it may migrate the schema (it owns it, or is in the
# owning role); the tables of user data (all but schema_version) with their RLS flags.
_ROLE = """SELECT current_setting('server_version'), current_user, rolsuper, rolbypassrls,
    (SELECT pg_has_role(current_user, nspowner, 'MEMBER') FROM pg_namespace WHERE nspname = %s)
    FROM pg_roles WHERE rolname = current_user"""
_RLS = """SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, pg_get_userbyid(c.relowner)
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = %s AND c.relkind IN ('r', 'p') AND c.relname <> 'schema_version'
    ORDER BY c.relname"""
_SESSIONS = """SELECT count(*) FILTER (WHERE project = %s),
    count(*) FILTER (WHERE project = %s AND owner = current_user), count(*) FROM {s}.sessions"""
ROUND_TRIPS = 5
SLOW_MS = 50.0  # every committed event waits about one round trip


def check_database(report: DoctorReport, dsn: str, schema: str, workspace: Path) -> None:
    """Check the PostgreSQL store at `dsn`, only reading: nothing is created or migrated."""
    import psycopg

    from session.pg.connection import open_connection
    from session.pg.dsn import parse_dsn, without_secrets
    from session.pg.errors import PgStoreError
    from session.pg.query import check_schema_name
    from session.store.choose import FALLBACK_HINT

    found: dict[str, Any] = {"schema": schema, "reachable": False}
    report.database = found

    def say(level: Level, message: str) -> None:
        report.add(level, "database", message)

    try:
        info = parse_dsn(dsn)
        check_schema_name(schema)
        conn = open_connection(dsn, info, "doctor")
    except (PgStoreError, ValueError) as exc:
        say("problem", f"{exc}; {FALLBACK_HINT}")
        return
    label = f"postgresql://{info.user}@{info.where}/{info.dbname}"
    report.store = {"kind": "postgresql", "label": label, "schema": schema}
    try:
        with conn:
            conn.execute("SET default_transaction_read_only = on")  # looking never writes
            found["reachable"] = True
            row = conn.execute(_ROLE, (schema,)).fetchone()
            assert row is not None
            version, role, superuser, bypass, may_migrate = row
            found.update(serverVersion=version, role=role, superuser=superuser, bypassRls=bypass)
            say("ok", f"PostgreSQL {version} at {info.where} (database {info.dbname}, role {role})")
            _latency(conn, found, say)
            if superuser or bypass:
                what = "a superuser" if superuser else "BYPASSRLS"
                say(
                    "warning",
                    f"role {role} is {what}: row-level security does not bind it, so it sees "
                    "every role's sessions (give users plain login roles)",
                )
            if _schema_version(conn, schema, role, bool(may_migrate), found, say):
                _row_level_security(conn, schema, found, say)
                _sessions(conn, schema, role, workspace, found, say)
    except psycopg.Error as exc:
        message = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        say("problem", f"checking {label}, schema {schema}: {without_secrets(message, info)}")


def _latency(conn: Conn, found: dict[str, Any], say: Say) -> None:
    times = []
    for _ in range(ROUND_TRIPS):
        started = time.perf_counter()
        conn.execute("SELECT 1").fetchone()
        times.append((time.perf_counter() - started) * 1e3)
    found["latencyMs"] = latency = round(statistics.median(times), 3)
    message = f"latency {latency:.2f} ms (median of {ROUND_TRIPS} round trips)"
    if latency > SLOW_MS:
        say("warning", f"{message}: slow, every event appended waits for one")
    else:
        say("ok", message)


def _schema_version(
    conn: Conn, schema: str, role: str, may_migrate: bool, found: dict[str, Any], say: Say
) -> bool:
    """Say what the schema's version means; return False when there is no schema yet."""
    from session.pg.schema import known_version, read_version

    found["schemaVersion"] = have = read_version(conn, schema)
    found["knownSchemaVersion"] = known = known_version()
    versions = f"schema {schema}: version {have}, this agent-assist knows {known}"
    if have is None:
        say("info", f"schema {schema}: no schema yet (agent-assist creates it on first start)")
        return False
    if have > known:
        say("problem", f"{versions}: read-only: newer than this agent-assist (upgrade it)")
    elif have < known and may_migrate:
        say("info", f"{versions}: will be migrated on first start")
    elif have < known:
        say(
            "warning",
            f"{versions}: will be migrated on first start, but role {role} cannot do it "
            "(it does not own the schema): start agent-assist once as the owner",
        )
    else:
        say("ok", f"schema {schema}: version {have} (current)")
    return True


def _row_level_security(conn: Conn, schema: str, found: dict[str, Any], say: Say) -> None:
    tables = conn.execute(_RLS, (schema,)).fetchall()
    found["rowLevelSecurity"] = {t: {"enabled": on, "forced": f} for t, on, f, _ in tables}
    disabled = [table for table, on, _, _ in tables if not on]
    unforced = {table: owner for table, on, forced, owner in tables if on and not forced}
    if disabled:
        say(
            "problem",
            f"row-level security is not enabled on {', '.join(disabled)}: every role that may "
            "connect sees all its rows",
        )
    if unforced:
        owners = ", ".join(sorted(set(unforced.values())))
        say(
            "problem",
            f"row-level security is not forced on {', '.join(unforced)}: the tables' owner "
            f"({owners}) is not bound by it and sees every role's rows there",
        )
    if not disabled and not unforced:
        say("ok", f"row-level security enabled and forced on all {len(tables)} tables")


def _sessions(
    conn: Conn, schema: str, role: str, workspace: Path, found: dict[str, Any], say: Say
) -> None:
    from session.pg.query import q
    from session.workspace.identity import project_identity

    if conn.execute("SELECT to_regclass(%s)", (f'"{schema}".sessions',)).fetchone() == (None,):
        return
    project = project_identity(workspace).key
    row = conn.execute(q(schema, _SESSIONS), (project, project)).fetchone()
    assert row is not None
    here, own, every = row
    found.update(project=project, sessions=here, ownSessions=own, allSessions=every)
    theirs = f", {here - own} of them other roles'" if here != own else ""
    say(
        "ok",
        f"{counted(here, 'session')} of this project ({project}) visible to role {role}{theirs}; "
        f"{every} in all projects",
    )
