"""The index's tables, their version, and the rowid layout that ties each row to its session.

Schema (`PRAGMA user_version` = `SCHEMA_VERSION`)::

    sessions(num INTEGER PRIMARY KEY, session_id TEXT UNIQUE,   -- per-session progress
             log_offset, last_seq, line_hash, scanned_size,
             stream_text, stream_seq, stream_turn)
    event_text USING fts5(text, session_id UNINDEXED, seq UNINDEXED, turn UNINDEXED,
                          type UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')

The rowid of an `event_text` row also encodes where its text comes from:
`num << 40 | seq << 2 | part` (`part` 0: the event's own text, 1: streamed text). One
session's rows are therefore one rowid range, which makes dropping a session, re-indexing
it or restricting a search to it cheap (FTS5 has no index on UNINDEXED columns). An index
of another version is dropped and rebuilt from the logs.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

INDEX_FILE = "index.sqlite"
SCHEMA_VERSION = 2  # 1: an early draft (text, turn, type only); rebuilt on open
TOKENIZER = "unicode61 remove_diacritics 2"

_SESSION_SHIFT = 40  # rowid = num << 40 | seq << 2 | part
_SEQ_SHIFT = 2
_SEQ_LIMIT = 1 << (_SESSION_SHIFT - _SEQ_SHIFT)
_MAX_SESSIONS = 1 << (63 - _SESSION_SHIFT)
PART_EVENT = 0
PART_STREAM = 1
STREAM_TYPE = "assistant/chunk"

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


class SearchError(Exception):
    """The index cannot be used (a symlink in its place, unwritable, disk full...)."""


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


def _rowid(num: int, seq: int, part: int) -> int:
    return (num << _SESSION_SHIFT) | (seq << _SEQ_SHIFT) | part


def _session_range(num: int) -> tuple[int, int]:
    return num << _SESSION_SHIFT, ((num + 1) << _SESSION_SHIFT) - 1


def _execute_script(conn: sqlite3.Connection, script: str) -> None:
    """Run `;`-separated statements one by one (inside the caller's transaction)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)
