"""The PostgreSQL store's projects in scope: the store's project, or every project of the role.

Every project's sessions come in one query (`PgStore.list_sessions(None)`); a session of
another project is read through the same store (its rows are the role's). Nothing here
writes: a read-only store's search reads what the index has not caught up from the events,
and counts it in `unindexed`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..store.projects import ScopedRow
from ..store.rows import listed_row
from .backend import PgSessionStore
from .search import search

if TYPE_CHECKING:
    from ..search.filters import SearchFilter
    from ..search.query import SearchHit
    from ..store.backend import SessionStore


class PgProjects:
    """`store`'s project, or with `every` each project of the role in its database."""

    def __init__(self, store: PgSessionStore, *, every: bool) -> None:
        self.store = store
        self.every = every
        self.unindexed = 0

    def names(self) -> list[str]:
        """Return the projects' keys (the role's projects that have a session, with `every`)."""
        if not self.every:
            return [self.store.project]
        return list(dict.fromkeys(row.project for row in self.store.pg.list_sessions(None)))

    def stores(self) -> dict[str, SessionStore]:
        """Return the store (one for all) by project."""
        return dict.fromkeys(self.names(), self.store)

    def sessions(self) -> Iterator[tuple[str, str, SessionStore]]:
        """Yield every session in scope, newest first: id, project, store."""
        project = None if self.every else self.store.project
        for row in self.store.pg.list_sessions(project):
            yield row.session_id, row.project, self.store

    def find(self, session_id: str) -> tuple[str, SessionStore] | None:
        """Return the project of `session_id` if it is in scope (another's is not seen)."""
        row = self.store.pg.session(session_id)
        if row is None or not (self.every or row.project == self.store.project):
            return None
        return row.project, self.store

    def rows(
        self, offset: int = 0, limit: int | None = None, *, empty: bool = False
    ) -> tuple[list[ScopedRow], int, int]:
        """Return a page of the listing (every project's: one query, no summary read)."""
        store = self.store
        if not self.every:
            page, total, folded = store.pg.list_sessions_page(
                store.project, max(0, offset), limit, empty=empty
            )
            workspace = str(store.workspace_root)
        else:
            every = store.pg.list_sessions(None)
            # No summary read here: a session without a turn or a title is folded.
            listed = [r for r in every if empty or r.turns or r.title is not None]
            page = listed[offset : None if limit is None else offset + limit]
            total, folded, workspace = len(listed), len(every) - len(listed), ""
        busy = store.held_locks(r.session_id for r in page)
        return (
            [
                ScopedRow(
                    listed_row(r),
                    r.project,
                    workspace if not self.every else r.workspace_root or "",
                    r.session_id in busy,
                    r.host,
                    r.persistence,
                )
                for r in page
            ],
            total,
            folded,
        )

    def search(
        self, text: str, limit: int, filters: SearchFilter | None
    ) -> list[tuple[str, SearchHit]]:
        """Search each project's events in the database's own index."""
        found: list[tuple[str, SearchHit]] = []
        self.unindexed = 0
        for project in self.names():
            found += [
                (project, hit) for hit in search(self.store.pg, project, text, None, limit, filters)
            ]
            self.unindexed += self.store.pg.unindexed
        return found

    def reindex(self) -> None:
        """Return None: the database keeps its index itself (each search catches it up)."""
        return None
