"""The local store as either side of a transfer (`session/transfer.py`).

Read: a session's log lines as JSON objects (what a reader sees: acknowledged torn writes
skipped), its snapshot, checkpoint records and blobs, under its `flock` when a lock file
says it may have a writer; nothing is created or changed in the source.

Written, under the session's lock: events go to `<id>.events.jsonl.importing`, a copy of
the session's log (if it has one) with the new lines appended, in the line format
`EventLog` writes, fsynced after each batch; once every event is there it is renamed over
`<id>.events.jsonl`. A reader never sees a half-copied session, and an interrupted copy is
found and resumed: the staged file is kept if the log it started from is unchanged (a torn
last line of ours cut off), else dropped. Then blobs and checkpoint records, then the
snapshot: the source's, pointed at the byte offset of its `last_seq` in this log (a
snapshot names the line it covers up to); without one, one derived from the copied log.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import orjson

from ..checkpoint_storage import CheckpointRecord
from ..events import EVENT_ADAPTER
from ..log.reader import readable_events, readable_prefix
from ..log.writer import EventLog
from ..snapshot import SessionState
from ..storage import fsync_dir
from ..transfer import Raw, TransferError
from ..workspace.files import read_workspace_file
from .checkpoint_files import CheckpointFiles
from .manager import SessionManager
from .opening import open_from_files
from .snapshots import snapshot_matches_log, write_snapshot_file, write_state_file

STAGED_SUFFIX = ".events.jsonl.importing"
_LINE_KEYS = ("seq", "ts", "type", "turn", "step", "data")  # the order `EventLog` writes


def _read(directory: Path, name: str) -> bytes:
    """Return a store file's bytes (never through a symlink); b"" if absent or unreadable."""
    return read_workspace_file(directory, name) or b""


def _events(blob: bytes) -> list[Raw]:
    return [orjson.loads(line) for _event, line in readable_events(blob)]


def log_line(raw: Raw) -> bytes:
    """Return an event as a log line: its keys in the log's order, encoded as `EventLog` does."""
    ordered = {key: raw[key] for key in _LINE_KEYS if key in raw}
    ordered.update((key, value) for key, value in raw.items() if key not in ordered)
    return orjson.dumps(ordered, option=orjson.OPT_UTC_Z) + b"\n"


