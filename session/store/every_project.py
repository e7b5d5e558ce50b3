"""Every project's sessions at once, whichever store holds them (`session/list` without `cwd`).

PostgreSQL lists the role's sessions of every project in one query (`AllProjectsListing`);
the local files are this machine's store, one project directory at a time (`catalog`).
"""

from __future__ import annotations

from ..local.catalog import list_projects
from .backend import AllProjectsListing, SessionStore
from .rows import ListedRow


def every_project_rows(store: SessionStore) -> list[tuple[ListedRow, str]]:
    """Return every project's listing rows, newest first, each with its workspace root.

    A project whose workspace is not recorded (no readable session says it) is left out:
    there is no directory to name for it.
    """
    if isinstance(store, AllProjectsListing):
        return [(row, root) for row, root in store.list_every_project() if root]
    found: list[tuple[ListedRow, str]] = []
    for project in list_projects(store.home):
        if not project.workspace_root:
            continue
        rows, _total, _folded = project.manager.list_rows_page(0, None, empty=True)
        found += [(row, project.workspace_root) for row in rows]
    found.sort(key=lambda entry: entry[0][7], reverse=True)
    return found
