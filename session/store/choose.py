"""Choosing the store: `local` (the default) or a PostgreSQL connection string.

The choice comes from `initializationOptions.store` or `AGENT_ASSIST_STORE`: unset, empty
or `local` is today's files; anything else is taken as a libpq connection string
(`postgresql://…` or `host=… dbname=…`). psycopg is imported only for the latter, and the
local store's modules only for the former: this module itself loads neither, so a command
that only lists answers without them.

This is the one module outside the two store packages that names their classes: everything
else is handed a `SessionStore` (`backend.py`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..local.manager import SessionManager
    from ..pg.backend import PgSessionStore
    from ..transfer_sides import SessionTarget
    from .backend import SessionStore, StoreKind
    from .projects import StoreProjects
    from .seed_store import ImportOutcome, SeedSession

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
    read_only: bool = False,
    read_only_transactions: bool = False,
    pool_size: int | None = None,
) -> SessionStore:
    """Open the store `spec` names for the project at `workspace_root`.

    A PostgreSQL store is connected here (its schema created or migrated; with `create`
    False only checked, for commands that read); a bad string or an unreachable database
    raises `PgStoreError` with a message that names the host and never the password, unless
    `offline_ok` (a server): then the store opens offline, its sessions kept on this machine
    until the database answers (`session/pg/offline.py`).

    `read_only`: the database is only read (nothing created, migrated, locked or indexed).
    `read_only_transactions` (implies `read_only`): besides, every connection's transactions
    are read-only, so the database itself refuses a write (`agent-assist mcp`). The local
    files have no such mode: their readers only refresh the machine-local caches derived
    from the logs.
    """
    if store_kind(spec) == "local":
        from ..local.manager import SessionManager  # the local store's modules only here

        return SessionManager(workspace_root, home=home)
    assert spec is not None
    from ..pg.backend import PgSessionStore  # psycopg only when it is used

    options: dict[str, str | bool | int] = {"create": create}
    if schema := schema or os.environ.get(SCHEMA_ENV, "").strip():
        options["schema"] = schema
    if read_only or read_only_transactions:
        options["read_only"] = True
    if pool_size is not None:
        options["pool_size"] = pool_size
    if read_only_transactions:
        from ..pg.reader import open_reader

        return open_reader(spec.strip(), workspace_root, home=home, **options)
    return PgSessionStore.open(
        spec.strip(), workspace_root, home=home, offline_ok=offline_ok, **options
    )


def store_projects(store: SessionStore, *, every: bool) -> StoreProjects:
    """Return `store`'s project, or with `every` each project of the store, to read."""
    if store.kind == "local":
        from ..local.scope import LocalProjects

        return LocalProjects(
            store.workspace_root, every=every, home=store.home, manager=_files(store)
        )
    from ..pg.scope import PgProjects

    return PgProjects(_database(store), every=every)


def local_projects(workspace: Path, *, every: bool, home: Path | None = None) -> StoreProjects:
    """Return the local files' projects in scope, opening no store (a listing loads no model)."""
    from ..local.scope import LocalProjects

    return LocalProjects(workspace, every=every, home=home)


# -- what the store tools (`sessions migrate`, `sessions import`) reach of a store opened here


def transfer_side(store: SessionStore) -> SessionTarget:
    """Return `store` as either side of a copy between stores (`transfer.py`)."""
    if store.kind == "local":
        from ..local.importing import LocalTransferStore

        return LocalTransferStore(_files(store))
    from ..pg.importing import PgTransferStore

    return PgTransferStore(_database(store))


def import_seed_session(
    store: SessionStore, seed: SeedSession, *, dry_run: bool = False
) -> ImportOutcome:
    """Copy a seed's session into `store`, never over a session of its id (`dry_run`: say if)."""
    if store.kind == "local":
        from ..local.seed_import import import_session

        return import_session(_files(store).listing, seed, dry_run=dry_run)
    from ..pg.importing import import_seed_session as into_database

    return into_database(_database(store), seed, dry_run=dry_run)


def seed_destination(store: SessionStore) -> str:
    """Return where `import_seed_session` puts sessions, for messages: a folder, a database."""
    if store.kind == "local":
        return str(_files(store).layout.sessions_dir)
    from ..pg.importing import database_label

    pg = _database(store).pg
    return database_label(pg.info, pg.schema)


def _files(store: SessionStore) -> SessionManager:
    from ..local.manager import SessionManager

    assert isinstance(store, SessionManager), store.kind
    return store


def _database(store: SessionStore) -> PgSessionStore:
    from ..pg.backend import PgSessionStore

    assert isinstance(store, PgSessionStore), store.kind
    return store
