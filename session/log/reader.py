"""Reading a log: lines parsed into events, scans from an offset, the readable prefix.

A torn last line or a bad line in the middle is reported with where it is; reading never
changes the file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import orjson
from pydantic import ValidationError

from ..events import EVENT_ADAPTER, Event, RecoverEvent


@dataclass(frozen=True)
class LogProblem:
    """Something wrong found while reading a log, with where it is."""

    kind: Literal["torn_tail", "bad_line", "recovered"]
    line: int
    offset: int
    length: int
    message: str


@dataclass
class LogScan:
    """What reading a log (or its tail from an offset) found."""

    events: list[Event] = field(default_factory=list)
    start_offset: int = 0
    end_offset: int = 0
    problems: list[LogProblem] = field(default_factory=list)
    read_only_reason: str | None = None
    torn_tail: tuple[int, int] | None = None
    missing_newline: bool = False

    @property
    def last_seq(self) -> int | None:
        """Return the seq of the last readable event, if any."""
        return self.events[-1].seq if self.events else None


def parse_event_line(line: bytes) -> Event:
    """Parse one log line into a typed event (raises ValueError on anything malformed)."""
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ValueError("an event must be a JSON object")
    try:
        return EVENT_ADAPTER.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"invalid event ({where}: {first['msg']})") from None


def iter_log(path: Path, types: frozenset[str] | None = None) -> Iterator[Event]:
    """Yield a log's readable events in order, one line in memory at a time.

    The readable prefix `scan_log` would return: it stops at the first line that is not
    the next event (a bad line, a torn tail, a gap in the seqs). A log that cannot be
    opened as a regular file yields nothing. For replaying a long session with bounded
    memory; `scan_log` is for what needs the problems and offsets too. With `types`, only
    events of those types are validated and yielded; the others are only checked to be
    the next line's JSON object (a quick pass over a long log).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return
        expect = 0
        for line in fh:
            if not line.strip():
                continue
            if types is not None:
                try:
                    raw = orjson.loads(line)
                except orjson.JSONDecodeError:
                    return
                if not isinstance(raw, dict) or raw.get("seq") != expect:
                    return
                expect += 1
                if raw.get("type") in types:
                    try:
                        yield EVENT_ADAPTER.validate_python(raw)
                    except ValidationError:
                        return
                continue
            try:
                event = parse_event_line(line)
            except ValueError:
                return
            if event.seq != expect:
                return
            expect += 1
            yield event


