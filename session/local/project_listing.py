"""A project's session list: pages of it, the sessions in use, the rows rebuilt when changed.

Computed by `listing_index` from the project's files (`ProjectLayout`), in `listing.sqlite`;
a page is a few stats and a query, however many sessions the project has.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UNWRITABLE_ERRNOS, SessionError, SessionLockedError, StoreNotWritableError
from ..storage import StorageError, read_json_file
from ..store.rows import ListedRow, SessionInfo, row_info
from .listing import listed_fields
from .listing_db import ListingFile, NotingLock
from .listing_index import ListingIndex
from .locks import LockHeldError, is_held, take_lock

if TYPE_CHECKING:
    from ..store.session import Lock
    from .layout import ProjectLayout
    from .listing import ListedState

logger = logging.getLogger(__name__)

_PROBE_BY_NAME = 200  # up to this many sessions, each lock file is opened by its name


class ProjectListing:
    """The session list of one project's files."""

    def __init__(self, layout: ProjectLayout) -> None:
        self.layout = layout

    def list_sessions_page(
        self, offset: int = 0, limit: int | None = None, *, empty: bool = False
    ) -> tuple[list[SessionInfo], int]:
        """Return a page of the sessions, newest first, and how many there are.

        Without `empty`, the sessions without a turn are folded (`list_rows_page`).
        """
        rows, total, _, _ = self._listed(offset, limit, empty, None)
        return [row_info(row) for row in rows], total

    def list_rows_page(
        self,
        offset: int = 0,
        limit: int | None = None,
        *,
        empty: bool = False,
        keep: str | None = None,
    ) -> tuple[list[ListedRow], int, int]:
        """Return a page as stored (times as RFC 3339 text: no object per row), and the total.

        Without `empty`, the sessions without a turn (saved at an exit without one) but
        `keep` are folded: left out of the page and the total; the last value counts them.
        """
        rows, total, _, folded = self._listed(offset, limit, empty, keep)
        return rows, total, folded

    def list_rows_in_use(
        self, offset: int = 0, limit: int | None = None, *, empty: bool = False
    ) -> tuple[list[ListedRow], int, set[str], int]:
        """Return a page as stored, its total, which of it a process holds, and the folded.

        The folded: how many sessions without a turn were left out (none with `empty`). The
        rows' times are RFC 3339 text, as JSON shows them: 10,000 rows are listed without an
        object each. The lock files to probe are those the listing saw.
        """
        rows, total, locked, folded = self._listed(offset, limit, empty, None)
        wanted = {row[0] for row in rows}
        return rows, total, self._probe(wanted.intersection(locked)), folded

    def _listed(
        self, offset: int, limit: int | None, empty: bool, keep: str | None
    ) -> tuple[list[ListedRow], int, set[str], int]:
        try:
            self.layout.check_store_dirs()
        except StorageError as exc:
            logger.warning("%s: sessions not listed (%s)", self.layout.sessions_dir, exc)
            return [], 0, set(), 0
        if not self.layout.sessions_dir.is_dir():
            return [], 0, set(), 0
        index = ListingIndex(self.layout.project_dir)
        rows, total, folded = index.rows(
            self.layout.sessions_dir, self.listed_snapshot, offset, limit, empty=empty, keep=keep
        )
        return rows, total, index.locked, folded

    def listed_snapshot(self, session_id: str) -> ListedState | None:
        """Return what a changed listing row is rebuilt from (None: the log, without one).

        A snapshot as our writer makes it is read without the models; any other goes to the
        full reader, which warns and falls back as opening the session would.
        """
        path = self.layout.snapshot_path(session_id)
        try:
            fields = listed_fields(read_json_file(path), session_id)
        except FileNotFoundError:
            return None
        except ValueError:  # unreadable: the full reader says why
            fields = None
        if fields is not None:
            return fields
        from .snapshots import read_snapshot_file  # the models: only for an unusual snapshot

        return read_snapshot_file(path, session_id, None)[0]

    def held_locks(self, session_ids: Iterable[str]) -> set[str]:
        """Return the sessions among `session_ids` whose writer lock a process holds now.

        A few are probed by name; for many, one listing of `sessions/` says which have a lock
        file to probe. A probe takes the lock for an instant, creating and following nothing;
        a lock file no process holds (its writer died) is removed then.
        """
        wanted = set(session_ids)
        if len(wanted) <= _PROBE_BY_NAME:  # a page: cheaper than listing 20,000 names
            return self._probe(wanted)
        try:
            names = os.listdir(self.layout.sessions_dir)
        except OSError:
            return set()
        return self._probe(wanted.intersection(n[:-5] for n in names if n.endswith(".lock")))

    def _probe(self, locked: Iterable[str]) -> set[str]:
        held: set[str] = set()
        died: list[Path] = []
        for sid in locked:
            if is_held(self.layout.sessions_dir / f"{sid}.lock", removed=died):
                held.add(sid)
        listing = ListingFile(self.layout.project_dir)
        for path in died:  # a writer that died: its lock file no longer says so to listings
            listing.note_written(path.name[:-5])
        return held

    def lock(self, session_id: str) -> Lock:
        """Take a session's writer lock, noted in the listing when let go; else raise.

        SessionLockedError: another process holds it; StoreNotWritableError or SessionError:
        the lock file cannot be made.
        """
        self.layout.ensure_dirs()
        try:
            lock = take_lock(self.layout.lock_path(session_id))
        except LockHeldError:
            raise SessionLockedError(
                f"session {session_id} is in use by another editor window or process"
            ) from None
        except OSError as exc:
            cls = StoreNotWritableError if exc.errno in UNWRITABLE_ERRNOS else SessionError
            raise cls(
                f"cannot lock session {session_id} ({self.layout.lock_path(session_id)}): "
                f"{exc.strerror or exc}",
                errno=exc.errno,
            ) from None
        return NotingLock(lock, ListingFile(self.layout.project_dir), session_id)
