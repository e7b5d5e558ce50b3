"""The errors of the PostgreSQL store; none of their messages holds a password."""

from __future__ import annotations

import errno

from ..errors import ReadOnlySessionError, SessionError


class PgStoreError(SessionError):
    """The PostgreSQL store cannot do what was asked; the message says why."""


class InvalidDsnError(PgStoreError):
    """The connection string cannot be parsed (it is never echoed: it may hold a password)."""


class DatabaseUnreachableError(PgStoreError):
    """The database cannot be reached (or went away); `host` names where it was looked for."""

    def __init__(self, message: str, *, host: str) -> None:
        super().__init__(message)
        self.host = host


class SchemaMigrationError(PgStoreError):
    """The schema is older than this code and could not be brought up to date."""


class SchemaNotReadyError(PgStoreError):
    """A command that only reads found no schema, or an older one: it changes neither."""


class PgReadOnlyError(ReadOnlySessionError):
    """The store is read-only: the database's schema is newer than this code knows.

    Its `errno` is `EROFS`, so a session opens read-only as on a read-only file system.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, errno=errno.EROFS)
