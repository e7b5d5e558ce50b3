"""The index's tables, their version, and the rowid layout that ties each row to its session.

Schema (`PRAGMA user_version` = `SCHEMA_VERSION`), all in `TABLES` and `GRAM_TABLES`::

    indexed_logs(num INTEGER PRIMARY KEY, session_id TEXT UNIQUE,   -- per-session progress
                 log_offset, last_seq, line_hash, scanned_size,
                 stream_text, stream_seq, stream_turn, stream_step, stream_ts)
    event_rows(id INTEGER PRIMARY KEY, turn, step, ts, type, text, norm,
               tool, paths)                                         -- one row per text
    event_grams USING fts5(body, tokenize = 'trigram case_sensitive 1',
                           detail = none, content = '')             -- kept by two triggers
    gram_docs(term TEXT PRIMARY KEY, docs)                          -- frequent trigrams

`ts` is the event's time in microseconds since the epoch (UTC); `tool` the tool name of a
tool call or result; `paths` the workspace paths a tool call names or a drift event lists,
each between newlines (`filters.py`). `text` is the text as written; `norm` its normalized
form (`text.fold`), stored only when it differs from what SQLite's `lower(text)` gives (for
ASCII text it never does).
`event_grams` indexes `coalesce(norm, lower(text))` and two `GRAM_END` characters (so
every character starts a trigram, for queries of one or two characters) and stores
nothing else: it only finds candidates, which are checked against `event_rows`.
`gram_docs` counts the rows of its frequent trigrams, to choose which of a query's
trigrams to look up (`grams.py`).
Without the trigram tokenizer (SQLite < 3.34) there is no `event_grams` and a search
scans `event_rows`.

The rowid of an `event_rows` row also encodes where its text comes from:
`num << 40 | seq << 2 | part` (`part` 0: the event's own text, 1: streamed text). One
session's rows are therefore one rowid range, and within a session a later event has a
larger rowid. Sessions are numbered in the order they were first indexed (a build takes
them oldest log first), so rowid order is roughly recency.

A table added later goes into `TABLES` (created when missing whenever the index is opened
for writing). A change to the format of the search tables bumps `SCHEMA_VERSION`; listing
the old version's tables in `LEGACY_TABLES` keeps that index answering while the new one
is built beside it (`SearchIndex.build_step`); any other version is dropped and rebuilt.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .grams import GRAM_DOCS_TABLE

logger = logging.getLogger(__name__)

INDEX_FILE = "index.sqlite"
SCHEMA_VERSION = 4  # 2: a unicode61 word index (`event_text`); 3: no step, time, tool, paths
GRAM_END = "\uffff\uffff"  # appended to indexed text; never in a stored text (see text.clean)

_SESSION_SHIFT = 40  # rowid = num << 40 | seq << 2 | part
_SEQ_SHIFT = 2
_SEQ_LIMIT = 1 << (_SESSION_SHIFT - _SEQ_SHIFT)
_MAX_SESSIONS = 1 << (63 - _SESSION_SHIFT)
PART_EVENT = 0
PART_STREAM = 1
STREAM_TYPE = "assistant/chunk"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

TABLES: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS indexed_logs (
    num INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE,
    log_offset INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT -1,
    line_hash BLOB,
    scanned_size INTEGER NOT NULL DEFAULT -1,
    stream_text TEXT,
    stream_seq INTEGER,
    stream_turn INTEGER,
    stream_step INTEGER,
    stream_ts INTEGER
)""",
    """CREATE TABLE IF NOT EXISTS event_rows (
    id INTEGER PRIMARY KEY,
    turn INTEGER,
    step INTEGER,
    ts INTEGER,
    type TEXT NOT NULL,
    text TEXT NOT NULL,
    norm TEXT,
    tool TEXT,
    paths TEXT
)""",
    GRAM_DOCS_TABLE,
)
# What event_grams indexes for a row: its folded text and GRAM_END (char 65535, twice).
GRAM_TABLES: tuple[str, ...] = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS event_grams USING fts5("
    "body, tokenize = 'trigram case_sensitive 1', detail = none, content = '')",
    "CREATE TRIGGER IF NOT EXISTS event_rows_insert AFTER INSERT ON event_rows BEGIN "
    "INSERT INTO event_grams (rowid, body) "
    "VALUES (new.id, coalesce(new.norm, lower(new.text)) || char(65535, 65535)); END",
    "CREATE TRIGGER IF NOT EXISTS event_rows_delete AFTER DELETE ON event_rows BEGIN "
    "INSERT INTO event_grams (event_grams, rowid, body) "
    "VALUES ('delete', old.id, coalesce(old.norm, lower(old.text)) || char(65535, 65535)); END",
)
FILL_GRAMS = (
    "INSERT INTO event_grams (rowid, body)"
    " SELECT id, coalesce(norm, lower(text)) || char(65535, 65535) FROM event_rows"
)
_DROP_GRAMS: tuple[str, ...] = (
    "DROP TRIGGER IF EXISTS event_rows_insert",
    "DROP TRIGGER IF EXISTS event_rows_delete",
    "DROP TABLE IF EXISTS event_grams",
)
# Versions whose tables answer searches while this version's are built (then dropped).
LEGACY_TABLES: dict[int, tuple[str, ...]] = {2: ("event_text", "sessions")}


