"""The projects one command reads: a store's current project, or every project of it.

`sessions list|search|reindex|stats --all-projects` and the MCP server's scope read either
one project or all of them, in either store, through `StoreProjects`
(`choose.store_projects` returns one). The local files are a directory per project, read
one at a time (`local/scope.py`); PostgreSQL answers for every project of the role in one
query (`pg/scope.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..search.filters import SearchFilter
    from ..search.query import SearchHit
    from .backend import SessionStore
    from .rows import ListedRow


@dataclass(frozen=True)
class ScopedRow:
    """A row of a listing, with the project it belongs to."""

    row: ListedRow
    project: str  # as listings name it: its directory locally, its key in a database
    workspace: str  # the project's folder ("" where no session recorded one)
    in_use: bool  # a running process holds the session's writer lock
    host: str | None = None  # a shared store: the machine that last wrote the session
    persistence: str | None = None  # a shared store: the session's persistence


@dataclass(frozen=True)
class Reindexed:
    """What rebuilding one project's search index found."""

    project: str
    sessions: int
    events: int
    rows: int
    skipped: str | None  # why nothing was done (another process held the index)
    problems: tuple[str, ...]


class StoreProjects(Protocol):
    """One project of a store, or all of it (`every`), read only (see the module doc)."""

    @property
    def every(self) -> bool:
        """Return True if every project of the store is in scope."""
        ...

    @property
    def unindexed(self) -> int:
        """Return how many events the last search read from the events, not the index."""
        ...

    def names(self) -> list[str]:
        """Return the projects in scope, by the names listings give them."""
        ...

    def stores(self) -> dict[str, SessionStore]:
        """Return each project's store, by name (that reads its sessions)."""
        ...

    def sessions(self) -> Iterator[tuple[str, str, SessionStore]]:
        """Yield every session in scope (those without a turn too): id, project, store."""
        ...

    def find(self, session_id: str) -> tuple[str, SessionStore] | None:
        """Return the project and store of the session `session_id`, if it is in scope."""
        ...

    def rows(
        self, offset: int = 0, limit: int | None = None, *, empty: bool = False
    ) -> tuple[list[ScopedRow], int, int]:
        """Return a page of the listing, newest first, its total, and how many it folds.

        Without `empty`, the sessions without a turn (or a title) are folded: neither on the
        page nor in the total. `limit` None: every row from `offset`.
        """
        ...

    def search(
        self, text: str, limit: int, filters: SearchFilter | None
    ) -> list[tuple[str, SearchHit]]:
        """Return each project's hits of the literal search (best first), with its name."""
        ...

    def reindex(self) -> list[Reindexed] | None:
        """Rebuild each project's search index from its logs; None if the store keeps its own."""
        ...
