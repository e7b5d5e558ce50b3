"""The store(s) and project(s) one `agent-assist mcp` answers for, opened for reading only.

The store is chosen as the CLI chooses it: `--store`, else `AGENT_ASSIST_STORE`; unset, empty
or `local` is the local files, anything else a PostgreSQL connection string. The project is
the folder the server was started in (or `--project DIR`), as the CLI's `--workspace`; with
`--all-projects`, every project of the store. A session outside the scope is not seen, by id
either.

Nothing is written to the store: no session is opened for writing and no lock is taken. On
PostgreSQL every connection runs read-only transactions (`default_transaction_read_only`),
and the store is marked read-only, so a search indexes nothing and no project is renamed.
Locally the machine-local derived caches (`listing.sqlite`, `index.sqlite`,
`timeline.sqlite`) are refreshed as the CLI's listing and search refresh them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from session.paths import is_valid_session_id

if TYPE_CHECKING:
    from session.search import SearchFilter
    from session.store.backend import SessionStore
    from session.store.projects import StoreProjects

STORE_ENV = "AGENT_ASSIST_STORE"
SCHEMA_ENV = "AGENT_ASSIST_STORE_SCHEMA"
MAX_ID = 64  # an id argument longer than this is not looked at


class ScopeError(Exception):
    """The server cannot start: a bad option (code 2) or a store it cannot read (code 1)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class RefusedError(Exception):
    """A tool's arguments or target cannot be answered: the message is for the caller."""


@dataclass(frozen=True)
class Place:
    """Where a session is: its id, its project's name and the store that reads it."""

    session_id: str
    project: str
    store: SessionStore


def shown(text: str, limit: int = 40) -> str:
    """Return an argument quoted for an error message: escaped, and cut."""
    cut = text if len(text) <= limit else text[:limit] + "…"
    return repr(cut)


def _open_database(spec: str, workspace: Path) -> SessionStore:
    """Open the database's store of the project, its connections reading only."""
    import psycopg

    from session.pg.dsn import parse_dsn, without_secrets
    from session.pg.errors import InvalidDsnError, PgStoreError
    from session.pg.query import DEFAULT_SCHEMA
    from session.store.choose import open_store

    schema = os.environ.get(SCHEMA_ENV, "").strip() or DEFAULT_SCHEMA
    try:
        info = parse_dsn(spec)
        return open_store(spec, workspace, schema=schema, pool_size=2, read_only_transactions=True)
    except InvalidDsnError as exc:
        raise ScopeError(str(exc), 2) from None
    except PgStoreError as exc:
        raise ScopeError(str(exc)) from None
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ScopeError(f"the PostgreSQL store: {without_secrets(first, info)}") from None


def open_scope(store: str | None, project: str | None, *, all_projects: bool) -> Scope:
    """Open the scope the command line names (see the module doc)."""
    from session.store.choose import open_store, store_kind

    folder = Path(project or ".").expanduser()
    if not folder.is_dir():
        raise ScopeError(f"--project: {folder} is not a directory", 2)
    workspace = folder.resolve()
    spec = (store if store is not None else os.environ.get(STORE_ENV, "")).strip()
    if store_kind(spec) == "local":
        return Scope(open_store(None, workspace), all_projects)
    return Scope(_open_database(spec, workspace), all_projects)


class Scope:
    """The sessions one server sees (see the module doc)."""

    def __init__(self, home: SessionStore, all_projects: bool) -> None:
        from session.store.choose import store_projects

        self.home = home  # the store of the current project
        self.workspace = home.workspace_root
        self.all_projects = all_projects
        self.projects: StoreProjects = store_projects(home, every=all_projects)

    @property
    def project(self) -> str:
        """Return the current project's name: its directory locally, its key on PostgreSQL."""
        return self.home.project_name

    def where(self) -> str:
        """Return the scope for messages."""
        return "any project of the store" if self.all_projects else f"project {self.project}"

    def close(self) -> None:
        """Close the database's connections."""
        self.home.close()

    def places(self) -> Iterator[Place]:
        """Yield every session in scope (folded ones too), newest first per project."""
        for session_id, project, store in self.projects.sessions():
            yield Place(session_id, project, store)

    # -- one session -------------------------------------------------------------------

    def place(self, wanted: object) -> Place:
        """Return the session `wanted` names: an id, or a unique prefix of 4 or more."""
        if not isinstance(wanted, str) or not wanted:
            raise RefusedError("session_id must be a session id (12 lowercase hex characters)")
        if len(wanted) > MAX_ID or not re.fullmatch(r"[a-f0-9]{1,12}", wanted):
            raise RefusedError(
                f"invalid session id {shown(wanted)}: 12 lowercase hex characters "
                "(list_sessions or search_sessions give them)"
            )
        if is_valid_session_id(wanted):
            found = self.projects.find(wanted)
            if found is not None:
                return Place(wanted, *found)
        elif len(wanted) >= 4:
            matches = [p for p in self.places() if p.session_id.startswith(wanted)]
            if len(matches) == 1:
                return matches[0]
            if matches:
                ids = ", ".join(sorted(p.session_id for p in matches)[:10])
                raise RefusedError(f"{wanted!r} matches several sessions: {ids}")
        raise RefusedError(f"no session {wanted} in {self.where()}")

    # -- the listing -------------------------------------------------------------------

    def listing(self, offset: int, limit: int | None) -> tuple[list[dict[str, Any]], int]:
        """Return a page of the sessions with a turn (or a title), newest first, and the total.

        `limit` None: every one from `offset`.
        """
        page, total, _ = self.projects.rows(offset, limit)
        listed = []
        for scoped in page:
            row = _row(scoped.row, scoped.project, scoped.in_use, scoped.host)
            if scoped.persistence is not None:
                row["persistence"] = scoped.persistence
            listed.append(row)
        return listed, total

    def stores(self) -> dict[str, SessionStore]:
        """Return the store of each project in scope, by the name listings give it."""
        return self.projects.stores()

    # -- search ------------------------------------------------------------------------

    def search(self, text: str, limit: int, filters: SearchFilter) -> list[dict[str, Any]]:
        """Return the hits of the literal search, best first per project.

        On PostgreSQL the store's read-only search also reads the events its shared index
        has not caught up yet (`session/pg/search_pending.py`): nothing is written.
        """
        found = self.projects.search(text, limit, filters)
        return [_hit(project, hit) for project, hit in found][:limit]


def _row(row: Any, project: str, busy: bool, machine: str | None) -> dict[str, Any]:
    session_id, title, created_at, updated_at, turns, parent, phase, _ = row
    found: dict[str, Any] = {
        "session_id": session_id,
        "title": title,
        "phase": phase,
        "turns": turns,
        "created_at": created_at,
        "last_active": updated_at,
        "in_use": busy,
        "project": project,
    }
    if machine:
        found["machine"] = machine
    if parent:
        found["parent_session_id"] = parent
    return found


def _hit(project: str, hit: Any) -> dict[str, Any]:
    return {
        "session_id": hit.session_id,
        "project": project,
        "turn": hit.turn,
        "step": hit.step,
        "time": None if hit.ts is None else hit.ts.isoformat(),
        "seq": hit.seq,
        "type": hit.type,
        "snippet": hit.snippet,
    }
