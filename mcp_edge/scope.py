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

import inspect
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from session.paths import is_valid_session_id

if TYPE_CHECKING:
    from session.local.manager import SessionManager
    from session.pg.backend import PgSessionStore
    from session.search import SearchFilter

STORE_ENV = "AGENT_ASSIST_STORE"
SCHEMA_ENV = "AGENT_ASSIST_STORE_SCHEMA"
READ_ONLY = "agent-assist mcp reads only"
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
    store: Any  # SessionManager | PgSessionStore (both `SessionStore`)


def shown(text: str, limit: int = 40) -> str:
    """Return an argument quoted for an error message: escaped, and cut."""
    cut = text if len(text) <= limit else text[:limit] + "…"
    return repr(cut)


def read_only_dsn(spec: str) -> str:
    """Return `spec` with every transaction of its connections read-only."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(spec)
    options = str(params.get("options") or "")
    params["options"] = f"{options} -c default_transaction_read_only=on".strip()
    return make_conninfo("", **{k: v for k, v in params.items() if v is not None})


def _open_database(spec: str, workspace: Path) -> PgSessionStore:
    import psycopg

    from session.pg.backend import PgSessionStore
    from session.pg.dsn import parse_dsn, without_secrets
    from session.pg.errors import InvalidDsnError, PgStoreError
    from session.pg.query import DEFAULT_SCHEMA
    from session.pg.schema import SchemaStatus
    from session.pg.store import PgStore

    class ReadOnlyStatus(SchemaStatus):
        @property
        def read_only_reason(self) -> str | None:
            return READ_ONLY

    schema = os.environ.get(SCHEMA_ENV, "").strip() or DEFAULT_SCHEMA
    try:
        info = parse_dsn(spec)
        options: dict[str, Any] = {"schema": schema, "create": False, "pool_size": 2}
        if "read_only" in inspect.signature(PgStore.open).parameters:
            options["read_only"] = True  # a store that never writes, its search included
        pg = PgStore.open(read_only_dsn(spec), **options)
    except InvalidDsnError as exc:
        raise ScopeError(str(exc), 2) from None
    except PgStoreError as exc:
        raise ScopeError(str(exc)) from None
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ScopeError(f"the PostgreSQL store: {without_secrets(first, info)}") from None
    status = pg.status
    if status is not None:
        pg.status = ReadOnlyStatus(status.version, status.known, status.applied)
    try:
        return PgSessionStore(pg, workspace)
    except BaseException:
        pg.close()
        raise


def open_scope(store: str | None, project: str | None, *, all_projects: bool) -> Scope:
    """Open the scope the command line names (see the module doc)."""
    folder = Path(project or ".").expanduser()
    if not folder.is_dir():
        raise ScopeError(f"--project: {folder} is not a directory", 2)
    workspace = folder.resolve()
    spec = (store if store is not None else os.environ.get(STORE_ENV, "")).strip()
    if spec in ("", "local"):
        from session.local.manager import SessionManager

        return Scope(workspace, all_projects, local=SessionManager(workspace))
    return Scope(workspace, all_projects, database=_open_database(spec, workspace))


class Scope:
    """The sessions one server sees (see the module doc)."""

    def __init__(
        self,
        workspace: Path,
        all_projects: bool,
        *,
        local: SessionManager | None = None,
        database: PgSessionStore | None = None,
    ) -> None:
        self.workspace = workspace
        self.all_projects = all_projects
        self.local = local
        self.database = database

    @property
    def home(self) -> Any:
        """Return the store of the current project (`SessionStore`)."""
        return self.database if self.database is not None else self.local

    @property
    def project(self) -> str:
        """Return the current project's name: its directory locally, its key on PostgreSQL."""
        if self.database is not None:
            return self.database.project
        assert self.local is not None
        return self.local.layout.project_dir.name

    def where(self) -> str:
        """Return the scope for messages."""
        return "any project of the store" if self.all_projects else f"project {self.project}"

    def close(self) -> None:
        """Close the database's connections."""
        if self.database is not None:
            self.database.close()

    # -- the projects ------------------------------------------------------------------

    def managers(self) -> list[SessionManager]:
        """Return the local managers in scope (this project's, or every project's)."""
        assert self.local is not None
        if not self.all_projects:
            return [self.local]
        from session.local.catalog import list_projects
        from session.paths import storage_root

        return [entry.manager for entry in list_projects(storage_root())]

    def database_projects(self) -> list[str]:
        """Return the PostgreSQL projects in scope (the role's, with `--all-projects`)."""
        assert self.database is not None
        if not self.all_projects:
            return [self.database.project]
        rows = self.database.pg.list_sessions(None)
        return list(dict.fromkeys(row.project for row in rows))

    def places(self) -> Iterator[Place]:
        """Yield every session in scope (folded ones too), newest first per project."""
        if self.database is not None:
            project = None if self.all_projects else self.database.project
            for row in self.database.pg.list_sessions(project):
                yield Place(row.session_id, row.project, self.database)
            return
        for manager in self.managers():
            for session_id in sorted(manager.layout.session_ids()):
                yield Place(session_id, manager.layout.project_dir.name, manager)

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
            found = self._exact(wanted)
            if found is not None:
                return found
        elif len(wanted) >= 4:
            matches = [p for p in self.places() if p.session_id.startswith(wanted)]
            if len(matches) == 1:
                return matches[0]
            if matches:
                ids = ", ".join(sorted(p.session_id for p in matches)[:10])
                raise RefusedError(f"{wanted!r} matches several sessions: {ids}")
        raise RefusedError(f"no session {wanted} in {self.where()}")

    def _exact(self, session_id: str) -> Place | None:
        if self.database is None:
            for manager in self.managers():
                if manager.exists(session_id):
                    return Place(session_id, manager.layout.project_dir.name, manager)
            return None
        for place in self.places():
            if place.session_id == session_id:
                return place
        return None

    # -- the listing -------------------------------------------------------------------

    def listing(self, offset: int, limit: int | None) -> tuple[list[dict[str, Any]], int]:
        """Return a page of the sessions with a turn (or a title), newest first, and the total.

        `limit` None: every one from `offset`.
        """
        if self.database is not None:
            return self._database_listing(offset, limit)
        stop = None if limit is None else offset + limit
        every = self.managers()
        found: list[tuple[Any, str, bool]] = []
        total = 0
        for manager in every:
            window = (offset, limit) if len(every) == 1 else (0, stop)
            if not manager.layout.sessions_dir.is_dir():
                continue
            page, count, held, _ = manager.listing.list_rows_in_use(*window)
            name = manager.layout.project_dir.name
            found += [(row, name, row[0] in held) for row in page]
            total += count
        if len(every) > 1:
            found.sort(key=lambda listed: listed[0][7], reverse=True)
            found = found[offset:stop]
        return [_row(row, name, busy, None) for row, name, busy in found], total

    def _database_listing(self, offset: int, limit: int | None) -> tuple[list[dict[str, Any]], int]:
        from session.store.rows import listed_row

        store = self.database
        assert store is not None
        if not self.all_projects:
            rows, total, _ = store.pg.list_sessions_page(store.project, offset, limit)
        else:
            every = [r for r in store.pg.list_sessions(None) if r.turns or r.title is not None]
            stop = None if limit is None else offset + limit
            rows, total = every[offset:stop], len(every)
        busy = store.held_locks(r.session_id for r in rows)
        listed = []
        for r in rows:
            row = _row(listed_row(r), r.project, r.session_id in busy, r.host)
            row["persistence"] = r.persistence
            listed.append(row)
        return listed, total

    def stores(self) -> dict[str, Any]:
        """Return the store of each project in scope, by the name listings give it."""
        if self.database is not None:
            return {project: self.database for project in self.database_projects()}
        return {manager.layout.project_dir.name: manager for manager in self.managers()}

    # -- search ------------------------------------------------------------------------

    def search(self, text: str, limit: int, filters: SearchFilter) -> list[dict[str, Any]]:
        """Return the hits of the literal search, best first per project.

        On PostgreSQL the store's read-only search also reads the events its shared index
        has not caught up yet (`session/pg/search_pending.py`): nothing is written.
        """
        found: list[dict[str, Any]] = []
        if self.database is not None:
            from session.pg.search import search

            pg = self.database.pg
            for project in self.database_projects():
                hits = search(pg, project, text, None, limit, filters)
                found += [_hit(project, hit) for hit in hits]
            return found[:limit]
        from session.search import SearchIndex

        for manager in self.managers():
            if not manager.layout.sessions_dir.is_dir():
                continue
            with SearchIndex.for_project(manager.layout) as index:
                index.sync(manager.layout)
                hits = index.search(text, limit=limit, filters=filters)
            found += [_hit(manager.layout.project_dir.name, hit) for hit in hits]
        return found[:limit]


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
