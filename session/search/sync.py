"""Bringing the index up to date with the logs, reading each only from where it was indexed.

A session is indexed up to `log_offset`, the end of event `last_seq`; `line_hash` is the
SHA-256 of the log line ending there, so a log that shrank or was replaced is noticed with
one small read and re-indexed. A sync reads each log only from its `log_offset`
(`scan_log(path, log_offset, last_seq + 1)`), and not at all when its size has not changed
since the last scan (`scanned_size`). A sync that wrote most of the index (a build) merges
it into one segment (FTS5 `optimize`), and so does the sync after which the rows have
doubled since the last merge, when the trigrams are counted again (`note_new_rows`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..log.reader import scan_log
from .extract import Extractor
from .grams import count_grams, note_rows
from .schema import (
    _MAX_SESSIONS,
    PART_STREAM,
    SearchError,
    SyncProgress,
    _rowid,
    _session_range,
    from_micros,
    has_table,
    to_micros,
)

if TYPE_CHECKING:
    from ..local.layout import ProjectLayout

    pass

logger = logging.getLogger(__name__)

_LINE_WINDOW = 1 << 14
_OPTIMIZE_ROWS = 10_000  # a sync that writes this many rows (and most of the index) merges it


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


def sync_all(
    layout: ProjectLayout, *, merge: bool = True
) -> Callable[[sqlite3.Connection, SyncStats], None]:
    """Return the step that syncs every log of the project and drops vanished sessions.

    `merge`: merge the trigram index after a sync that wrote most of it (see `optimize`).
    """

    def sync_all(conn: sqlite3.Connection, stats: SyncStats) -> None:
        known = indexed_sessions(conn)
        present = ordered_sessions(layout, known)
        for session_id in present:
            sync_one(conn, layout, session_id, stats)
        for session_id in sorted(known - set(present)):
            drop_session(conn, session_id)
            stats.dropped += 1
        if not (merge and _optimize_after_bulk(conn, stats)):
            note_new_rows(conn, stats.rows)

    return sync_all


def indexed_sessions(conn: sqlite3.Connection) -> set[str]:
    """Return the sessions the index has rows (or progress) for."""
    return {sid for (sid,) in conn.execute("SELECT session_id FROM indexed_logs")}


def ordered_sessions(layout: ProjectLayout, known: set[str]) -> list[str]:
    """Return the project's sessions: those indexed first, then new ones oldest log first.

    Sessions are numbered as they are first indexed, so this keeps rowid order close to
    recency when many are indexed at once (a build), as it is when they come one by one.
    """
    present = sorted(layout.session_ids())
    new = [s for s in present if s not in known]

    def modified(session_id: str) -> float:
        try:
            return layout.log_path(session_id).stat().st_mtime
        except OSError:
            return 0.0

    new.sort(key=lambda s: (modified(s), s))
    return [s for s in present if s in known] + new


def drop_session(conn: sqlite3.Connection, session_id: str) -> None:
    """Remove a session's rows and its progress."""
    found = conn.execute("SELECT num FROM indexed_logs WHERE session_id = ?", (session_id,))
    row = found.fetchone()
    if row is not None:
        conn.execute("DELETE FROM event_rows WHERE id BETWEEN ? AND ?", _session_range(row[0]))
        conn.execute("DELETE FROM indexed_logs WHERE num = ?", (row[0],))


