"""EventLog: the append-only `<id>.events.jsonl` file that is each session's source of truth."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import ValidationError

from .models import EVENT_ADAPTER, Event, RecoverEvent, utcnow
from .redaction import Redactor

# Events after which the log is fsynced: a completed turn, a save, a rewind or a compaction
# survives power loss. (`fork` and `close` call `sync()` themselves.)
SYNC_TYPES = frozenset({"turn/end", "session/save", "session/rewind", "session/compact"})

_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW


class LogError(Exception):
    """The log cannot be written (read-only, closed, or the disk refused: see `errno`)."""

    def __init__(
        self, message: str, *, errno: int | None = None, written: Event | None = None
    ) -> None:
        super().__init__(message)
        self.errno = errno
        self.written = written  # the event is in the file, but the fsync after it failed


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
                break
            pending = LogProblem("bad_line", 0, offset, len(line), "")
            continue
        if pending is not None and not _acknowledges(event, pending):
            break
        pending = None
        out.append((event, line))
    return out


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


class EventLog:
    """Appends events with dense seqs; flushes every event, fsyncs at durable points."""

    def __init__(
        self,
        path: Path,
        *,
        next_seq: int = 0,
        redactor: Redactor | None = None,
        read_only: bool = False,
        torn_tail: tuple[int, int] | None = None,
        missing_newline: bool = False,
    ) -> None:
        self.path = path
        self.next_seq = next_seq
        self.redactor = redactor or Redactor()
        self.read_only = read_only
        self.fsync_count = 0
        self._fd: int | None = None
        self._torn_tail = torn_tail
        self._missing_newline = missing_newline
        self._dirty = False
        self.offset = self.size  # byte offset of the end of the file, kept as we append

    @classmethod
    def for_scan(cls, path: Path, scan: LogScan, *, redactor: Redactor | None = None) -> EventLog:
        """Open a log for appending after `scan` has read it."""
        last = scan.last_seq
        return cls(
            path,
            next_seq=0 if last is None else last + 1,
            redactor=redactor,
            read_only=scan.read_only_reason is not None,
            torn_tail=scan.torn_tail,
            missing_newline=scan.missing_newline,
        )

    @property
    def size(self) -> int:
        """Return the current size of the file in bytes (0 if it does not exist yet)."""
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def _open(self) -> int:
        if self._fd is None:
            if self.read_only:
                raise LogError(f"{self.path.name} is open read-only")
            try:
                self._fd = os.open(self.path, _OPEN_FLAGS, 0o600)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise LogError(f"{self.path} is a symlink; refusing to write") from None
                raise LogError(
                    f"cannot open {self.path}: {exc.strerror}", errno=exc.errno
                ) from None
            st = os.fstat(self._fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                # Appending in place would also write to the other name of a hard link,
                # which may be outside the store.
                os.close(self._fd)
                self._fd = None
                raise LogError(
                    f"{self.path} is not a plain file with one link "
                    f"({st.st_nlink} links); refusing to write"
                )
            self.offset = st.st_size
        return self._fd

    def _repair_tail(self) -> None:
        """Terminate an incomplete last line and acknowledge it with `session/recover`."""
        if self._missing_newline:
            self._write(b"\n")
            self._missing_newline = False
        torn, self._torn_tail = self._torn_tail, None  # None: `append` below must not recurse
        if torn is not None:
            offset, length = torn
            try:
                if self.offset == offset + length:  # not terminated yet (a retry may find it is)
                    self._write(b"\n")
                self.append(
                    "session/recover", {"offset": offset, "length": length, "reason": "torn write"}
                )
            except LogError:
                self._torn_tail = torn  # acknowledge it on the next attempt
                raise

    def _write(self, payload: bytes) -> None:
        assert self._fd is not None
        view = memoryview(payload)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
                self.offset += written
        except OSError as exc:
            raise LogError(
                f"cannot write the session log {self.path}: {exc.strerror}", errno=exc.errno
            ) from None
        self._dirty = True

    def _undo_partial(self, start: int) -> None:
        """After a failed write, cut the file back to `start` so no partial line stays.

        Shrinking a file needs no free space. If even that fails, the partial line is
        remembered as a torn tail and repaired before the next event.
        """
        if self.offset <= start:
            return
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, start)
        except OSError:
            self._torn_tail = (start, self.offset - start)
        else:
            self.offset = start

    def append(
        self,
        type_: str,
        data: Mapping[str, Any],
        *,
        turn: int | None = None,
        step: int | None = None,
        sync: bool | None = None,
    ) -> Event:
        """Validate, scrub and append one event; return it (unscrubbed, for in-memory use)."""
        self._open()
        if self._torn_tail is not None or self._missing_newline:
            self._repair_tail()
        raw: dict[str, Any] = {
            "seq": self.next_seq,
            "ts": utcnow(),
            "type": type_,
            "turn": turn,
            "step": step,
            "data": dict(data),
        }
        event = EVENT_ADAPTER.validate_python(raw)  # never write what cannot be read back
        stored = {**raw, "data": self.redactor.scrub(raw["data"])}
        start = self.offset
        try:
            self._write(orjson.dumps(stored, option=orjson.OPT_UTC_Z) + b"\n")
        except LogError:
            self._undo_partial(start)
            raise
        self.next_seq += 1
        if sync if sync is not None else type_ in SYNC_TYPES:
            try:
                self.sync()
            except LogError as exc:
                raise LogError(str(exc), errno=exc.errno, written=event) from None
        return event

    def append_raw(self, payload: bytes, next_seq: int) -> None:
        """Append already-serialized event lines (a fork's copied prefix) verbatim."""
        self._open()
        if self._torn_tail is not None or self._missing_newline:
            self._repair_tail()
        if payload:
            start = self.offset
            try:
                self._write(payload)
            except LogError:
                self._undo_partial(start)
                raise
        self.next_seq = next_seq

    def sync(self) -> None:
        """Fsync the log if anything was written since the last fsync."""
        if self._fd is not None and self._dirty:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise LogError(
                    f"cannot fsync the session log {self.path}: {exc.strerror}", errno=exc.errno
                ) from None
            self.fsync_count += 1
            self._dirty = False

    def close(self) -> None:
        """Fsync and close the file."""
        if self._fd is not None:
            try:
                self.sync()
            finally:
                os.close(self._fd)
                self._fd = None
