"""Full-text search over every session of a project: `index.sqlite`, an FTS5 projection.

The index lives in `projects/<name>_<hash8>/index.sqlite` (mode 0600, never opened through
a symlink). Like the snapshots it is only a projection of the logs: deleting it loses
nothing, and a missing, corrupt or outdated index is rebuilt from the logs.

- `schema`: the tables, their version and the rowid layout;
- `database`: the index file and its connection (safe opening, rebuilds, damage);
- `text`: what "contains" means (NFKC and case folding);
- `filters`, `when`: narrowing a search by time, kind, tool and path; a user's time words;
- `extract`: which text of which event becomes a row;
- `sync`: bringing the index up to date with the logs;
- `query`: one literal query: candidates from trigrams, checked against the text;
- `grams`: which of a query's trigrams to look up (the frequent ones cost more than they filter);
- `freshness`: how far the index is behind the logs, read without opening it for writing;
- `rank`: the order of the matches and their snippets;
- `migration`, `legacy`: an index of an older version answers while this one is built;
- `index`: `SearchIndex`, the face the rest of the product uses.

This package exposes that face; a build without search lacks it as a whole.
"""

from ..store.backend import BuildProgress
from .filters import KINDS, NO_FILTER, FilterError, SearchFilter, search_filter
from .index import SearchIndex
from .query import SearchHit
from .schema import INDEX_FILE, SearchError
from .sync import SyncStats

__all__ = [
    "INDEX_FILE",
    "KINDS",
    "NO_FILTER",
    "BuildProgress",
    "FilterError",
    "SearchError",
    "SearchFilter",
    "SearchHit",
    "SearchIndex",
    "SyncStats",
    "search_filter",
]
