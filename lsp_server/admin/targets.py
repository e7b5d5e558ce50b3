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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from session.store.choose import (
    SCHEMA_ENV,
    STORE_ENV,
    local_projects,
    open_store,
    store_kind,
    store_projects,
)

from .running import ProblemError, UsageError
from .table import quoted

if TYPE_CHECKING:
    from session.pg.dsn import DsnInfo
    from session.store.backend import SessionStore
    from session.store.projects import StoreProjects

LOCAL_HINT = "--store local reads the local files"


def store_spec(args: argparse.Namespace) -> str | None:
    """Return the PostgreSQL connection string the store is, or None for the local files."""
    spec = getattr(args, "store", None) or os.environ.get(STORE_ENV)
    return None if store_kind(spec) == "local" or spec is None else spec.strip()


def workspace_of(args: argparse.Namespace) -> Path:
    """Return the resolved `--workspace` directory (default: the current one)."""
    path = Path(args.workspace or ".").expanduser()
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory")
    return path.resolve()


@contextmanager
def project_store(args: argparse.Namespace, *, writes: bool = False) -> Iterator[SessionStore]:
    """Yield the store of the project of `--workspace`: its files, or the database's rows.

    A database that cannot be reached, or a statement it refuses, ends the command with one
    line naming the database (never its password) and exit code 1. Unless `writes`, the
    database is only read (see `open_database`).
    """
    spec = store_spec(args)
    if spec is None:
        yield open_store(None, workspace_of(args))
        return
    with open_database(args, spec, writes=writes) as store:
        yield store


@contextmanager
def open_database(
    args: argparse.Namespace, spec: str, *, create: bool = False, writes: bool = False
) -> Iterator[SessionStore]:
    """Yield the project's store in the database `spec` names; closed afterwards.

    `create`: make (or migrate) the schema if needed, for a command that writes. Neither
    `create` nor `writes`: a command that only reads, which never creates, migrates, locks
    or writes anything (its search reads what the index has not caught up from the events).
    """
    import psycopg

    from session.pg.dsn import parse_dsn
    from session.pg.errors import DatabaseUnreachableError, InvalidDsnError
    from session.pg.query import DEFAULT_SCHEMA

    workspace = workspace_of(args)
    schema = getattr(args, "schema", None) or os.environ.get(SCHEMA_ENV, "").strip()
    try:
        info = parse_dsn(spec)
        store = open_store(
            spec,
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
    if store.notice is not None:  # a newer schema: it is only read
        sys.stderr.write(f"note: {store.label}: {store.notice}\n")
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


def where(store: SessionStore) -> str:
    """Return the project and store for messages: `project NAME` (`in postgresql://…`)."""
    if store.kind == "local":
        return f"project {store.project_name}"
    return f"project {store.project_name} in {store.label}"


@contextmanager
def projects(args: argparse.Namespace) -> Iterator[StoreProjects]:
    """Yield the current project, or every project with `--all-projects`, of the store.

    The local files are read without opening a store: a listing loads no model.
    """
    every = bool(getattr(args, "all_projects", False))
    spec = store_spec(args)
    if spec is None:
        yield local_projects(workspace_of(args), every=every)
        return
    with open_database(args, spec) as store:
        yield store_projects(store, every=every)


def resolve_session(store: SessionStore, wanted: str) -> str:
    """Return the session id matching `wanted` exactly or as a unique prefix (≥ 4 chars)."""
    if not re.fullmatch(r"[a-f0-9]{1,12}", wanted):
        raise UsageError(f"invalid session id {quoted(wanted)} (12 lowercase hex characters)")
    ids = sorted(store.session_ids())
    if wanted in ids:
        return wanted
    matches = [i for i in ids if i.startswith(wanted)] if len(wanted) >= 4 else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ProblemError(f"{wanted!r} matches several sessions: {', '.join(matches)}")
    raise ProblemError(f"no session {wanted} in {where(store)}")


def in_use(store: SessionStore, session_id: str) -> bool:
    """Return True if a running process holds the session's lock (probed, never taken)."""
    return session_id in store.held_locks([session_id])
