"""Full-text search over every session of a project: `index.sqlite`, an FTS5 projection.

The index lives in `projects/<name>_<hash8>/index.sqlite` (mode 0600, never opened through
a symlink). Like the snapshots it is only a projection of the logs: deleting it loses
nothing, and a missing, corrupt or outdated index is rebuilt from the logs.

Schema (`PRAGMA user_version` = `SCHEMA_VERSION`)::

    sessions(num INTEGER PRIMARY KEY, session_id TEXT UNIQUE,   -- per-session progress
             log_offset, last_seq, line_hash, scanned_size,
             stream_text, stream_seq, stream_turn)
    event_text USING fts5(text, session_id UNINDEXED, seq UNINDEXED, turn UNINDEXED,
                          type UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')

The rowid of an `event_text` row also encodes where its text comes from:
`num << 40 | seq << 2 | part` (`part` 0: the event's own text, 1: streamed text). One
session's rows are therefore one rowid range, which makes dropping a session, re-indexing
it or restricting a search to it cheap (FTS5 has no index on UNINDEXED columns).

A session is indexed up to `log_offset`, the end of event `last_seq`; `line_hash` is the
SHA-256 of the log line ending there, so a log that shrank or was replaced is noticed with
one small read and re-indexed. A sync reads each log only from its `log_offset`
(`scan_log(path, log_offset, last_seq + 1)`), and not at all when its size has not changed
since the last scan (`scanned_size`).

Streamed text (`assistant/chunk`) is indexed only where no `assistant/message` holds it: a
step that was aborted or cut off is indexed as one `assistant/chunk` row at the seq of the
`turn/end` that closed it (or of its last chunk when something else closed it). A step still
streaming when the index is synced keeps its text in `stream_*` and gets a provisional row
at its last chunk, replaced at the next sync.

A search is one phrase query. bm25() reads the phrase's doclists twice (the second pass
counts the matching rows, for the IDF) and `ORDER BY rank` prepares a statement per query,
so `_query` mostly does without them: most phrases match a handful of rows, and one pass
fetches them all with their snippets and what bm25 needs (occurrences, row length, table
totals), scored in Python with FTS5's own formula. A query with many matches is ranked by
FTS5 (`ORDER BY bm25 LIMIT`) and a second pass makes snippets of the best rows only. A sync
that wrote most of the index (a build) merges it into one segment (FTS5 `optimize`).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import math
import os
import re
import sqlite3
import stat
import threading
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import orjson

from .log import scan_log
from .models import (
    AssistantMessageEvent,
    ChunkEvent,
    CompactEvent,
    DecisionEvent,
    DriftEvent,
    Event,
    PhaseEvent,
    StepStartEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from .paths import is_valid_session_id
from .storage import FILE_MODE, StorageError, ensure_private_dir

if TYPE_CHECKING:
    from .manager import SessionManager

logger = logging.getLogger(__name__)

INDEX_FILE = "index.sqlite"
SCHEMA_VERSION = 2  # 1: an early draft (text, turn, type only); rebuilt on open
TOKENIZER = "unicode61 remove_diacritics 2"
BUSY_TIMEOUT_S = 5.0
WAL_LIMIT_BYTES = 8 << 20  # the WAL is truncated to this after a checkpoint
# Page cache of a connection (grows as pages are read). Queries for common words walk long
# doclists: with SQLite's default 2 MB, a 1M-event index (~130 MB) was read from the OS at
# every query. Not mmap: a file truncated under a mapping kills the process (SIGBUS).
CACHE_KIB = 32 << 10

_SESSION_SHIFT = 40  # rowid = num << 40 | seq << 2 | part
_SEQ_SHIFT = 2
_SEQ_LIMIT = 1 << (_SESSION_SHIFT - _SEQ_SHIFT)
_MAX_SESSIONS = 1 << (63 - _SESSION_SHIFT)
PART_EVENT = 0
PART_STREAM = 1
STREAM_TYPE = "assistant/chunk"

_SIDECARS = ("-wal", "-shm", "-journal")
# errnos meaning the store refuses writes (not a full disk): the index is then read as is
_UNWRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB (primary codes)
_BUSY_CODES = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED
_NO_SPACE_CODES = frozenset({8, 13})  # SQLITE_READONLY, SQLITE_FULL
_PLACEHOLDER = re.compile(r"\[not persisted: sha256:[0-9a-f]{16}, \d+ chars\]")
_LINE_WINDOW = 1 << 14

_SCHEMA = f"""
CREATE TABLE sessions (
    num INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE,
    log_offset INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT -1,
    line_hash BLOB,
    scanned_size INTEGER NOT NULL DEFAULT -1,
    stream_text TEXT,
    stream_seq INTEGER,
    stream_turn INTEGER
);
CREATE VIRTUAL TABLE event_text USING fts5(
    text, session_id UNINDEXED, seq UNINDEXED, turn UNINDEXED, type UNINDEXED,
    tokenize = '{TOKENIZER}'
);
PRAGMA user_version = {SCHEMA_VERSION};
"""
_DROP = """
DROP TABLE IF EXISTS event_text;
DROP TABLE IF EXISTS sessions;
"""

# How a search runs (see `_query`). Snippets: matches in [ ], cut with …, at
# most 12 tokens. Every match in rowid order, with its snippet and what bm25 needs: the
# phrase's occurrences in the row (the `]`s highlight() adds), the row's length in tokens
# (FTS5's docsize record) and the table's row and token counts (its averages record, read
# once per statement).
_MATCHES_SQL = (
    "SELECT rowid, session_id, seq, turn, type, snippet(event_text, 0, '[', ']', '…', 12),"
    " length(highlight(event_text, 0, '', ']')) - length(text),"
    " (SELECT sz FROM event_text_docsize WHERE id = event_text.rowid),"
    " (SELECT block FROM event_text_data WHERE id = 1)"
    " FROM event_text WHERE event_text MATCH ?"
)
_COUNT_SQL = "SELECT count(*) FROM (SELECT 1 FROM event_text WHERE event_text MATCH ? LIMIT ?)"
# Too many matches to make a snippet of each: FTS5 ranks them (bm25), snippets of the best.
_TOP_SQL = (
    "SELECT rowid, -bm25(event_text) AS score FROM event_text WHERE event_text MATCH ?"
    " AND rowid BETWEEN ? AND ? ORDER BY score DESC, rowid LIMIT ?"
)
_SNIPPETS_SQL = (  # `+rowid`: scan the matches, not one FTS5 lookup per rowid
    "SELECT rowid, session_id, seq, turn, type, snippet(event_text, 0, '[', ']', '…', 12)"
    " FROM event_text WHERE event_text MATCH ? AND rowid BETWEEN ? AND ? AND +rowid IN ({})"
)
# Matches fetched with their snippets before counting them: n_rows / _ROWS_PER_SNIPPET (a
# snippet costs about as much as a phrase's doclists for 1,000 rows), at least _MIN_BUDGET.
_ROWS_PER_SNIPPET = 1000
_MIN_BUDGET = 8
_OPTIMIZE_ROWS = 10_000  # a sync that writes this many rows (and most of the index) merges it
_BM25_K1 = 1.2  # FTS5's bm25() constants
_BM25_B = 0.75
_WORD = re.compile(r"[^\W_]+")  # roughly a unicode61 token

T = TypeVar("T")


class SearchError(Exception):
    """The index cannot be used (a symlink in its place, unwritable, disk full...)."""


class _CorruptIndexError(Exception):
    """Raised inside an operation when SQLite reports a damaged database file."""


class SearchHit(NamedTuple):
    """One matching event: where it is, its text around the match, and how well it matched.

    `snippet` marks the matched words with `[` `]`; `score` is the negated bm25 rank
    (higher is better). `type` is the event type the text came from (`assistant/chunk` for
    streamed text that no `assistant/message` holds). A named tuple: a search returns up to
    `limit` of them and building frozen dataclasses cost more than the rest of a small query.
    """

    session_id: str
    seq: int
    turn: int | None
    type: str
    snippet: str
    score: float


@dataclass
class SyncStats:
    """What one sync did (for logging, tests and benchmarks)."""

    sessions: int = 0  # sessions looked at
    scanned: int = 0  # sessions whose log was read (from their indexed offset)
    reindexed: int = 0  # sessions whose log shrank or was replaced: indexed from 0 again
    dropped: int = 0  # sessions whose log vanished: their rows were removed
    events: int = 0  # events read
    rows: int = 0  # text rows written
    bytes_read: int = 0
    index_recreated: bool = False  # the index file was corrupt and was rebuilt from scratch
    skipped: str | None = None  # why nothing was done (another process held the index)
    problems: list[str] = field(default_factory=list)  # damaged log lines etc.


@dataclass
class _Progress:
    num: int
    log_offset: int = 0
    last_seq: int = -1
    line_hash: bytes | None = None
    scanned_size: int = -1
    stream_text: str | None = None
    stream_seq: int | None = None
    stream_turn: int | None = None


Row = tuple[int, str, str, int, int | None, str]  # rowid, text, session_id, seq, turn, type


def _rowid(num: int, seq: int, part: int) -> int:
    return (num << _SESSION_SHIFT) | (seq << _SEQ_SHIFT) | part


def _session_range(num: int) -> tuple[int, int]:
    return num << _SESSION_SHIFT, ((num + 1) << _SESSION_SHIFT) - 1


def _clean(text: str) -> str:
    """Make text safe to bind: no NUL (FTS5 stops at it), no lone surrogates."""
    if "\x00" in text:
        text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()


def _joined(pieces: Iterable[str | None]) -> str:
    """Join the non-empty pieces that are real content (not metadata-mode placeholders)."""
    return "\n".join(p for p in pieces if p and not _PLACEHOLDER.fullmatch(p))


def _response_text(message: dict[str, Any]) -> str:
    parts = message.get("parts")
    if not isinstance(parts, list):
        return ""
    return "".join(
        p["content"]
        for p in parts
        if isinstance(p, dict)
        and p.get("part_kind") == "text"
        and isinstance(p.get("content"), str)
    )


def fts_phrase(query: str) -> str:
    """Quote `query` as one FTS5 phrase: every character is literal, operators included."""
    return '"' + _clean(query).replace('"', '""') + '"'


class _Extractor:
    """Turns events into text rows; carries an unfinished stream from one sync to the next."""

    def __init__(self, session_id: str, progress: _Progress) -> None:
        self.session_id = session_id
        self.num = progress.num
        self.stream: list[str] = [progress.stream_text] if progress.stream_text else []
        self.stream_seq = progress.stream_seq
        self.stream_turn = progress.stream_turn
        self.rows: list[Row] = []

    def add(self, seq: int, part: int, turn: int | None, type_: str, text: str) -> None:
        if seq >= _SEQ_LIMIT:
            raise SearchError(f"seq {seq} is too large for the search index")
        if text and not _PLACEHOLDER.fullmatch(text):
            rowid = _rowid(self.num, seq, part)
            self.rows.append((rowid, _clean(text), self.session_id, seq, turn, type_))

    def _flush_stream(self, seq: int | None = None) -> None:
        """Index streamed text that no `assistant/message` holds (at `seq` or its last chunk)."""
        if self.stream and self.stream_seq is not None:
            at = self.stream_seq if seq is None else seq
            self.add(at, PART_STREAM, self.stream_turn, STREAM_TYPE, "".join(self.stream))
        self.stream = []
        self.stream_seq = None
        self.stream_turn = None

    def feed(self, event: Event) -> None:
        """Add the rows of one event (events must come in log order)."""
        seq, turn = event.seq, event.turn
        if isinstance(event, ChunkEvent):
            self.stream.append(event.data.delta)
            self.stream_seq = seq
            self.stream_turn = turn
        elif isinstance(event, AssistantMessageEvent):
            text = _response_text(event.data.message) or "".join(self.stream)
            self.stream = []
            self.stream_seq = None
            self.add(seq, PART_EVENT, turn, event.type, text)
        elif isinstance(event, TurnStartEvent):
            self._flush_stream()
            self.add(seq, PART_EVENT, turn, event.type, event.data.input)
        elif isinstance(event, StepStartEvent):
            self._flush_stream()
        elif isinstance(event, TurnEndEvent):
            self._flush_stream(seq)
            self.add(seq, PART_EVENT, turn, event.type, event.data.error or "")
        elif isinstance(event, ToolCallEvent):
            args = _joined([_as_text(event.data.args)])
            text = f"{event.data.name} {args}" if args else event.data.name
            self.add(seq, PART_EVENT, turn, event.type, text)
        elif isinstance(event, ToolResultEvent):
            self.add(seq, PART_EVENT, turn, event.type, _as_text(event.data.content))
        elif isinstance(event, CompactEvent):
            text = _joined([event.data.summary, *event.data.decisions])
            self.add(seq, PART_EVENT, turn, event.type, text)
        elif isinstance(event, DecisionEvent):
            self.add(seq, PART_EVENT, turn, event.type, event.data.text)
        elif isinstance(event, DriftEvent):
            data = event.data
            paths = _joined([*data.modified, *data.deleted, *data.created])
            self.add(seq, PART_EVENT, turn, event.type, paths)
        elif isinstance(event, PhaseEvent):
            self.add(seq, PART_EVENT, turn, event.type, event.data.phase or "")

    def open_stream(self) -> tuple[str | None, int | None, int | None]:
        """Return the stream still open after the last event (text, last chunk seq, turn)."""
        if not self.stream or self.stream_seq is None:
            return None, None, None
        return "".join(self.stream), self.stream_seq, self.stream_turn


def _line_ending_at(fd: int, offset: int) -> bytes | None:
    """Return the log line that ends at `offset` (without its newline); None if there is none."""
    if offset <= 0:
        return None
    back = _LINE_WINDOW
    while True:
        back = min(back, offset)
        window = os.pread(fd, back, offset - back)
        if len(window) < back:
            return None  # the file is shorter than `offset`
        body = window[:-1] if window.endswith(b"\n") else window
        cut = body.rfind(b"\n")
        if cut >= 0 or back == offset:
            return body[cut + 1 :]
        back *= 4


def _line_hash(fd: int, offset: int) -> bytes | None:
    line = _line_ending_at(fd, offset)
    return None if line is None else hashlib.sha256(line).digest()


def _error_code(exc: sqlite3.Error) -> int:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else -1


def _is_corrupt(exc: sqlite3.Error) -> bool:
    if _error_code(exc) in _CORRUPT_CODES:
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "fts5: corrupt" in text


class SearchIndex:
    """The search index of one project (`index.sqlite`); safe to use from several threads.

    Call `sync()` (every session) or `sync_session()` (one, e.g. after each turn) to bring
    it up to date with the logs, then `search()`. Several processes may share the file:
    writes are serialized by SQLite (one transaction per sync), readers are never blocked.
    """

    def __init__(self, path: Path, *, busy_timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._lock = threading.RLock()
        # True while the store refuses writes (read-only file system, permissions): the
        # existing index is searched as it is and syncs are skipped until it is writable.
        self.read_only = False

    @classmethod
    def for_project(cls, manager: SessionManager) -> SearchIndex:
        """Return the index of `manager`'s project (`<project dir>/index.sqlite`)."""
        return cls(manager.project_dir / INDEX_FILE)

    def __enter__(self) -> SearchIndex:
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
            if version != SCHEMA_VERSION:
                raise SearchError(
                    f"{self.path} is from another version ({version}) and the store is not "
                    "writable, so it cannot be rebuilt"
                )
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
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    version = conn.execute("PRAGMA user_version").fetchone()[0]
                    if version != SCHEMA_VERSION:
                        if version:
                            logger.info(
                                "%s: schema version %s, rebuilding as version %s",
                                self.path,
                                version,
                                SCHEMA_VERSION,
                            )
                        _execute_script(conn, _DROP + _SCHEMA)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
        except BaseException:
            conn.close()
            raise
        self._identity = identity
        return conn

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

    # -- writing -----------------------------------------------------------------------

    def _write(
        self, fn: Callable[[sqlite3.Connection, SyncStats], None], manager: SessionManager
    ) -> SyncStats:
        with self._lock:
            stats = SyncStats()
            if self.read_only:
                self.close()  # look again: the store may be writable by now
                self._connection()
                if self.read_only:
                    stats.skipped = "the store is not writable: searching the index as it is"
                    return stats
            try:
                self._attempt(lambda conn: self._transaction(conn, fn, stats))
                return stats
            except _CorruptIndexError as exc:
                self._discard(str(exc))
            except sqlite3.Error as exc:
                return self._failed(exc, stats)
            # The index was damaged: rebuild all of it, whatever was asked.
            stats = SyncStats(index_recreated=True)
            try:
                self._attempt(lambda conn: self._transaction(conn, self._sync_all(manager), stats))
            except _CorruptIndexError as exc:
                raise SearchError(f"{self.path} is still damaged after rebuilding: {exc}") from None
            except sqlite3.Error as exc:
                return self._failed(exc, stats)
            return stats

    def _failed(self, exc: sqlite3.Error, stats: SyncStats) -> SyncStats:
        if _error_code(exc) in _BUSY_CODES:
            logger.warning("%s is busy (%s); the next sync catches up", self.path, exc)
            stats.skipped = f"index busy: {exc}"
            return stats
        if _error_code(exc) in _NO_SPACE_CODES:  # the existing index still answers searches
            logger.warning("%s cannot be written (%s); searching it as it is", self.path, exc)
            stats.skipped = f"index not writable: {exc}"
            return stats
        raise SearchError(f"{self.path}: {exc}") from None

    @staticmethod
    def _transaction(
        conn: sqlite3.Connection,
        fn: Callable[[sqlite3.Connection, SyncStats], None],
        stats: SyncStats,
    ) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            fn(conn, stats)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def sync(self, manager: SessionManager) -> SyncStats:
        """Bring the index up to date with every log of the project (one transaction)."""
        return self._write(self._sync_all(manager), manager)

    def sync_session(self, manager: SessionManager, session_id: str) -> SyncStats:
        """Bring one session up to date (e.g. after each turn); raise ValueError on a bad id."""
        _check_id(session_id)

        def one(conn: sqlite3.Connection, stats: SyncStats) -> None:
            self._sync_one(conn, manager, session_id, stats)

        return self._write(one, manager)

    def rebuild(self, manager: SessionManager) -> SyncStats:
        """Drop everything and index every log from the start (one transaction)."""
        sync_all = self._sync_all(manager)

        def rebuild(conn: sqlite3.Connection, stats: SyncStats) -> None:
            _execute_script(conn, _DROP + _SCHEMA)
            sync_all(conn, stats)

        return self._write(rebuild, manager)

    def _sync_all(self, manager: SessionManager) -> Callable[[sqlite3.Connection, SyncStats], None]:
        def sync_all(conn: sqlite3.Connection, stats: SyncStats) -> None:
            present = sorted(manager.session_ids())
            for session_id in present:
                self._sync_one(conn, manager, session_id, stats)
            known = {sid for (sid,) in conn.execute("SELECT session_id FROM sessions")}
            for session_id in sorted(known - set(present)):
                self._drop(conn, session_id)
                stats.dropped += 1
            _optimize_after_bulk(conn, stats)

        return sync_all

    @staticmethod
    def _drop(conn: sqlite3.Connection, session_id: str) -> None:
        found = conn.execute("SELECT num FROM sessions WHERE session_id = ?", (session_id,))
        row = found.fetchone()
        if row is not None:
            conn.execute(
                "DELETE FROM event_text WHERE rowid BETWEEN ? AND ?", _session_range(row[0])
            )
            conn.execute("DELETE FROM sessions WHERE num = ?", (row[0],))

    @staticmethod
    def _progress(conn: sqlite3.Connection, session_id: str) -> _Progress | None:
        row = conn.execute(
            "SELECT num, log_offset, last_seq, line_hash, scanned_size, stream_text, stream_seq,"
            " stream_turn FROM sessions WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        return None if row is None else _Progress(*row)

    def _sync_one(
        self, conn: sqlite3.Connection, manager: SessionManager, session_id: str, stats: SyncStats
    ) -> None:
        stats.sessions += 1
        path = manager.log_path(session_id)
        progress = self._progress(conn, session_id)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            if progress is not None:
                self._drop(conn, session_id)
                stats.dropped += 1
            if not isinstance(exc, FileNotFoundError):
                stats.problems.append(f"{path.name}: cannot read ({exc.strerror or exc})")
            return
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                stats.problems.append(f"{path.name}: not a regular file; not indexed")
                if progress is not None:
                    self._drop(conn, session_id)
                    stats.dropped += 1
                return
            size = st.st_size
            if progress is None:
                progress = self._new_session(conn, session_id)
            elif (
                size < progress.log_offset
                or _line_hash(fd, progress.log_offset) != progress.line_hash
            ):
                # Shrunk or replaced: what was indexed is not this log any more.
                conn.execute(
                    "DELETE FROM event_text WHERE rowid BETWEEN ? AND ?",
                    _session_range(progress.num),
                )
                progress = _Progress(progress.num)
                stats.reindexed += 1
            elif size == progress.scanned_size:
                return  # nothing was appended since the last scan
            self._index_tail(conn, fd, path, session_id, progress, size, stats)
        finally:
            os.close(fd)

    @staticmethod
    def _new_session(conn: sqlite3.Connection, session_id: str) -> _Progress:
        num = conn.execute("SELECT coalesce(max(num), 0) + 1 FROM sessions").fetchone()[0]
        if num >= _MAX_SESSIONS:
            raise SearchError("too many sessions for the search index; rebuild it")
        conn.execute("INSERT INTO sessions (num, session_id) VALUES (?, ?)", (num, session_id))
        return _Progress(num)

    @staticmethod
    def _index_tail(
        conn: sqlite3.Connection,
        fd: int,
        path: Path,
        session_id: str,
        progress: _Progress,
        size: int,
        stats: SyncStats,
    ) -> None:
        scan = scan_log(path, progress.log_offset, progress.last_seq + 1)
        stats.scanned += 1
        stats.events += len(scan.events)
        stats.bytes_read += max(0, size - progress.log_offset)
        stats.problems.extend(p.message for p in scan.problems)
        for problem in scan.problems:
            logger.debug("indexing: %s", problem.message)
        num = progress.num
        if scan.events:
            if progress.stream_seq is not None:  # the provisional row of an open stream
                conn.execute(
                    "DELETE FROM event_text WHERE rowid = ?",
                    (_rowid(num, progress.stream_seq, PART_STREAM),),
                )
            extractor = _Extractor(session_id, progress)
            for event in scan.events:
                extractor.feed(event)
            text, stream_seq, stream_turn = extractor.open_stream()
            if text is not None and stream_seq is not None:  # still streaming: provisional
                extractor.add(stream_seq, PART_STREAM, stream_turn, STREAM_TYPE, text)
            conn.executemany(
                "INSERT INTO event_text (rowid, text, session_id, seq, turn, type)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                extractor.rows,
            )
            stats.rows += len(extractor.rows)
            last_seq = scan.events[-1].seq
            conn.execute(
                "UPDATE sessions SET log_offset = ?, last_seq = ?, line_hash = ?, scanned_size = ?,"
                " stream_text = ?, stream_seq = ?, stream_turn = ? WHERE num = ?",
                (
                    scan.end_offset,
                    last_seq,
                    _line_hash(fd, scan.end_offset),
                    size,
                    text,
                    stream_seq,
                    stream_turn,
                    num,
                ),
            )
        else:
            conn.execute(
                "UPDATE sessions SET log_offset = ?, last_seq = ?, line_hash = ?, scanned_size = ?"
                " WHERE num = ?",
                (progress.log_offset, progress.last_seq, progress.line_hash, size, num),
            )

    # -- reading -----------------------------------------------------------------------

    def search(self, query: str, session_id: str | None = None, limit: int = 50) -> list[SearchHit]:
        """Find events whose text contains `query` as a phrase (literal, case-insensitive).

        Best matches first (bm25); across sessions the hits are grouped by session, sessions
        ordered by their best hit. `session_id` restricts the search to one session.
        """
        if session_id is not None:
            _check_id(session_id)
        if limit <= 0 or not query.strip():
            return []
        with self._lock:
            try:
                return self._attempt(lambda conn: _query(conn, query, session_id, limit))
            except _CorruptIndexError as exc:
                self._discard(str(exc))
                return []
            except sqlite3.Error as exc:
                raise SearchError(f"{self.path}: {exc}") from None

    def row_count(self, session_id: str | None = None) -> int:
        """Return how many text rows are indexed (for one session, or all)."""
        if session_id is not None:
            _check_id(session_id)

        def count(conn: sqlite3.Connection) -> int:
            if session_id is None:
                return int(conn.execute("SELECT count(*) FROM event_text").fetchone()[0])
            found = conn.execute(
                "SELECT num FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            if found is None:
                return 0
            return int(
                conn.execute(
                    "SELECT count(*) FROM event_text WHERE rowid BETWEEN ? AND ?",
                    _session_range(found[0]),
                ).fetchone()[0]
            )

        with self._lock:
            try:
                return self._attempt(count)
            except _CorruptIndexError as exc:
                self._discard(str(exc))
                return 0


def _grouped(rows: Iterable[tuple[str, int, int | None, str, str, float]]) -> list[SearchHit]:
    """Group hits (best first) by session, sessions in the order of their best hit."""
    groups: dict[str, list[SearchHit]] = {}
    for row in rows:
        hit = SearchHit._make(row)
        found = groups.get(hit.session_id)
        if found is None:
            groups[hit.session_id] = [hit]
        else:
            found.append(hit)
    if len(groups) == 1:
        return next(iter(groups.values()))
    return [hit for hits in groups.values() for hit in hits]


def _varints(blob: bytes) -> list[int]:
    """Decode a run of SQLite varints (FTS5's docsize and averages records)."""
    out = []
    value = 0
    width = 0
    for byte in blob:
        if width == 8:  # the ninth byte of a varint holds 8 bits
            out.append((value << 8) | byte)
            value = width = 0
        elif byte < 0x80:
            out.append((value << 7) | byte)
            value = width = 0
        else:
            value = (value << 7) | (byte & 0x7F)
            width += 1
    return out


def _query(
    conn: sqlite3.Connection, query: str, session_id: str | None, limit: int
) -> list[SearchHit]:
    """Run one search (see `SearchIndex.search`).

    bm25() costs two passes over the phrase's doclists (the second counts the rows that match,
    for the IDF), and ORDER BY rank prepares a statement per query. Most phrases match a few
    rows, so the usual plan is one pass that fetches every match with its snippet
    (`_MATCHES_SQL`), scored here exactly as bm25() would. When there are more matches than
    that is worth (each costs a snippet) FTS5 ranks them and only the best get a snippet.
    """
    phrase = fts_phrase(query)
    lo, hi = 0, (1 << 63) - 1
    if session_id is not None:
        # Scored among all sessions like an unrestricted search: FTS5 ranks them.
        num = conn.execute("SELECT num FROM sessions WHERE session_id = ?", (session_id,))
        row = num.fetchone()
        if row is None:
            return []
        lo, hi = _session_range(row[0])
    else:
        rows = _all_matches(conn, query, phrase, limit)
        ranked = None if rows is None else _rank(rows, limit)
        if ranked is not None:
            return ranked
    with _snapshot(conn):  # the rows ranked are the rows whose snippets are read
        top = conn.execute(_TOP_SQL, (phrase, lo, hi, limit)).fetchall()
        if not top:
            return []
        ids = [rowid for rowid, _score in top]
        sql, size = _snippets_sql(len(ids))
        params = (phrase, min(ids), max(ids), *ids, *[None] * (size - len(ids)))
        found = {row[0]: row[1:] for row in conn.execute(sql, params)}
    return _grouped((*found[rowid], score) for rowid, score in top if rowid in found)


def _snippets_sql(count: int) -> tuple[str, int]:
    """Return `_SNIPPETS_SQL` for `count` rowids and its number of rowid placeholders.

    Rounded up to a power of two (the caller pads with NULLs): few distinct statements to
    prepare, and no dependency on the JSON1 functions for passing a list.
    """
    size = 8
    while size < count:
        size *= 2
    return _SNIPPETS_SQL.format(", ".join("?" * size)), size


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """Run the statements of the block in one read transaction."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")  # nothing was written


def _words(query: str) -> list[str]:
    """Roughly the tokens unicode61 makes of `query` (case and diacritics folded)."""
    if not query.isascii():
        query = "".join(
            c for c in unicodedata.normalize("NFKD", query) if not unicodedata.combining(c)
        )
    return _WORD.findall(query.casefold())


def _all_matches(conn: sqlite3.Connection, query: str, phrase: str, limit: int) -> list[Any] | None:
    """Return every row that matches `phrase` with its snippet and what bm25 needs.

    Returns None when that would cost more than FTS5's ranking, or could score differently.
    """
    words = _words(query)
    if len(set(words)) < len(words):
        # "a a" occurs twice in "a a a": bm25 counts both, highlight() marks one run.
        return None
    if len(words) == 1:
        # One word: its doclist is either short or a few rows are enough to count past
        # `limit`, so counting first is cheap (a phrase may be rare among common words).
        if conn.execute(_COUNT_SQL, (phrase, limit + 1)).fetchone()[0] > limit:
            return None
        return conn.execute(_MATCHES_SQL, (phrase,)).fetchall()
    cursor = conn.execute(_MATCHES_SQL, (phrase,))
    try:
        rows = cursor.fetchmany(1)
        if not rows:
            return rows
        totals = _varints(rows[0][8]) if isinstance(rows[0][8], bytes) else []
        if not totals:
            return None
        budget = max(_MIN_BUDGET, totals[0] // _ROWS_PER_SNIPPET)
        rows += cursor.fetchmany(budget)
        if len(rows) <= budget:
            return rows
        if budget >= limit or conn.execute(_COUNT_SQL, (phrase, limit + 1)).fetchone()[0] > limit:
            return None
        return rows + cursor.fetchall()
    finally:
        cursor.close()


def _rank(rows: list[Any], limit: int) -> list[SearchHit] | None:
    """Score `rows` (every row that matches the phrase) with bm25 exactly as FTS5 does.

    bm25 = idf · tf·(k1 + 1) / (tf + k1·(1 - b + b·len/avglen)), idf from the number of
    matching rows. `tf` counts the phrase's occurrences as highlight() marks them (occurrences
    that overlap, as "a a" in "a a a", count once). Returns None if FTS5's records cannot be read.
    """
    if not rows:
        return []
    averages = rows[0][8]
    if not isinstance(averages, bytes):
        return None
    totals = _varints(averages)
    n_rows = totals[0] if totals else 0
    if n_rows <= 0:
        return None
    avgdl = sum(totals[1:]) / n_rows
    n_hit = len(rows)
    idf = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
    if idf <= 0.0:
        idf = 1e-6
    k1, b = _BM25_K1, _BM25_B
    scored = []
    for rowid, owner, seq, turn, type_, snippet, tf, size, _averages in rows:
        if not isinstance(size, bytes) or not tf:
            return None
        length = sum(size) if max(size) < 0x80 else sum(_varints(size))
        score = idf * ((tf * (k1 + 1.0)) / (tf + k1 * (1 - b + b * length / avgdl)))
        scored.append((-score, rowid, owner, seq, turn, type_, snippet, score))
    scored.sort()
    return _grouped(row[2:] for row in scored[:limit])


def _optimize_after_bulk(conn: sqlite3.Connection, stats: SyncStats) -> None:
    """Merge the index into one segment after a sync that wrote most of it (a build).

    A bulk insert leaves several segments (FTS5 flushes every ~1 MB), and every query then
    walks each term's doclist in each of them: one segment makes phrase queries ~15% faster.
    It rewrites the whole index, so it is only worth it when this sync wrote most of it;
    small syncs are left to FTS5's automerge.
    """
    if stats.rows < _OPTIMIZE_ROWS:
        return
    total = conn.execute("SELECT count(*) FROM event_text_docsize").fetchone()[0]
    if 2 * stats.rows >= total:
        conn.execute("INSERT INTO event_text (event_text) VALUES ('optimize')")


def _execute_script(conn: sqlite3.Connection, script: str) -> None:
    """Run `;`-separated statements one by one (inside the caller's transaction)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _check_id(session_id: str) -> None:
    if not is_valid_session_id(session_id):
        raise ValueError(f"invalid session id {session_id!r} (12 lowercase hex characters)")