class LocalSessionImport:
    """One session being copied into the local store, its lock held."""

    def __init__(self, manager: SessionManager, session_id: str) -> None:
        self.manager = manager
        self.session_id = session_id
        self.log_path = manager.layout.log_path(session_id)
        self.staged_path = manager.layout.sessions_dir / f"{session_id}{STAGED_SUFFIX}"
        self._published = b""
        self._staged: EventLog | None = None
        self._next_seq = 0

    def existing_events(self) -> list[Raw]:
        """Return the log's events, or those of an interrupted copy of it."""
        directory = self.manager.layout.sessions_dir
        self._published = _read(directory, self.log_path.name)
        if self._published and not self._published.endswith(b"\n"):
            raise TransferError(
                f"session {self.session_id}: its log in the local store ends with an "
                "incomplete line (it was being written there when a process stopped); not "
                "copied into it"
            )
        staged = _read(directory, self.staged_path.name) if self.staged_path.exists() else None
        if staged is not None and staged.startswith(self._published):
            ours = staged[len(self._published) :]
            keep = len(self._published) + ours.rfind(b"\n") + 1  # a torn last line is cut off
            if keep < len(staged):
                fd = os.open(self.staged_path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    os.ftruncate(fd, keep)
                finally:
                    os.close(fd)
            events = _events(staged[:keep])
            self._staged = EventLog(self.staged_path, next_seq=len(events))
        else:
            self.staged_path.unlink(missing_ok=True)  # the log changed since: start again
            events = _events(self._published)
        self._next_seq = len(events)
        return events

    def append_events(self, raws: Sequence[Raw]) -> None:
        """Validate the events, append them to the staged log, fsync it."""
        for offset, raw in enumerate(raws):
            event = EVENT_ADAPTER.validate_python(raw)  # never write what cannot be read back
            if event.seq != self._next_seq + offset:
                raise TransferError(
                    f"session {self.session_id}: event seq {event.seq} does not continue the "
                    f"log at seq {self._next_seq + offset}"
                )
        if self._staged is None:
            self._staged = EventLog(self.staged_path, next_seq=self._next_seq)
            self._staged.append_raw(self._published, self._next_seq)
        self._next_seq += len(raws)
        self._staged.append_raw(b"".join(log_line(raw) for raw in raws), self._next_seq)
        self._staged.sync()

    def publish(self) -> None:
        """Rename the staged log over the session's log."""
        if self._staged is None:
            return
        self._staged.close()
        self._staged = None
        os.replace(self.staged_path, self.log_path)
        fsync_dir(self.manager.layout.sessions_dir)

    def close(self) -> None:
        """Close the staged log if still open (it stays, to be resumed)."""
        if self._staged is not None:
            self._staged.close()

    def put_blob(self, data: bytes) -> str:
        """Store `blobs/<aa>/<sha256>` once."""
        return CheckpointFiles(self.manager.layout).write_blob(data)

    def put_checkpoint(self, record: CheckpointRecord) -> None:
        """Write `checkpoints/<id>/<n>.json` atomically."""
        CheckpointFiles(self.manager.layout).write_record(record)

    def needs_snapshot(self, snapshot: SessionState | None) -> bool:
        """Return True if the session has no snapshot file."""
        return not self.manager.layout.snapshot_path(self.session_id).exists()

    def finish(self, snapshot: SessionState | None, events: Sequence[Raw]) -> None:
        """Write the source's snapshot, pointing at this log's bytes, or one derived from it."""
        path = self.manager.layout.snapshot_path(self.session_id)
        state = snapshot.model_copy() if snapshot is not None else None
        blob = _read(self.manager.layout.sessions_dir, self.log_path.name)
        end = _end_of_line(blob, state.last_seq) if state is not None else None
        if state is not None and end is not None:
            state.log_offset = end
            if snapshot_matches_log(self.log_path, state):
                write_state_file(path, state)
                return
        if state is not None:
            # No snapshot matches a log at offset 0 with events: `open_from_files` rebuilds
            # the state from the log, keeping the drift baseline it has only from this one.
            state.log_offset, state.last_seq = 0, max(state.last_seq, 0)
        session = open_from_files(
            self.session_id,
            self.log_path,
            (state, None),
            [],
            lock=None,
            redactor=None,
            read_only=True,
        )
        write_snapshot_file(path, session)


def _end_of_line(blob: bytes, seq: int) -> int | None:
    """Return the offset just after the line of event `seq` in a log's bytes, or None."""
    position = 0
    for event, line in readable_events(blob):
        position = blob.index(line, position) + len(line) + 1
        if event.seq == seq:
            return position
    return None


class LocalTransferStore:
    """One project's sessions in the local store, to copy from or into."""

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager
        self.checkpoint_files = CheckpointFiles(manager.layout)

    @property
    def description(self) -> str:
        """Return the project's directory in the local store."""
        return f"the local store ({self.manager.layout.project_dir})"

    def session_ids(self) -> list[str]:
        """Return the ids of the project's sessions, sorted."""
        return sorted(self.manager.layout.session_ids())

    def exists(self, session_id: str) -> bool:
        """Return True if the session has a log or a snapshot."""
        return self.manager.exists(session_id)

    @contextmanager
    def reading(self, session_id: str) -> Iterator[None]:
        """Hold the session's lock while it is read (a writer would append meanwhile)."""
        lock = self.manager.acquire_lock(session_id)
        try:
            yield
        finally:
            lock.release()

    def raw_events(self, session_id: str) -> list[Raw]:
        """Return the log's readable events as JSON objects."""
        return self.events_to_copy(session_id)[0]

    def events_to_copy(self, session_id: str) -> tuple[list[Raw], str | None]:
        """Return the log's readable events, and what of it cannot be read (None: all can)."""
        self.manager.layout.check_store_dirs()
        name = self.manager.layout.log_path(session_id).name
        blob = _read(self.manager.layout.sessions_dir, name)
        readable, stop = readable_prefix(blob)
        raws = [orjson.loads(line) for _event, line in readable]
        if stop is None:
            return raws, None
        line = blob.count(b"\n", 0, stop) + 1
        rest = len(blob) - stop
        return raws, (
            f"its log {name} cannot be read from line {line} on ({rest:,} bytes: a damaged "
            f"line, or one a crash cut short); only the {len(raws):,} events before it are "
            "copied, the rest stays in the local log (agent-assist doctor says more)"
        )

    def snapshot(self, session_id: str) -> SessionState | None:
        """Return the session's snapshot (migrated), or None."""
        return self.manager.read_snapshot(session_id)[0]

    def checkpoints(self, session_id: str) -> list[CheckpointRecord]:
        """Return the session's checkpoint records, by number."""
        return self.checkpoint_files.records(session_id)

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's bytes if intact."""
        return self.checkpoint_files.read_blob(digest)

    @contextmanager
    def importing(self, session_id: str, start: Raw) -> Iterator[LocalSessionImport]:
        """Take the session's lock and return its import (the staged log kept if cut short)."""
        self.manager.layout.check_store_dirs()
        lock = self.manager.acquire_lock(session_id)  # creates the project's directories
        into = LocalSessionImport(self.manager, session_id)
        try:
            yield into
        finally:
            try:
                into.close()
            finally:
                lock.release()
