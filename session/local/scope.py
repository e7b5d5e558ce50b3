"""The local store's projects in scope: this project's directory, or every one (`catalog`).

One project is listed from its listing alone (no model loaded: `sessions list` answers
fast); every project, and anything that reads a session, goes through a `SessionManager`
per project directory. A project without a `sessions/` directory is skipped, never made;
one whose sessions record no workspace (none is readable) is listed with none ("").
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..paths import storage_root
from ..store.projects import Reindexed, ScopedRow
from .layout import ProjectLayout
from .project_listing import ProjectListing

if TYPE_CHECKING:
    from ..search.filters import SearchFilter
    from ..search.query import SearchHit
    from ..store.backend import SessionStore
    from .manager import SessionManager


def project_layout(workspace: Path, home: Path | None = None) -> ProjectLayout:
    """Return where the files of the project at `workspace` are (made or not)."""
    return ProjectLayout(workspace, home=home)


def project_dir(workspace: Path, home: Path | None = None) -> Path:
    """Return the directory of the project at `workspace` (made or not)."""
    return project_layout(workspace, home).project_dir


class LocalProjects:
    """The project at `workspace`, or with `every` each project of the store at `home`."""

    unindexed = 0  # the local index catches up before it answers

    def __init__(
        self,
        workspace: Path,
        *,
        every: bool,
        home: Path | None = None,
        manager: SessionManager | None = None,
    ) -> None:
        """Scope one project or all; `manager`: the project's store, already open, reused."""
        self.workspace = workspace
        self.every = every
        self.home = home
        self._managers = [manager] if manager is not None and not every else None
        self._recorded: dict[str, str] = {}  # every project's workspace, as its sessions say

    def managers(self) -> list[SessionManager]:
        """Return the manager of each project in scope (made once)."""
        if self._managers is None:
            from .catalog import list_projects
            from .manager import SessionManager

            if self.every:
                home = self.home if self.home is not None else storage_root()
                entries = list_projects(home)
                self._managers = [entry.manager for entry in entries]
                self._recorded = {e.name: e.workspace_root or "" for e in entries}
            else:
                self._managers = [SessionManager(self.workspace, home=self.home)]
        return self._managers

    def layouts(self) -> list[ProjectLayout]:
        """Return the layout of each project in scope that has sessions."""
        if self.every or self._managers is not None:
            found = [manager.layout for manager in self.managers()]
        else:  # one project: its layout alone (no model loaded)
            found = [ProjectLayout(self.workspace, home=self.home)]
        return [layout for layout in found if layout.sessions_dir.is_dir()]

    def names(self) -> list[str]:
        """Return the project directories' names."""
        return [manager.layout.project_dir.name for manager in self.managers()]

    def stores(self) -> dict[str, SessionStore]:
        """Return each project's manager, by its directory's name."""
        return {manager.layout.project_dir.name: manager for manager in self.managers()}

    def sessions(self) -> Iterator[tuple[str, str, SessionStore]]:
        """Yield every session of each project, by id, with its project and manager."""
        for manager in self.managers():
            for session_id in sorted(manager.layout.session_ids()):
                yield session_id, manager.layout.project_dir.name, manager

    def find(self, session_id: str) -> tuple[str, SessionStore] | None:
        """Return the project and manager holding `session_id` (a file of it), if any."""
        for manager in self.managers():
            if manager.exists(session_id):
                return manager.layout.project_dir.name, manager
        return None

    def rows(
        self, offset: int = 0, limit: int | None = None, *, empty: bool = False
    ) -> tuple[list[ScopedRow], int, int]:
        """Return a page of the listing; several projects' newest pages are merged by time."""
        stop = None if limit is None else offset + limit
        layouts = self.layouts()
        found: list[ScopedRow] = []
        total = folded = 0
        for layout in layouts:
            # With several projects, the newest offset + limit of each, merged below.
            window = (offset, limit) if len(layouts) == 1 else (0, stop)
            page, count, held, left_out = ProjectListing(layout).list_rows_in_use(
                *window, empty=empty
            )
            name = layout.project_dir.name
            workspace = self._recorded[name] if self.every else str(layout.workspace_root)
            found += [ScopedRow(row, name, workspace, row[0] in held) for row in page]
            total += count
            folded += left_out
        if len(layouts) > 1:  # each project's page is in order already
            found.sort(key=lambda scoped: scoped.row[7], reverse=True)
            found = found[offset:stop]
        return found, total, folded

    def search(
        self, text: str, limit: int, filters: SearchFilter | None
    ) -> list[tuple[str, SearchHit]]:
        """Search each project's index (caught up with its logs first)."""
        from ..search import SearchIndex

        found: list[tuple[str, SearchHit]] = []
        for layout in self.layouts():
            with SearchIndex.for_project(layout) as index:
                index.sync(layout)
                hits = index.search(text, limit=limit, filters=filters)
            found += [(layout.project_dir.name, hit) for hit in hits]
        return found

    def reindex(self) -> list[Reindexed]:
        """Rebuild each project's index from its logs."""
        from ..search import SearchIndex

        done = []
        for layout in self.layouts():
            with SearchIndex.for_project(layout) as index:
                stats = index.rebuild(layout)
            name = layout.project_dir.name
            problems = tuple(stats.problems)
            done.append(
                Reindexed(name, stats.sessions, stats.events, stats.rows, stats.skipped, problems)
            )
        return done
