"""The local store's search: the project's derived index (`session/search`), kept caught up.

The `StoreSearch` of `SessionManager` (`store/backend.py`): a search first brings the
index up to date with the logs (one session's, or the project's), then asks it. While an
index of an older version answers and this version's waits to be built (`migrating`), an
unfiltered search may be answered by the older one as it is (`stale_ok`: the caller
builds the new one meanwhile with `build_step`); otherwise the build is finished first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..search import BuildProgress, SearchFilter, SearchHit, SearchIndex
    from .layout import ProjectLayout


class LocalSearch:
    """The search of one project's local sessions (`index.sqlite`, opened on first use)."""

    def __init__(self, layout: ProjectLayout, index: SearchIndex | None = None) -> None:
        self._layout = layout
        self._index = index

    @property
    def index(self) -> SearchIndex:
        """Return the project's index (opened on first use; raises `SearchError`)."""
        if self._index is None:
            from ..search import SearchIndex  # sqlite's FTS5 only when searching

            self._index = SearchIndex.for_project(self._layout)
        return self._index

    @property
    def migrating(self) -> bool:
        """Return True while an older index answers (see `StoreSearch`)."""
        return self.index.migrating

    def search(
        self,
        query: str,
        session_id: str | None = None,
        limit: int = 50,
        filters: SearchFilter | None = None,
        *,
        stale_ok: bool = False,
    ) -> list[SearchHit]:
        """Catch the index up (one session's log, or all), then search it (`StoreSearch`)."""
        index, layout = self.index, self._layout
        migrating = index.migrating
        if migrating and stale_ok and (filters is None or filters.empty):
            return index.search(query, session_id, limit)
        if session_id is not None and not migrating:
            index.sync_session(layout, session_id)
        else:
            index.sync(layout)  # (and finishes a rebuild at once)
        return index.search(query, session_id, limit, filters)

    def build_step(self) -> BuildProgress:
        """Build a slice of the new index."""
        return self.index.build_step(self._layout)

    def catch_up(self, session_id: str) -> None:
        """Index what the session's log appended since."""
        self.index.sync_session(self._layout, session_id)

    def close(self) -> None:
        """Close the index, if it was opened."""
        if self._index is not None:
            self._index.close()
