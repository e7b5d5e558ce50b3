"""The session list as a projection: one row per session, refreshed only where files changed.

Listing a project used to read every snapshot each time, so the cost grew with every session
a user ever had. `listing.sqlite` (beside `index.sqlite`, `listing_db`) keeps each session's
row with the identity of the files it came from (inode, size and mtime of its snapshot and of
its log) and re-reads only the sessions whose snapshot changed (or, without one, whose log
did); a log that only grew moves `updated_at` without a parse. A page (`offset`, `limit`) is
read in `updated_at` order from the table, so only its rows are built. Like the search index
it holds nothing the logs do not: missing, unreadable, damaged or of another version, it is
rebuilt; on a read-only store the listing is computed without it.

Which files a listing stats, cheapest case first:

- `sessions/` unchanged (same inode, ctime and mtime: no entry added, removed or renamed,
  and snapshots are only ever replaced by a rename): no directory is read. Only the sessions
  whose log can be growing in place are stat'ed: those with a writer's lock file (their
  names kept from the scan that trusted the directory) and those noted since. The
  directory's times are trusted only once they are older, by the file system's own clock
  (the mtime of `listing.sqlite` just touched), than a margin: a change in the same tick as
  the one seen would leave them as they were.
- `sessions/` changed: its names and inodes are read without a stat (one `scandir`) and
  compared with those the rows came from; the sessions with a file added, removed or
  replaced, with a lock file now or at the last scan, or noted by their writer are stat'ed.
  A file rewritten in place, or whose inode came back with a second save, was written under
  its session's lock: its writer's lock file is there, or the writer noted the session in
  `listing.sqlite` after its last write and before its lock file went (`listing_db.NotingLock`; a
  probe that removes a dead writer's lock file notes it too). What no writer of ours wrote
  (a log appended to by hand) is listed as it was until its session is written again, or
  the next full pass.
- no scan yet, or the last one that stat'ed every file is `VERIFY_S` (an hour) old: every
  file is stat'ed.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..paths import is_valid_session_id
from ..store.rows import ListedRow, SessionInfo, iso, iso_of, row_info, to_us
from .listing import session_info
from .listing_db import (
    COUNT,
    SELECT_KEY,
    SELECT_KEYS,
    SELECT_NAMES,
    SELECT_PAGE,
    Changes,
    ListingFile,
    busy,
)
from .listing_files import (
    DirKey,
    Files,
    Row,
    dir_key,
    file_system_now,
    scan_files,
    scan_names,
    session_keys,
    session_of,
)

if TYPE_CHECKING:
    from .listing import ListedState

logger = logging.getLogger(__name__)

_DIR_MARGIN_NS = 1_000_000_000  # a directory changed this close to being seen is "racy"
VERIFY_S = 3600.0  # every file is stat'ed again at least this often
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_BY_NAME = 200  # up to this many sessions to look at again, their rows are read by id
SnapshotReader = Callable[[str], "ListedState | None"]


def _age(verified: str | None) -> float | None:
    """Return the seconds since `verified` (a time.time() as text); None: never, or later."""
    try:
        age = time.time() - float(verified or "")
    except ValueError:
        return None
    return age if age >= 0 else None  # a clock set back: look at every file now


def _trusted(key: DirKey) -> str:
    return " ".join(map(str, (*key, "trusted")))


def _keys_of(conn: sqlite3.Connection, wanted: Files) -> list[Row]:
    """Return the stored keys (`SELECT_KEYS`' columns) of the sessions in `wanted`."""
    if len(wanted) > _BY_NAME:  # many: one pass
        return [row for row in conn.execute(SELECT_KEYS) if row[0] in wanted]
    rows: list[Row] = []
    for sid in wanted:
        rows += conn.execute(SELECT_KEY, (sid, sid)).fetchall()
    return rows


def _stat_sessions(sessions_dir: Path, session_ids: set[str]) -> Files | None:
    """Return the files of the named sessions, each stat'ed (None: the directory is gone)."""
    files: Files = {}
    if not session_ids:
        return files
    try:
        fd = os.open(sessions_dir, _DIR_FLAGS)
    except OSError:
        return None
    try:
        for sid in session_ids:
            if is_valid_session_id(sid):
                files[sid] = session_keys(fd, sid)
    finally:
        os.close(fd)
    return files


class ListingIndex:
    """The cached rows of one project's session list."""

    def __init__(self, project_dir: Path) -> None:
        self.file = ListingFile(project_dir)
        self.path = self.file.path
        # After a listing: the sessions with a lock file in `sessions/` as it was read (a
        # writer holds it now, or died holding it), for `ProjectLayout.held_locks`.
        self.locked: set[str] = set()

    # -- listing -----------------------------------------------------------------------

    def sessions(self, sessions_dir: Path, read_snapshot: SnapshotReader) -> list[SessionInfo]:
        """Return every session of the project, newest first, refreshing what changed."""
        return self.page(sessions_dir, read_snapshot)[0]

    def page(
        self,
        sessions_dir: Path,
        read_snapshot: SnapshotReader,
        offset: int = 0,
        limit: int | None = None,
    ) -> tuple[list[SessionInfo], int]:
        """Return a page of the sessions, newest first, and how many there are."""
        rows, total, _ = self.rows(sessions_dir, read_snapshot, offset, limit)
        return [row_info(row) for row in rows], total

    def rows(
        self,
        sessions_dir: Path,
        read_snapshot: SnapshotReader,
        offset: int = 0,
        limit: int | None = None,
        *,
        empty: bool = True,
        keep: str | None = None,
    ) -> tuple[list[ListedRow], int, int]:
        """Return a page as stored (times as text: no object per row), the total and the folded.

        Without `empty`, the sessions without a turn (`listing_db.EMPTY`) but `keep` are
        folded: neither on the page nor in the total, but counted (the last value).
        """
        self.locked = set()
        damaged = False
        with self.file.connect() as conn:
            if conn is not None:
                try:
                    self._bring_up_to_date(conn, sessions_dir, read_snapshot)
                    every, folded = conn.execute(COUNT, (keep,)).fetchone()
                    folded = 0 if empty else int(folded)
                    asked = (empty, keep, -1 if limit is None else limit, offset)
                    found = conn.execute(SELECT_PAGE, asked).fetchall()
                    return found, int(every) - folded, folded
                except sqlite3.DatabaseError as exc:
                    damaged = not busy(exc)
                    logger.warning("%s: not usable (%s); listing without it", self.path, exc)
        if damaged:
            self.file.discard()
        self.locked = set()
        read = (
            self._read(sid, sessions_dir, keys, read_snapshot)
            for sid, keys in scan_files(sessions_dir, self.locked).items()
        )
        every = sorted((row for row in read if row is not None), key=lambda r: (-r[10], r[0]))
        listed = [r for r in every if empty or r[11] or r[7] is not None or r[0] == keep]
        end = None if limit is None else offset + limit
        page = [(r[0], r[7], r[8], r[14], *r[11:14], r[10]) for r in listed[offset:end]]
        return page, len(listed), len(every) - len(listed)

    def _bring_up_to_date(
        self, conn: sqlite3.Connection, sessions_dir: Path, read_snapshot: SnapshotReader
    ) -> None:
        """Look at the files that may have changed since the last listing, rewrite their rows.

        Three ways, cheapest first: with `sessions/` unchanged, only the sessions with a lock
        file (kept from the scan that trusted it) or whose writer let go since (`touched`);
        after a change, the directory's names and inodes, read without a stat, say which
        others were added, replaced or removed; with no scan yet, or the last one that
        stat'ed every file `VERIFY_S` ago, every file is stat'ed.
        """
        seen = dir_key(sessions_dir)
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        # Read before any file is stat'ed: a writer notes its session after its last write.
        touched = conn.execute("SELECT seq, session_id FROM touched").fetchall()
        upto = max((seq for seq, _ in touched), default=None)
        noted = {sid for _, sid in touched}
        previous = {name for (name,) in conn.execute("SELECT name FROM locks")}
        files: Files | None = None
        scanned = full = False
        age = _age(meta.get("verified"))  # since every file was last stat'ed
        if age is None or age >= VERIFY_S:
            pass  # every file, now: what no writer of ours noted shows within the hour
        elif seen is not None and meta.get("dir") == _trusted(seen):
            self.locked = previous  # a lock file made or removed since would change sessions/
            files = _stat_sessions(sessions_dir, previous | noted)
        else:
            names = scan_names(sessions_dir)
            if names is not None:
                scanned = True
                files = self._stat_changed(conn, sessions_dir, names, previous | noted)
        if files is None:  # the hour is up, or the directory could not be read: every file
            self.locked = set()
            files = scan_files(sessions_dir, self.locked)
            known = conn.execute(SELECT_KEYS).fetchall()
            changes = self._changes(known, files, sessions_dir, read_snapshot, complete=True)
            scanned = full = True
        else:
            known = _keys_of(conn, files)
            changes = self._changes(known, files, sessions_dir, read_snapshot, complete=False)
        scan = None
        if scanned:
            trusted = self._settled(sessions_dir, seen)
            if self.locked != previous or meta.get("dir") != trusted or full:
                scan = (self.locked, trusted, time.time() if full else None)
        if any(changes) or upto is not None or scan is not None:
            self.file.commit(conn, changes, upto, scan)

    def _stat_changed(
        self, conn: sqlite3.Connection, sessions_dir: Path, names: dict[str, int], also: set[str]
    ) -> Files | None:
        """Stat the sessions whose files changed name or inode, or have a lock file, and `also`.

        The rows' files are compared with `names` (the lock files met go to `self.locked`).
        A snapshot is replaced by a rename (a new inode); a file whose inode came back with
        a second save, or a log that grew in place, was written under its lock: its
        writer's lock file is there, or it noted the session when it let go.
        """
        suspects = set(also)
        stored = dict(conn.execute(SELECT_NAMES).fetchall())
        for name, _ in names.items() ^ stored.items():  # lock files are never stored
            sid = session_of(name)
            if sid is not None:
                suspects.add(sid)
                if name.endswith(".lock") and name in names:
                    self.locked.add(sid)
        return _stat_sessions(sessions_dir, suspects)

    def _settled(self, sessions_dir: Path, seen: DirKey | None) -> str | None:
        """Return the record of the directory just scanned, if it is settled; else None.

        Settled: unchanged while scanned, and its last change older than the margin by the
        file system's clock. Unsettled, it is read again at the next listing.
        """
        if seen is None or dir_key(sessions_dir) != seen:  # it changed while scanned
            return None
        now = file_system_now(self.path, seen[0])
        if now is None or max(seen[2:]) + _DIR_MARGIN_NS >= now:
            return None
        return _trusted(seen)

    def _changes(
        self,
        known: list[Row],
        files: Files,
        sessions_dir: Path,
        read_snapshot: SnapshotReader,
        *,
        complete: bool,
    ) -> Changes:
        """Compare the files with the keys their rows came from; re-read what changed.

        `complete`: `files` holds every session (the others are gone); otherwise only some,
        and one with neither file is gone.
        """
        cached: dict[str, tuple[tuple[int, ...] | None, tuple[int, ...] | None, int | None]] = {}
        for sid, ino, size, mtime, log_ino, log_size, log_mtime, state_us in known:
            if not complete and sid not in files:
                continue
            snap_key = None if ino is None else (ino, size, mtime)
            log_key = None if log_size is None else (log_ino, log_size, log_mtime)
            cached[sid] = (snap_key, log_key, state_us)
        rewrite: list[Row] = []
        unlisted: list[Row] = []  # sessions with files but no row (an empty log, ...)
        moved: list[Row] = []
        gone = [(sid,) for sid in cached if sid not in files]
        for sid, (snap, log) in files.items():
            old = cached.get(sid)
            if snap is None and log is None:
                if old is not None:
                    gone.append((sid,))
                continue
            if old is not None and old[0] == snap:
                if old[1] == log:
                    continue
                if snap is not None and old[2] is not None:  # listed from its snapshot
                    if log is not None:  # the log grew: updated_at may move
                        updated_us = max(int(old[2]), log[2] // 1000)
                        moved.append((updated_us, iso(updated_us), *log, sid))
                    continue
            row = self._read(sid, sessions_dir, [snap, log], read_snapshot)
            if row is not None:
                rewrite.append(row)
            else:
                unlisted.append((sid, *(snap or (None,) * 3), *(log or (None,) * 3)))
        return rewrite, unlisted, moved, gone

    def _read(
        self,
        session_id: str,
        sessions_dir: Path,
        keys: list[tuple[int, ...] | None],
        read_snapshot: SnapshotReader,
    ) -> Row | None:
        snap, log = keys
        state = read_snapshot(session_id) if snap is not None else None
        info = session_info(session_id, state, sessions_dir / f"{session_id}.events.jsonl")
        if info is None:
            return None
        state_us = to_us(info.updated_at)  # the snapshot's time, or its log's if later
        updated_us = state_us if log is None else max(state_us, log[2] // 1000)
        return (
            session_id,
            *(snap if snap is not None else (None,) * 3),
            *(log if log is not None else (None,) * 3),
            info.title,
            iso_of(info.created_at),
            state_us,
            updated_us,
            info.turns,
            info.parent_session_id,
            info.phase,
            iso(updated_us),
        )