def _progress(conn: sqlite3.Connection, session_id: str) -> SyncProgress | None:
    row = conn.execute(
        "SELECT num, log_offset, last_seq, line_hash, scanned_size, stream_text, stream_seq,"
        " stream_turn, stream_step, stream_ts FROM indexed_logs WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        return None
    progress = SyncProgress(*row)
    progress.stream_ts = None if row[9] is None else from_micros(row[9])
    return progress


def sync_one(
    conn: sqlite3.Connection, layout: ProjectLayout, session_id: str, stats: SyncStats
) -> None:
    """Bring one session's rows up to date with its log (read from its indexed offset)."""
    stats.sessions += 1
    path = layout.log_path(session_id)
    progress = _progress(conn, session_id)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if progress is not None:
            drop_session(conn, session_id)
            stats.dropped += 1
        if not isinstance(exc, FileNotFoundError):
            stats.problems.append(f"{path.name}: cannot read ({exc.strerror or exc})")
        return
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            stats.problems.append(f"{path.name}: not a regular file; not indexed")
            if progress is not None:
                drop_session(conn, session_id)
                stats.dropped += 1
            return
        size = st.st_size
        if progress is None:
            progress = _new_session(conn, session_id)
        elif (
            size < progress.log_offset or _line_hash(fd, progress.log_offset) != progress.line_hash
        ):
            # Shrunk or replaced: what was indexed is not this log any more.
            conn.execute(
                "DELETE FROM event_rows WHERE id BETWEEN ? AND ?", _session_range(progress.num)
            )
            progress = SyncProgress(progress.num)
            stats.reindexed += 1
        elif size == progress.scanned_size:
            return  # nothing was appended since the last scan
        _index_tail(conn, fd, path, session_id, progress, size, stats)
    finally:
        os.close(fd)


def _new_session(conn: sqlite3.Connection, session_id: str) -> SyncProgress:
    num = conn.execute("SELECT coalesce(max(num), 0) + 1 FROM indexed_logs").fetchone()[0]
    if num >= _MAX_SESSIONS:
        raise SearchError("too many sessions for the search index; rebuild it")
    conn.execute("INSERT INTO indexed_logs (num, session_id) VALUES (?, ?)", (num, session_id))
    return SyncProgress(num)


def _index_tail(
    conn: sqlite3.Connection,
    fd: int,
    path: Path,
    session_id: str,
    progress: SyncProgress,
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
                "DELETE FROM event_rows WHERE id = ?",
                (_rowid(num, progress.stream_seq, PART_STREAM),),
            )
        extractor = Extractor(session_id, progress)
        for event in scan.events:
            extractor.feed(event)
        text, stream_seq, stream_turn = extractor.open_stream()
        stream_step, stream_ts = extractor.stream_step, extractor.stream_ts
        extractor.add_stream(scan.events[-1].ts)  # still streaming: a provisional row
        conn.executemany(
            "INSERT INTO event_rows (id, turn, step, ts, type, text, norm, tool, paths)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*row[:3], to_micros(row[3]), *row[4:]) for row in extractor.rows],
        )
        stats.rows += len(extractor.rows)
        last_seq = scan.events[-1].seq
        conn.execute(
            "UPDATE indexed_logs SET log_offset = ?, last_seq = ?, line_hash = ?, scanned_size = ?,"
            " stream_text = ?, stream_seq = ?, stream_turn = ?, stream_step = ?, stream_ts = ?"
            " WHERE num = ?",
            (
                scan.end_offset,
                last_seq,
                _line_hash(fd, scan.end_offset),
                size,
                text,
                stream_seq,
                stream_turn,
                stream_step if text is not None else None,
                to_micros(stream_ts) if text is not None and stream_ts is not None else None,
                num,
            ),
        )
    else:
        conn.execute(
            "UPDATE indexed_logs SET log_offset = ?, last_seq = ?, line_hash = ?,"
            " scanned_size = ? WHERE num = ?",
            (progress.log_offset, progress.last_seq, progress.line_hash, size, num),
        )


def note_new_rows(conn: sqlite3.Connection, added: int) -> None:
    """Count `added` new rows towards counting the trigrams again (see `grams.py`).

    The trigram index is merged into one segment then too (`optimize`): syncs of one turn
    each leave FTS5 15-20 segments at 100k-1M events, and every query walks each trigram's
    doclist in each of them (10-30 % of a query's time, measured at 1M events). Once per
    doubling of the rows, the merge costs a bounded share of the writes (1.7 s at 1M).
    """
    if has_table(conn, "event_grams"):
        note_rows(conn, added, optimize)


def _optimize_after_bulk(conn: sqlite3.Connection, stats: SyncStats) -> bool:
    """Merge the trigram index into one segment after a sync that wrote most of it (a build).

    A bulk insert leaves several segments (FTS5 flushes every ~1 MB), and every query then
    walks each trigram's doclist in each of them. Merging rewrites the whole index, so it is
    only worth it when this sync wrote most of it; small syncs are left to FTS5's automerge.
    """
    if stats.rows < _OPTIMIZE_ROWS:
        return False
    total = conn.execute("SELECT count(*) FROM event_rows").fetchone()[0]
    if 2 * stats.rows < total:
        return False
    optimize(conn)
    return True


def optimize(conn: sqlite3.Connection) -> None:
    """Merge the trigram index into one segment (if there is one), and count its trigrams."""
    if has_table(conn, "event_grams"):
        conn.execute("INSERT INTO event_grams (event_grams) VALUES ('optimize')")
        count_grams(conn)
