"""The errors of session operations a user can act on (the message says why)."""

from __future__ import annotations

import errno


class SessionError(Exception):
    """A session operation a user can act on failed; the message says why.

    `errno` is set when the operating system refused a write (a full disk, a read-only store).
    """

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


class StoreNotWritableError(SessionError):
    """The operating system refuses writes to the store (read-only, permissions)."""


# errnos meaning "this store cannot be written at all", as opposed to a full disk
UNWRITABLE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


class SessionLockedError(SessionError):
    """Another process (another editor window) is writing this session."""


class SessionNotFoundError(SessionError):
    """No session with that id exists in this project."""


class ReadOnlySessionError(SessionError):
    """The session was opened read-only (damaged log or newer schema)."""