def scan_log(path: Path, start_offset: int = 0, expect_seq: int = 0) -> LogScan:
    """Read events from `start_offset`; stop (read-only) at the first bad line in the middle."""
    scan = LogScan(start_offset=start_offset, end_offset=start_offset)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return scan
    except OSError as exc:  # a symlink (ELOOP) or worse: never followed, reported
        scan.read_only_reason = f"{path.name}: cannot open log ({exc.strerror or exc})"
        scan.problems.append(LogProblem("bad_line", 0, 0, 0, scan.read_only_reason))
        return scan
    try:
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                scan.read_only_reason = f"{path.name}: not a regular file"
                scan.problems.append(LogProblem("bad_line", 0, 0, 0, scan.read_only_reason))
                return scan
            fh.seek(start_offset)
            blob = fh.read()
    except OSError as exc:
        scan.read_only_reason = f"{path.name}: cannot read log ({exc.strerror or exc})"
        return scan
    pos = 0
    line_no = 1  # relative to start_offset; made absolute only when a problem is reported
    base: list[int] = []

    def absolute(rel: int) -> int:
        if not start_offset:
            return rel
        if not base:
            base.append(_line_number_at(path, start_offset) - 1)
        return base[0] + rel

    pending_bad: LogProblem | None = None
    size = len(blob)
    while pos < size:
        nl = blob.find(b"\n", pos)
        complete = nl != -1
        end = nl if complete else size
        line = blob[pos:end]
        offset = start_offset + pos
        next_pos = end + 1 if complete else size
        if not line.strip():
            pos = next_pos
            line_no += 1
            continue
        try:
            event = parse_event_line(line)
            if event.seq != expect_seq:
                raise ValueError(f"seq {event.seq} where {expect_seq} was expected")
        except ValueError as exc:
            if not complete:
                line_no = absolute(line_no)
                scan.torn_tail = (offset, len(line))
                scan.problems.append(
                    LogProblem(
                        "torn_tail",
                        line_no,
                        offset,
                        len(line),
                        f"{path.name}: incomplete last line {line_no} ({len(line)} bytes) "
                        "ignored; it was being written when the process stopped",
                    )
                )
                break
            if pending_bad is not None:
                break  # two bad lines in a row: the first one stands as the stop point
            abs_no = absolute(line_no)
            pending_bad = LogProblem(
                "bad_line", abs_no, offset, len(line), f"{path.name}: line {abs_no}: {exc}"
            )
            pos = next_pos
            line_no += 1
            continue
        if pending_bad is not None:
            if _acknowledges(event, pending_bad):
                scan.problems.append(
                    LogProblem(
                        "recovered",
                        pending_bad.line,
                        pending_bad.offset,
                        pending_bad.length,
                        f"{path.name}: line {pending_bad.line} is a torn write from an earlier "
                        "crash, kept in the file and skipped",
                    )
                )
                pending_bad = None
            else:
                break
        scan.events.append(event)
        expect_seq = event.seq + 1
        scan.end_offset = start_offset + next_pos
        scan.missing_newline = not complete
        pos = next_pos
        line_no += 1
    if pending_bad is not None:
        scan.problems.append(pending_bad)
        scan.read_only_reason = (
            f"{pending_bad.message}. The session opens read-only up to line "
            f"{pending_bad.line - 1}; the file is left as it is."
        )
    return scan


def readable_events(blob: bytes) -> list[tuple[Event, bytes]]:
    """Return a whole log's readable events with their lines, as `scan_log` reads them.

    A torn write that a later `session/recover` acknowledges is skipped and reading goes on;
    anything else bad (or a torn last line) ends the readable prefix.
    """
    return readable_prefix(blob)[0]


def readable_prefix(blob: bytes) -> tuple[list[tuple[Event, bytes]], int | None]:
    """Return `readable_events(blob)` and the offset of the first byte not read (None: all).

    The bytes from that offset on are a line that cannot be read (damaged, or a torn write
    nothing acknowledges) and whatever follows it.
    """
    out: list[tuple[Event, bytes]] = []
    pending: LogProblem | None = None
    pos = 0
    while pos < len(blob):
        nl = blob.find(b"\n", pos)
        end = nl if nl != -1 else len(blob)
        line, offset, pos = blob[pos:end], pos, end + 1
        if not line.strip():
            continue
        try:
            event = parse_event_line(line)
            if event.seq != len(out):
                raise ValueError("out of order")
        except ValueError:
            if pending is not None or nl == -1:
                return out, offset if pending is None else pending.offset
            pending = LogProblem("bad_line", 0, offset, len(line), "")
            continue
        if pending is not None and not _acknowledges(event, pending):
            return out, pending.offset
        pending = None
        out.append((event, line))
    return out, None if pending is None else pending.offset


def _acknowledges(event: Event, problem: LogProblem) -> bool:
    return (
        isinstance(event, RecoverEvent)
        and event.data.offset == problem.offset
        and event.data.length == problem.length
    )


def _line_number_at(path: Path, offset: int) -> int:
    """Line numbers in messages are 1-based over the whole file; count them lazily."""
    count = 1
    with open(path, "rb") as fh:
        remaining = offset
        while remaining > 0:
            chunk = fh.read(min(remaining, 1 << 20))
            if not chunk:
                break
            count += chunk.count(b"\n")
            remaining -= len(chunk)
    return count
