"""EventLog: appending to the append-only `<id>.events.jsonl` file.

One `write()` per event with dense seqs, an fsync at durable points, a torn tail left by a
crash terminated and acknowledged (`session/recover`) before the next event.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..events import EVENT_ADAPTER, Event, utcnow
from ..redaction import Redactor
from .reader import LogScan, scan_log

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

    def copy(self, events: Sequence[Event], lines: bytes | None = None) -> None:
        """Append already-written events (a fork's prefix): `lines` byte for byte if given."""
        if lines is None:
            lines = b"".join(
                orjson.dumps(event.model_dump(mode="json"), option=orjson.OPT_UTC_Z) + b"\n"
                for event in events
            )
        self.append_raw(lines, events[-1].seq + 1 if events else self.next_seq)

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

    @property
    def pending(self) -> int:
        """Return 0: an appended event is in the file (or the append failed)."""
        return 0

    @property
    def online(self) -> bool:
        """Return True: a file is always there to write to (or refuses, and says so)."""
        return True

    def retry(self) -> bool:
        """Return True: nothing ever waits."""
        return True

    def replay(self) -> list[Event]:
        """Return every readable event of the file (to rebuild a projection)."""
        return scan_log(self.path).events

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