class SearchError(Exception):
    """The index cannot be used (a symlink in its place, unwritable, disk full...)."""


@functools.cache
def trigram_available() -> bool:
    """Whether this SQLite has FTS5's trigram tokenizer (3.34+); says so once if not."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'trigram case_sensitive 1')")
        return True
    except sqlite3.Error as exc:
        logger.warning(
            "SQLite %s has no FTS5 trigram tokenizer (%s; it needs 3.34 or later): search "
            "reads every stored text instead of an index, which is slower on large stores",
            sqlite3.sqlite_version,
            exc,
        )
        return False
    finally:
        conn.close()


def drop_statements() -> list[str]:
    """Return the statements that drop every table this or an earlier version made."""
    legacy = [name for names in LEGACY_TABLES.values() for name in names]
    names = [*legacy, "indexed_logs", "event_rows", "gram_docs"]
    return [*_DROP_GRAMS, *(f"DROP TABLE IF EXISTS {name}" for name in names)]


def create_statements(grams: bool) -> list[str]:
    """Return the statements that create this version's tables (those missing)."""
    return [*TABLES, *(GRAM_TABLES if grams else ())]


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the database has a table (or virtual table) called `name`."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return found.fetchone() is not None


def ensure_grams(conn: sqlite3.Connection) -> None:
    """Make `event_grams` match this SQLite: built from the rows if it can be, else dropped.

    An index made by a SQLite without trigrams and opened by one with them gets its trigram
    index now; the other way round, the trigram table (unusable there) is dropped.
    """
    present = has_table(conn, "event_grams")
    if trigram_available() and not present:
        for statement in GRAM_TABLES:
            conn.execute(statement)
        conn.execute(FILL_GRAMS)
    elif not trigram_available() and present:
        for statement in _DROP_GRAMS:
            conn.execute(statement)


def execute_all(conn: sqlite3.Connection, statements: list[str] | tuple[str, ...]) -> None:
    """Run statements one by one (inside the caller's transaction)."""
    for statement in statements:
        conn.execute(statement)


@dataclass
class SyncProgress:
    """How far a session is indexed: its number, the log read so far, an unfinished stream."""

    num: int
    log_offset: int = 0
    last_seq: int = -1
    line_hash: bytes | None = None
    scanned_size: int = -1
    stream_text: str | None = None
    stream_seq: int | None = None
    stream_turn: int | None = None
    stream_step: int | None = None
    stream_ts: datetime | None = None


def to_micros(moment: datetime) -> int:
    """Return a time as the index stores it: microseconds since the epoch."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def from_micros(micros: int) -> datetime:
    """Return the time the index stores as `micros` (UTC)."""
    return _EPOCH + timedelta(microseconds=micros)


def _rowid(num: int, seq: int, part: int) -> int:
    return (num << _SESSION_SHIFT) | (seq << _SEQ_SHIFT) | part


def _session_range(num: int) -> tuple[int, int]:
    return num << _SESSION_SHIFT, ((num + 1) << _SESSION_SHIFT) - 1


def session_num(rowid: int) -> int:
    """Return the session number a rowid belongs to."""
    return rowid >> _SESSION_SHIFT


def rowid_seq(rowid: int) -> int:
    """Return the seq of the event a rowid comes from."""
    return (rowid >> _SEQ_SHIFT) & (_SEQ_LIMIT - 1)
