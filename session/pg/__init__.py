"""The PostgreSQL store (in progress): schema, migrations and the low-level store.

Not wired into the server yet; nothing outside this package imports it, so psycopg is
loaded only when a PostgreSQL store is used. See docs/storage.md.
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
