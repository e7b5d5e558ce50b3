"""`file_changes` on PostgreSQL: a turn with edits recording what they replaced vs not (#42)."""

from __future__ import annotations

import secrets
from pathlib import Path

from session.store.backend import SessionStore

from .common import Mode, Result, database_dsn
from .file_changes import run as run_turns


def run(mode: Mode, dsn: str | None = None) -> Result:
    """Run `file_changes` with both projects' sessions in one schema of its own."""
    result = Result("pg_file_changes")
    dsn = database_dsn(result, dsn)
    if dsn is None:
        return result
    from session.pg.backend import PgSessionStore

    schema = f"bench_{secrets.token_hex(4)}"
    opened: list[PgSessionStore] = []

    def opener(workspace: Path, home: Path) -> SessionStore:
        store = PgSessionStore.open(dsn, workspace, home=home, schema=schema)
        opened.append(store)
        return store

    try:
        return run_turns(mode, opener, "pg_file_changes")
    finally:
        if opened:
            with opened[0].pg.connection() as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        for store in opened:
            store.close()
