"""A file's timeline (#42): which steps and drifts changed a workspace file, with diffs.

`index.py` keeps the local path → changes index (`timeline.sqlite`, rebuilt from the logs);
`pg.py` runs it over the events PostgreSQL holds; `project.py` is the projection both stores
share; `query.py` answers; `diff.py` diffs.
"""

from __future__ import annotations

from .query import (
    Change,
    ChangeNotFoundError,
    History,
    TimelinePathError,
    Version,
    file_history,
    file_version,
    workspace_path,
)

__all__ = [
    "Change",
    "ChangeNotFoundError",
    "History",
    "TimelinePathError",
    "Version",
    "file_history",
    "file_version",
    "workspace_path",
]
