"""The index file and its connection: opened safely, rebuilt when outdated, deleted when damaged.

`index.sqlite` is never opened through a symlink or a hard link, is a regular file of mode
0600, and runs in WAL mode. An index of a version in `LEGACY_TABLES` keeps answering (the
connection's `legacy` says which) while this version's tables are built beside it; one of
any other version is rebuilt; on a store that refuses writes the existing index is read as
it is; a file SQLite reports damaged is deleted, to be rebuilt from the logs.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import stat
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar

from ..storage import FILE_MODE, StorageError, ensure_private_dir
from . import schema
from .schema import (
    LEGACY_TABLES,
    SCHEMA_VERSION,
    TABLES,
    SearchError,
    create_statements,
    drop_statements,
    ensure_grams,
    execute_all,
    has_table,
)

logger = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 5.0
WAL_LIMIT_BYTES = 8 << 20  # the WAL is truncated to this after a checkpoint
# Page cache of a connection (grows as pages are read). Queries for common words walk long
# doclists: with SQLite's default 2 MB, a 1M-event index (~130 MB) was read from the OS at
# every query. Not mmap: a file truncated under a mapping kills the process (SIGBUS).
CACHE_KIB = 32 << 10

_SIDECARS = ("-wal", "-shm", "-journal")
# errnos meaning the store refuses writes (not a full disk): the index is then read as is
_UNWRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB (primary codes)
_BUSY_CODES = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED
_NO_SPACE_CODES = frozenset({8, 13})  # SQLITE_READONLY, SQLITE_FULL

T = TypeVar("T")


class _CorruptIndexError(Exception):
    """Raised inside an operation when SQLite reports a damaged database file."""


def _error_code(exc: sqlite3.Error) -> int:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else -1


def _is_corrupt(exc: sqlite3.Error) -> bool:
    if _error_code(exc) in _CORRUPT_CODES:
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "fts5: corrupt" in text


class IndexDatabase:
    """The connection to one `index.sqlite`, reopened when the file is deleted or replaced."""

    def __init__(self, path: Path, *, busy_timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._lock = threading.RLock()
        # True while the store refuses writes (read-only file system, permissions): the
        # existing index is searched as it is and syncs are skipped until it is writable.
        self.read_only = False
        # The older schema version whose tables answer searches while this version's are
        # built (None: this version's answer). Checked again before each search.
        self.legacy: int | None = None
        self.grams = False  # the trigram table is there (else searches scan event_rows)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection (the next call opens it again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
                self._identity = None

    # -- opening -----------------------------------------------------------------------

    def _files(self) -> list[Path]:
        return [self.path, *(self.path.with_name(self.path.name + s) for s in _SIDECARS)]

    def _create_file(self) -> tuple[int, int]:
        """Create or check the database file: no symlinks, a regular file, mode 0600."""
        self.read_only = False
        try:
            ensure_private_dir(self.path.parent)
        except OSError as exc:
            raise SearchError(f"cannot create {self.path.parent}: {exc}") from None
        except StorageError as exc:  # a symlink or a file in the directory's place, or EROFS
            if exc.errno in _UNWRITABLE:
                return self._existing_read_only(exc.errno)
            raise SearchError(str(exc)) from None
        for path in self._files()[1:]:
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(st.st_mode):
                raise SearchError(f"{path} is not a regular file; refusing to use it")
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, FILE_MODE)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise SearchError(f"{self.path} is a symlink; refusing to open it") from None
            if exc.errno in _UNWRITABLE:
                return self._existing_read_only(exc.errno)
            raise SearchError(f"cannot open {self.path}: {exc.strerror or exc}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise SearchError(f"{self.path} is not a regular file; refusing to use it")
            if st.st_nlink > 1:
                # A hard link: SQLite would write into the other name too (maybe outside
                # the store). The index is a projection: drop this name, start afresh.
                logger.warning("%s has %d hard links; rebuilding the index", self.path, st.st_nlink)
                os.unlink(self.path)
                return self._create_file()
            if stat.S_IMODE(st.st_mode) != FILE_MODE:
                os.fchmod(fd, FILE_MODE)
            return st.st_dev, st.st_ino
        finally:
            os.close(fd)

    def _existing_read_only(self, code: int | None) -> tuple[int, int]:
        """Use the index file as it is (the store refuses writes), if there is one."""
        try:
            st = os.lstat(self.path)
        except OSError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            raise SearchError(
                f"cannot open {self.path}: {os.strerror(code or errno.EROFS)} "
                "(the store is not writable and there is no index to read)"
            )
        self.read_only = True
        return st.st_dev, st.st_ino

    def _open_read_only(self, identity: tuple[int, int]) -> sqlite3.Connection:
        # immutable: no locks, no -shm/-wal files (nothing can be created on this store)
        uri = f"file:{urllib.parse.quote(str(self.path))}?mode=ro&immutable=1"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version != SCHEMA_VERSION and version not in LEGACY_TABLES:
                raise SearchError(
                    f"{self.path} is from another version ({version}) and the store is not "
                    "writable, so it cannot be rebuilt"
                )
            self.legacy = None if version == SCHEMA_VERSION else version
            self.grams = schema.trigram_available() and has_table(conn, "event_grams")
        except BaseException:
            conn.close()
            raise
        logger.warning("%s: the store is not writable; searching the index as it is", self.path)
        self._identity = identity
        return conn

    def _open(self) -> sqlite3.Connection:
        identity = self._create_file()
        if self.read_only:
            return self._open_read_only(identity)
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            if not self._tables_ready(conn):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    self._prepare_tables(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            self.legacy = None if version == SCHEMA_VERSION else version
            self.grams = has_table(conn, "event_grams")
        except BaseException:
            conn.close()
            raise
        self._identity = identity
        return conn

    @staticmethod
    def _tables_ready(conn: sqlite3.Connection) -> bool:
        """Whether the file holds this version's tables as this SQLite uses them (no writes)."""
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION and version not in LEGACY_TABLES:
            return False
        names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        grams = schema.trigram_available()
        wanted = {"indexed_logs", "event_rows", *(["event_grams", "gram_docs"] if grams else [])}
        return wanted <= names and (grams or "event_grams" not in names)

    def _prepare_tables(self, conn: sqlite3.Connection) -> None:
        """Create what is missing; rebuild an index of an unknown version (in a transaction)."""
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION and version not in LEGACY_TABLES:
            if version:
                logger.info(
                    "%s: schema version %s, rebuilding as version %s",
                    self.path,
                    version,
                    SCHEMA_VERSION,
                )
            execute_all(conn, drop_statements())
            execute_all(conn, create_statements(schema.trigram_available()))
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            return
        if version in LEGACY_TABLES:
            logger.info(
                "%s: schema version %s answers searches until version %s is built",
                self.path,
                version,
                SCHEMA_VERSION,
            )
        execute_all(conn, TABLES)
        try:
            ensure_grams(conn)
        except sqlite3.OperationalError as exc:  # made with trigrams, unusable here
            raise _CorruptIndexError(f"cannot use its trigram index here: {exc}") from None

    def _connection(self) -> sqlite3.Connection:
        """Return the open connection, reopening if the file was deleted or replaced."""
        if self._conn is not None:
            try:
                st = os.lstat(self.path)
                current: tuple[int, int] | None = (st.st_dev, st.st_ino)
            except FileNotFoundError:
                current = None
            if current != self._identity:
                self.close()
        if self._conn is None:
            try:
                self._conn = self._open()
            except sqlite3.Error as exc:
                if not _is_corrupt(exc):
                    raise SearchError(f"{self.path}: {exc}") from None
                raise _CorruptIndexError(str(exc)) from None
        return self._conn

    def _discard(self, reason: str) -> None:
        """Delete a corrupt index (it is only a projection; the next sync rebuilds it)."""
        logger.warning(
            "%s is damaged (%s); deleting it and rebuilding from the logs", self.path, reason
        )
        self.close()
        for path in self._files():
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise SearchError(f"cannot delete damaged {path}: {exc.strerror or exc}") from None

    def _attempt(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` on the connection; map SQLite errors to corrupt / SearchError."""
        conn = self._connection()
        try:
            return fn(conn)
        except sqlite3.Error as exc:
            if _is_corrupt(exc):
                raise _CorruptIndexError(str(exc)) from None
            raise
