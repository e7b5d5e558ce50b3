"""A file's changes in the local store: the project's `timeline.sqlite`, caught up first.

When the index cannot be used (a read-only store, a damaged file it cannot replace), the
same projection is run over every log instead.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING

from ..log.reader import scan_log
from ..storage import StorageError
from .index import TimelineError, TimelineIndex
from .project import ChangeRow, ChangeRows, Cursor, project

if TYPE_CHECKING:
    from ..local.layout import ProjectLayout

logger = logging.getLogger(__name__)


@contextmanager
def local_changes(
    layout: ProjectLayout, path: str, since: datetime | None, until: datetime | None
) -> Iterator[ChangeRows]:
    """Yield the project's change rows of `path`, newest first, and a title lookup.

    The index is caught up first, and read as the caller iterates.
    """
    with TimelineIndex.for_project(layout) as index:
        try:
            index.catch_up(layout)
        except (TimelineError, StorageError, OSError) as exc:  # a read-only store...
            logger.warning("file history without its index (%s): reading the logs", exc)
            rows, titles = _from_logs(layout, path, since, until)
            yield rows, lambda ids: {i: titles.get(i) for i in ids}
            return
        try:
            yield index.changes(path, since, until), index.titles
        except sqlite3.Error as exc:
            raise TimelineError(f"the file-history index failed: {exc}") from None


def _from_logs(
    layout: ProjectLayout, path: str, since: datetime | None, until: datetime | None
) -> tuple[list[ChangeRow], dict[str, str | None]]:
    """Return the changes of `path` projected from every log (no index), newest first."""
    found: list[ChangeRow] = []
    titles: dict[str, str | None] = {}
    for session_id in layout.session_ids():
        cursor = Cursor()
        events = scan_log(layout.log_path(session_id)).events
        found += [r for r in project(session_id, events, cursor) if r.path == path]
        titles[session_id] = cursor.title
    found = [
        r for r in found if (since is None or r.ts >= since) and (until is None or r.ts < until)
    ]
    found.sort(key=lambda r: (r.ts, r.session_id, r.seq), reverse=True)
    return found, titles
