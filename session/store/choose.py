"""Choosing the store: `local` (the default) or a PostgreSQL connection string.

The choice comes from `initializationOptions.store` or `AGENT_ASSIST_STORE`: unset, empty
or `local` is today's files; anything else is taken as a libpq connection string
(`postgresql://…` or `host=… dbname=…`). psycopg is imported only for the latter.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..local.manager import SessionManager
from .backend import SessionStore, StoreKind

STORE_ENV = "AGENT_ASSIST_STORE"
SCHEMA_ENV = "AGENT_ASSIST_STORE_SCHEMA"  # the PostgreSQL schema (default agent_assist)
FALLBACK_HINT = (
    "to keep sessions in local files instead, set store to local "
    f"(initializationOptions.store or {STORE_ENV}=local)"
)


def store_kind(spec: str | None) -> StoreKind:
    """Return which store `spec` names."""
    return "local" if spec is None or spec.strip() in ("", "local") else "postgresql"


def open_store(
    spec: str | None,
    workspace_root: Path,
    *,
    home: Path | None = None,
    schema: str | None = None,
    create: bool = True,
    offline_ok: bool = False,
) -> SessionStore:
    """Open the store `spec` names for the project at `workspace_root`.

    A PostgreSQL store is connected here (its schema created or migrated; with `create`
    False only checked, for commands that read); a bad string or an unreachable database
    raises `PgStoreError` with a message that names the host and never the password, unless
    `offline_ok` (a server): then the store opens offline, its sessions kept on this machine
    until the database answers (`session/pg/offline.py`).
    """
    if store_kind(spec) == "local":
        return SessionManager(workspace_root, home=home)
    assert spec is not None
    from ..pg.backend import PgSessionStore  # psycopg only when it is used

    options: dict[str, str | bool] = {"create": create}
    if schema := schema or os.environ.get(SCHEMA_ENV, "").strip():
        options["schema"] = schema
    return PgSessionStore.open(
        spec.strip(), workspace_root, home=home, offline_ok=offline_ok, **options
    )
