"""The PostgreSQL store opened by a process that must never write (`agent-assist mcp`).

Besides the store's own read-only mode (nothing created, migrated, locked or indexed; its
search reads what the index has not caught up from the events), every connection runs
read-only transactions (`default_transaction_read_only`): a statement that would write is
refused by the database itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .backend import PgSessionStore
from .store import PgStore


def read_only_dsn(spec: str) -> str:
    """Return `spec` with every transaction of its connections read-only."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(spec)
    options = str(params.get("options") or "")
    params["options"] = f"{options} -c default_transaction_read_only=on".strip()
    return make_conninfo("", **{k: v for k, v in params.items() if v is not None})


def open_reader(
    spec: str, workspace_root: Path, *, home: Path | None = None, **options: Any
) -> PgSessionStore:
    """Return the project's store for a reader (see the module doc); `PgStoreError` if not."""
    pg = PgStore.open(read_only_dsn(spec), **{**options, "read_only": True, "create": False})
    try:
        return PgSessionStore(pg, workspace_root, home=home)
    except BaseException:
        pg.close()
        raise
