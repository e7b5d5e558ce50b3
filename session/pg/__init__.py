"""The PostgreSQL store: sessions shared across machines, behind `session/store/backend.py`.

`store/choose.py` opens it for a PostgreSQL `store` option; psycopg is imported only then.

- `backend`: `PgSessionStore`, one project's `SessionStore` over a `PgStore`;
- `store`: `PgStore`, the low-level operations over one connection pool;
- `connection`, `dsn`, `errors`: connecting, what a connection string names, what fails;
- `schema`, `migrations`: the schema created and migrated, and each version's SQL;
- `query`: SQL with the store's schema filled in;
- `project`: which `project` a workspace's sessions are kept under;
- `records`: sessions (metadata and snapshot) and pointers, row by row;
- `events`: a session's events appended and read, `(session_id, seq)` dense;
- `log`: `PgEventLog`, an open session's writing end, with `writer` (`SessionWriter`, the
  advisory lock) and `spool` (its events kept locally while the database is away);
- `offline`, `snapshot_cache`: a store opened while the database is away;
- `offered`: which session an editor instance is offered;
- `opening`, `snapshots`: a session opened from its snapshot row and the events after it;
- `listing`: a project's session listing;
- `checkpoints`, `blobs`: checkpoints, their records and content-addressed blobs;
- `search`, `search_pending`: search with the local index's semantics, and what the shared
  index has not caught up yet;
- `importing`: this store as either side of a transfer (`session/transfer.py`);
- `scope`: `PgProjects`, the store's project or every project of the role, read
  (`StoreProjects`);
- `reader`: the store opened by a process that never writes, its transactions read-only.

See docs/storage.md.
"""

from .errors import (
    DatabaseUnreachableError,
    InvalidDsnError,
    PgReadOnlyError,
    PgStoreError,
    SchemaMigrationError,
)
from .records import SessionRow
from .store import PgStore
from .writer import SessionWriter

__all__ = [
    "DatabaseUnreachableError",
    "InvalidDsnError",
    "PgReadOnlyError",
    "PgStore",
    "PgStoreError",
    "SchemaMigrationError",
    "SessionRow",
    "SessionWriter",
]
