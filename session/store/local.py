"""The local store: the files of one project under the store root (`SessionManager`).

`SessionManager` implements `SessionStore` itself; this name says which store it is where
a caller chooses between them (`session/pg/backend.py` `PgSessionStore` is the other).
"""

from __future__ import annotations

from .manager import SessionManager

LocalSessionStore = SessionManager

__all__ = ["LocalSessionStore"]
