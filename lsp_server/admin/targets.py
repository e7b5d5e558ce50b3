"""Which store, project and session a command is about, and whether a session is in use.

The store is chosen as the server chooses it: `--store` if given, else `AGENT_ASSIST_STORE`;
unset, empty or `local` is the local files, anything else a PostgreSQL connection string
(opened with `session.store.choose.open_store`, so psycopg is imported only then).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast

from .running import ProblemError, UsageError
from .table import quoted

if TYPE_CHECKING:
    from typing import TypeAlias

    from session.local.manager import SessionManager
    from session.local.project_listing import ProjectListing
    from session.pg.backend import PgSessionStore
    from session.pg.dsn import DsnInfo

    AnyStore: TypeAlias = SessionManager | PgSessionStore

# As `session.store.choose` (STORE_ENV, store_kind), which is not imported here: it loads the
# models, and a local `sessions list` answers without them.
STORE_ENV = "AGENT_ASSIST_STORE"
LOCAL_HINT = "--store local reads the local files"


def store_spec(args: argparse.Namespace) -> str | None:
    """Return the PostgreSQL connection string the store is, or None for the local files."""
    spec = getattr(args, "store", None) or os.environ.get(STORE_ENV)
    if spec is None or spec.strip() in ("", "local"):
        return None
    return spec.strip()


def workspace_of(args: argparse.Namespace) -> Path:
    """Return the resolved `--workspace` directory (default: the current one)."""
    path = Path(args.workspace or ".").expanduser()
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory")
    return path.resolve()


def project_manager(args: argparse.Namespace) -> SessionManager:
    """Return the manager of the project of `--workspace` (default: the current directory)."""
    from session.local.manager import SessionManager

    return SessionManager(workspace_of(args))


@contextmanager
def project_store(args: argparse.Namespace, *, writes: bool = False) -> Iterator[AnyStore]:
    """Yield the store of the project of `--workspace`: its files, or the database's rows.

    A database that cannot be reached, or a statement it refuses, ends the command with one
    line naming the database (never its password) and exit code 1. Unless `writes`, the
    database is only read (see `open_database`).
    """
    spec = store_spec(args)
    if spec is None:
        yield project_manager(args)
        return
    with open_database(args, spec, writes=writes) as store:
        yield store


@contextmanager
def open_database(
    args: argparse.Namespace, spec: str, *, create: bool = False, writes: bool = False
) -> Iterator[PgSessionStore]:
    """Yield the project's `PgSessionStore` (see `project_store`); closed afterwards.

    `create`: make (or migrate) the schema if needed, for a command that writes. Neither
    `create` nor `writes`: a command that only reads, which never creates, migrates, locks
    or writes anything (its search reads what the index has not caught up from the events).
    """
    import psycopg

    from session.pg.backend import PgSessionStore
    from session.pg.dsn import parse_dsn
    from session.pg.errors import DatabaseUnreachableError, InvalidDsnError
    from session.pg.query import DEFAULT_SCHEMA
    from session.store.choose import SCHEMA_ENV

    workspace = workspace_of(args)
    schema = getattr(args, "schema", None) or os.environ.get(SCHEMA_ENV, "").strip()
    try:
        info = parse_dsn(spec)
        store = PgSessionStore.open(
            spec.strip(),
            workspace,
            schema=schema or DEFAULT_SCHEMA,
            create=create,
            read_only=not (create or writes),
        )
    except InvalidDsnError as exc:
        raise UsageError(str(exc)) from None
    except DatabaseUnreachableError as exc:
        raise ProblemError(f"{exc} ({LOCAL_HINT})") from None
    except psycopg.Error as exc:
        raise ProblemError(f"the PostgreSQL store: {_first_line(exc, info)}") from None
    status = store.pg.status
    if status is not None and status.version > status.known:
        sys.stderr.write(f"note: {store.label}: {status.read_only_reason}\n")
    try:
        yield store
    except DatabaseUnreachableError as exc:
        raise ProblemError(f"{exc} ({LOCAL_HINT})") from None
    except psycopg.Error as exc:  # a statement failed (lost connections are said above)
        raise ProblemError(f"{store.label}: {_first_line(exc, info)}") from None
    finally:
        store.close()


def _first_line(exc: BaseException, info: DsnInfo) -> str:
    from session.pg.dsn import without_secrets

    return without_secrets((str(exc).strip().splitlines() or [type(exc).__name__])[0], info)


def database_of(store: AnyStore) -> PgSessionStore | None:
    """Return `store` if it is the PostgreSQL store, else None."""
    return cast("PgSessionStore", store) if store.kind == "postgresql" else None


def local_of(store: AnyStore) -> SessionManager:
    """Return `store` as the local one (the caller has ruled PostgreSQL out)."""
    assert store.kind == "local"
    return cast("SessionManager", store)


def project_name(store: AnyStore) -> str:
    """Return the project as listings name it: its directory locally, its key in PostgreSQL."""
    database = database_of(store)
    return database.project if database is not None else local_of(store).layout.project_dir.name


def where(store: AnyStore) -> str:
    """Return the project and store for messages: `project NAME` (`in postgresql://…`)."""
    database = database_of(store)
    if database is None:
        return f"project {project_name(store)}"
    return f"project {database.project} in {database.label}"


def listings(args: argparse.Namespace) -> list[ProjectListing]:
    """Return the current project's session list, or every project's with `--all-projects`.

    A listing reads only the project's files: it imports no model, so it answers without the
    cost of loading what opening a session needs.
    """
    if getattr(args, "all_projects", False):
        return [manager.listing for manager in managers(args)]
    from session.local.layout import ProjectLayout
    from session.local.project_listing import ProjectListing

    return [ProjectListing(ProjectLayout(workspace_of(args)))]


def managers(args: argparse.Namespace) -> list[SessionManager]:
    """Return the current project's manager, or every project's with `--all-projects`."""
    if getattr(args, "all_projects", False):
        from session.local.catalog import list_projects
        from session.paths import storage_root

        return [project.manager for project in list_projects(storage_root())]
    return [project_manager(args)]


def session_ids(store: AnyStore) -> Iterable[str]:
    """Return the ids of the project's sessions (from file names, or from the listing)."""
    database = database_of(store)
    if database is not None:
        return [info.session_id for info in database.list_sessions()]
    return local_of(store).layout.session_ids()


def resolve_session(store: AnyStore, wanted: str) -> str:
    """Return the session id matching `wanted` exactly or as a unique prefix (≥ 4 chars)."""
    if not re.fullmatch(r"[a-f0-9]{1,12}", wanted):
        raise UsageError(f"invalid session id {quoted(wanted)} (12 lowercase hex characters)")
    ids = sorted(session_ids(store))
    if wanted in ids:
        return wanted
    matches = [i for i in ids if i.startswith(wanted)] if len(wanted) >= 4 else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ProblemError(f"{wanted!r} matches several sessions: {', '.join(matches)}")
    raise ProblemError(f"no session {wanted} in {where(store)}")


def in_use(store: AnyStore, session_id: str) -> bool:
    """Return True if a running process holds the session's lock (probed, never taken)."""
    return session_id in store.held_locks([session_id])
