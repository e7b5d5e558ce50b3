"""SessionManager: the files of one project directory (logs, snapshots, pointers, locks)."""

from __future__ import annotations

import errno
import logging
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import filelock
import orjson
from pydantic import ValidationError

from .derive import HistoryBuilder, HistoryItem, ReplayRequiredError, build_history, tail_of
from .log import EventLog, LogError, LogScan, parse_event_line, scan_log
from .models import (
    CompactEvent,
    DecisionEvent,
    Event,
    FutureSchemaError,
    Persistence,
    PhaseEvent,
    SaveEvent,
    SessionStartEvent,
    SessionState,
    SummaryEvent,
    TurnStartEvent,
    migrate_snapshot,
    utcnow,
)
from .paths import is_valid_instance_id, is_valid_session_id, project_dir_name, storage_root
from .redaction import Redactor
from .storage import (
    StorageError,
    atomic_write_json,
    ensure_private_dir,
    fsync_dir,
    read_json_file,
    unlink_quiet,
)

logger = logging.getLogger(__name__)

TITLE_CHARS = 80
LAST_EVENT_WINDOW = 256 * 1024  # bytes read from the end of a log for its last event
# The history sent to the model and kept in a snapshot: the newest whole turns within this
# many (estimated) tokens. Older turns stay in the log; compaction summarises them.
DEFAULT_HISTORY_TOKENS = 64_000


class SessionError(Exception):
    """A session operation a user can act on failed; the message says why.

    `errno` is set when the operating system refused a write (a full disk, a read-only store).
    """

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


class StoreNotWritableError(SessionError):
    """The operating system refuses writes to the store (read-only, permissions)."""


# errnos meaning "this store cannot be written at all", as opposed to a full disk
UNWRITABLE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


class SessionLockedError(SessionError):
    """Another process (another editor window) is writing this session."""


class SessionNotFoundError(SessionError):
    """No session with that id exists in this project."""


class ReadOnlySessionError(SessionError):
    """The session was opened read-only (damaged log or newer schema)."""


@dataclass
class SessionInfo:
    """One row of a session listing."""

    session_id: str
    title: str | None
    created_at: datetime
    updated_at: datetime
    turns: int
    parent_session_id: str | None = None
    phase: str | None = None


def merge_decisions(old: list[str], new: list[str]) -> list[str]:
    """Return `old` then the decisions of `new` not already in it (compared loosely)."""
    seen = {" ".join(d.lower().split()).rstrip(".") for d in old}
    merged = list(old)
    for decision in new:
        key = " ".join(decision.lower().split()).rstrip(".")
        if key and key not in seen:
            seen.add(key)
            merged.append(decision.strip())
    return merged


def apply_event_to_state(state: SessionState, event: Event) -> None:
    """Fold one event into the snapshot's metadata (the snapshot is a projection)."""
    state.last_seq = event.seq
    state.updated_at = event.ts
    if isinstance(event, TurnStartEvent):
        if event.turn is not None and event.turn > state.turns:
            state.turns = event.turn
        if state.title is None and event.data.input.strip():
            state.title = " ".join(event.data.input.split())[:TITLE_CHARS]
    elif isinstance(event, DecisionEvent):
        state.decisions = merge_decisions(state.decisions, [event.data.text])
    elif isinstance(event, PhaseEvent):
        state.phase = event.data.phase
    elif isinstance(event, CompactEvent):
        state.compacted_history_summary = event.data.summary
        if state.summary_covers_seq < event.data.covers_seq:  # no running summary covers more
            state.summary = event.data.summary
        state.decisions = merge_decisions(state.decisions, event.data.decisions)
    elif isinstance(event, SummaryEvent):
        state.summary = event.data.summary
        state.summary_covers_seq = event.data.covers_seq
        state.summary_turns = event.data.turns
        state.decisions = merge_decisions(state.decisions, event.data.decisions)
    elif isinstance(event, SaveEvent):
        state.checkpoint_count = max(state.checkpoint_count, event.data.checkpoint)
        state.file_manifest = dict(event.data.manifest)
    elif isinstance(event, SessionStartEvent):
        state.parent_session_id = event.data.parent_session_id
        state.fork_boundary = event.data.fork_boundary
        state.persistence = event.data.persistence
        if event.data.manifest and not state.file_manifest:
            state.file_manifest = dict(event.data.manifest)


def state_from_events(session_id: str, events: list[Event]) -> SessionState:
    """Rebuild a snapshot from the log alone (when the snapshot is missing or stale)."""
    state = SessionState(session_id=session_id)
    if events:
        state.created_at = events[0].ts
    for event in events:
        apply_event_to_state(state, event)
    return state


@dataclass
class Session:
    """An open session: its snapshot projection, its log and the history derived from it."""

    state: SessionState
    log: EventLog
    history: HistoryBuilder
    lock: filelock.BaseFileLock | None = None
    read_only_reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    boundary_offset: int = 0
    boundary_seq: int = -1
    boundary_items: list[HistoryItem] = field(default_factory=list)
    history_tokens: int = DEFAULT_HISTORY_TOKENS

    @property
    def session_id(self) -> str:
        """Return the session id."""
        return self.state.session_id

    @property
    def read_only(self) -> bool:
        """Return True if this session must not be written."""
        return self.read_only_reason is not None

    @property
    def open_turn(self) -> int | None:
        """Return the number of the turn in progress, if any."""
        return self.history.open_turn

    def append(
        self,
        type_: str,
        data: Mapping[str, Any],
        *,
        turn: int | None = None,
        step: int | None = None,
        sync: bool | None = None,
    ) -> Event:
        """Append an event and fold it into the state and the history."""
        if self.read_only_reason is not None:
            raise ReadOnlySessionError(f"session is read-only: {self.read_only_reason}")
        try:
            event = self.log.append(type_, data, turn=turn, step=step, sync=sync)
        except LogError as exc:
            if exc.written is not None:  # in the file, not known durable: keep state in step
                self._fold(exc.written)
            raise SessionError(str(exc), errno=exc.errno) from None
        self._fold(event)
        return event

    def _fold(self, event: Event) -> None:
        apply_event_to_state(self.state, event)
        try:
            self.history.apply(event)
        except ReplayRequiredError:
            self.history = _replay_history(self.log.path, self.state)
        if self.history.open_turn is None:
            self.mark_boundary()

    def mark_boundary(self) -> None:
        """Remember the current end of the log as a point no turn spans (for snapshots)."""
        self.boundary_offset = self.log.offset
        self.boundary_seq = self.state.last_seq
        self.boundary_items = list(self.history.items)  # references only: cheap

    def close(self) -> None:
        """Fsync and close the log and release the lock."""
        try:
            self.log.close()
        finally:
            if self.lock is not None:
                self.lock.release()
                self.lock = None


def _replay_history(path: Path, state: SessionState) -> HistoryBuilder:
    if state.persistence == "metadata":
        return HistoryBuilder()
    return build_history(scan_log(path).events)


class SessionManager:
    """Creates, opens, saves, lists and deletes the sessions of one project."""

    def __init__(self, workspace_root: Path, *, home: Path | None = None) -> None:
        self.workspace_root = workspace_root.resolve()
        self.home = home if home is not None else storage_root()
        self.project_dir = self.home / "projects" / project_dir_name(self.workspace_root)
        self.sessions_dir = self.project_dir / "sessions"
        self.checkpoints_dir = self.project_dir / "checkpoints"
        self.blobs_dir = self.project_dir / "blobs"

    # -- paths ---------------------------------------------------------------

    def ensure_dirs(self) -> None:
        """Create the project directories (0700), refusing symlinks."""
        for directory in (self.home, self.home / "projects", self.project_dir, self.sessions_dir):
            ensure_private_dir(directory)

    def check_store_dirs(self) -> None:
        """Raise StorageError if a store directory is a symlink: nothing is read through it."""
        for directory in (self.home, self.home / "projects", self.project_dir, self.sessions_dir):
            try:
                st = os.lstat(directory)
            except FileNotFoundError:
                return
            except OSError as exc:
                raise StorageError(f"cannot use {directory}: {exc.strerror or exc}") from None
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
                raise StorageError(f"{directory} is not a plain directory; refusing to use it")

    def _checked(self, session_id: str) -> str:
        if not is_valid_session_id(session_id):
            raise SessionNotFoundError(f"invalid session id {session_id!r}")
        return session_id

    def log_path(self, session_id: str) -> Path:
        """Return `sessions/<id>.events.jsonl`."""
        return self.sessions_dir / f"{self._checked(session_id)}.events.jsonl"

    def snapshot_path(self, session_id: str) -> Path:
        """Return `sessions/<id>.json`."""
        return self.sessions_dir / f"{self._checked(session_id)}.json"

    def lock_path(self, session_id: str) -> Path:
        """Return `sessions/<id>.lock`."""
        return self.sessions_dir / f"{self._checked(session_id)}.lock"

    def pointer_path(self, instance_id: str) -> Path:
        """Return `sessions/active_<instanceId>.json`."""
        if not is_valid_instance_id(instance_id):
            raise SessionError(f"invalid instance id {instance_id!r}")
        return self.sessions_dir / f"active_{instance_id}.json"

    def new_session_id(self) -> str:
        """Return a fresh random 12-hex id not used in this project."""
        while True:
            candidate = secrets.token_hex(6)
            if not self.log_path(candidate).exists() and not self.snapshot_path(candidate).exists():
                return candidate

    def exists(self, session_id: str) -> bool:
        """Return True if the session has a log or a snapshot."""
        return self.log_path(session_id).exists() or self.snapshot_path(session_id).exists()

    # -- pointers --------------------------------------------------------------

    def read_pointer(self, instance_id: str, warnings: list[str] | None = None) -> str | None:
        """Return the session id this instance last used, or None (tampering → warning)."""
        path = self.pointer_path(instance_id)
        try:
            self.check_store_dirs()
        except StorageError as exc:
            _warn(warnings, f"{path}: ignored ({exc})")
            return None
        try:
            raw = read_json_file(path, max_bytes=64 * 1024)
        except FileNotFoundError:
            return None
        except ValueError as exc:
            _warn(warnings, f"{path}: ignored ({exc})")
            return None
        session_id = raw.get("sessionId") if isinstance(raw, dict) else None
        if not is_valid_session_id(session_id):
            _warn(warnings, f"{path}: ignored (no valid sessionId)")
            return None
        assert isinstance(session_id, str)
        if not self.exists(session_id):
            _warn(warnings, f"{path}: points to session {session_id}, which no longer exists")
            return None
        return session_id

    def write_pointer(self, instance_id: str, session_id: str) -> None:
        """Point this editor instance at `session_id`."""
        self.ensure_dirs()
        atomic_write_json(
            self.pointer_path(instance_id),
            {"sessionId": self._checked(session_id), "updatedAt": utcnow().isoformat()},
        )

    def delete_pointer(self, instance_id: str) -> None:
        """Remove this instance's pointer."""
        if unlink_quiet(self.pointer_path(instance_id)):
            fsync_dir(self.sessions_dir)

    # -- snapshots -------------------------------------------------------------

    def read_snapshot(
        self, session_id: str, warnings: list[str] | None = None
    ) -> tuple[SessionState | None, str | None]:
        """Read and migrate a snapshot: (state or None, read-only reason or None)."""
        path = self.snapshot_path(session_id)
        try:
            self.check_store_dirs()
        except StorageError as exc:
            _warn(warnings, f"{path}: snapshot ignored ({exc})")
            return None, None
        try:
            raw = read_json_file(path)
        except FileNotFoundError:
            return None, None
        except ValueError as exc:
            _warn(warnings, f"{path}: snapshot ignored ({exc}); rebuilding from the log")
            return None, None
        if not isinstance(raw, dict):
            _warn(warnings, f"{path}: snapshot ignored (not a JSON object)")
            return None, None
        read_only: str | None = None
        try:
            data, _version = migrate_snapshot(raw)
        except FutureSchemaError as exc:
            read_only = f"{path.name}: {exc}"
            data = {**raw, "schema_version": raw["schema_version"]}
        except ValueError as exc:
            _warn(warnings, f"{path}: snapshot ignored ({exc})")
            return None, None
        try:
            state = SessionState.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            _warn(warnings, f"{path}: snapshot ignored ({where}: {first['msg']})")
            return None, read_only
        if state.session_id != session_id:
            _warn(warnings, f"{path}: snapshot ignored (it names session {state.session_id})")
            return None, read_only
        return state, read_only

    def write_snapshot(self, session: Session, redactor: Redactor | None = None) -> Path:
        """Write the session's snapshot atomically, at the last turn boundary of its log."""
        if session.read_only:
            raise ReadOnlySessionError(f"session is read-only: {session.read_only_reason}")
        self.ensure_dirs()
        state = session.state.model_copy()
        state.log_offset = session.boundary_offset
        state.last_seq = session.boundary_seq
        state.recent_messages = (
            []
            if state.persistence == "metadata"
            else tail_of(session.boundary_items, session.history_tokens)
        )
        payload = state.model_dump(mode="json")
        scrubber = redactor or session.log.redactor
        for key in (
            "summary",
            "decisions",
            "recent_messages",
            "compacted_history_summary",
            "title",
        ):
            payload[key] = scrubber.scrub({key: payload[key]})[key]
        path = self.snapshot_path(state.session_id)
        atomic_write_json(path, payload)
        return path

    # -- open / create ------------------------------------------------------------

    def acquire_lock(self, session_id: str) -> filelock.BaseFileLock:
        """Take the advisory writer lock of a session, or raise SessionLockedError."""
        self.ensure_dirs()
        lock = filelock.FileLock(str(self.lock_path(session_id)), timeout=0, mode=0o600)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise SessionLockedError(
                f"session {session_id} is in use by another editor window or process"
            ) from None
        except OSError as exc:
            cls = StoreNotWritableError if exc.errno in UNWRITABLE_ERRNOS else SessionError
            raise cls(
                f"cannot lock session {session_id} ({self.lock_path(session_id)}): "
                f"{exc.strerror or exc}",
                errno=exc.errno,
            ) from None
        return lock

    def detached_session(
        self, reason: str, *, instance_id: str | None, persistence: Persistence, redactor: Redactor
    ) -> Session:
        """Return a new session that is never written (the store refused): no files."""
        state = SessionState(
            session_id=self.new_session_id(),
            instance_id=instance_id,
            workspace_root=str(self.workspace_root),
            persistence=persistence,
        )
        log = EventLog(self.log_path(state.session_id), redactor=redactor, read_only=True)
        return Session(state, log, HistoryBuilder(), None, read_only_reason=reason)

    def create_session(
        self,
        *,
        instance_id: str | None = None,
        persistence: Persistence = "full",
        redactor: Redactor | None = None,
        session_id: str | None = None,
        parent_session_id: str | None = None,
        fork_boundary: int | None = None,
        write_start: bool = True,
    ) -> Session:
        """Create a new session (locked); its log starts with `session/start`."""
        self.ensure_dirs()
        session_id = session_id or self.new_session_id()
        lock = self.acquire_lock(session_id)
        redactor = redactor or Redactor(metadata_only=persistence == "metadata")
        state = SessionState(
            session_id=session_id,
            instance_id=instance_id,
            workspace_root=str(self.workspace_root),
            persistence=persistence,
            parent_session_id=parent_session_id,
            fork_boundary=fork_boundary,
        )
        session = Session(
            state, EventLog(self.log_path(session_id), redactor=redactor), HistoryBuilder(), lock
        )
        if write_start:
            self.start_log(session)
        return session

    def start_log(self, session: Session) -> None:
        """Write the `session/start` event if the log is still empty."""
        if session.log.next_seq == 0:
            state = session.state
            session.append(
                "session/start",
                {
                    "session_id": state.session_id,
                    "parent_session_id": state.parent_session_id,
                    "fork_boundary": state.fork_boundary,
                    "instance_id": state.instance_id,
                    "workspace_root": state.workspace_root,
                    "persistence": state.persistence,
                    "manifest": state.file_manifest,
                },
            )

    def open_session(
        self,
        session_id: str,
        *,
        redactor: Redactor | None = None,
        read_only: bool = False,
    ) -> Session:
        """Open a session: snapshot + log tail (whole log only when the snapshot is stale)."""
        self._checked(session_id)
        self.check_store_dirs()
        if not self.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id} in this project")
        lock = None if read_only else self.acquire_lock(session_id)
        try:
            return self._open_locked(session_id, lock, redactor, read_only)
        except BaseException:
            if lock is not None:
                lock.release()
            raise

    def _open_locked(
        self,
        session_id: str,
        lock: filelock.BaseFileLock | None,
        redactor: Redactor | None,
        read_only: bool,
    ) -> Session:
        warnings: list[str] = []
        state, read_only_reason = self.read_snapshot(session_id, warnings)
        log_path = self.log_path(session_id)
        scan: LogScan | None = None
        builder: HistoryBuilder | None = None
        if state is not None and log_path.exists() and _snapshot_matches_log(log_path, state):
            scan = scan_log(log_path, state.log_offset, state.last_seq + 1)
            builder = HistoryBuilder.from_snapshot(
                [] if state.persistence == "metadata" else state.recent_messages, state.last_seq
            )
            try:
                for event in scan.events:
                    builder.apply(event)
            except ReplayRequiredError:
                builder = None
            for event in scan.events:
                apply_event_to_state(state, event)
        if builder is None or scan is None:
            full = scan_log(log_path)
            if full.events:
                rebuilt = state_from_events(session_id, full.events)
                if state is not None:  # keep what only the snapshot knows
                    rebuilt.file_manifest = state.file_manifest or rebuilt.file_manifest
                    rebuilt.file_stats = state.file_stats
                    rebuilt.dir_stats = state.dir_stats
                    rebuilt.tracked_patterns = state.tracked_patterns
                    rebuilt.manifest_recorded_ns = state.manifest_recorded_ns
                    rebuilt.agent_spec_path = state.agent_spec_path
                    rebuilt.instance_id = state.instance_id
                    rebuilt.workspace_root = state.workspace_root
                    rebuilt.created_at = min(rebuilt.created_at, state.created_at)
                elif log_path.exists():
                    warnings.append(f"{session_id}: no usable snapshot; rebuilt from the log")
                state = rebuilt
                builder = build_history(full.events)
                if state.persistence == "metadata":
                    builder = HistoryBuilder(open_turn=builder.open_turn)
            elif state is not None:
                if state.last_seq >= 0:
                    warnings.append(
                        f"{session_id}: the event log is missing; continuing from the snapshot"
                    )
                builder = HistoryBuilder.from_snapshot(state.recent_messages, -1)
                state.last_seq = -1
            else:
                raise SessionNotFoundError(f"session {session_id} has no readable data")
            scan = full
        assert state is not None
        warnings.extend(p.message for p in scan.problems)
        read_only_reason = read_only_reason or scan.read_only_reason
        if read_only_reason is not None:
            warnings.append(f"session {session_id} opened read-only: {read_only_reason}")
        elif read_only:
            read_only_reason = "opened read-only"
        # The session's own mode, recorded when it started, whatever this process is set to.
        metadata = state.persistence == "metadata"
        redactor = (redactor or Redactor()).with_mode(metadata)
        if metadata:  # its log holds placeholders, never conversation: nothing to send
            builder = HistoryBuilder(base_seq=state.last_seq, open_turn=builder.open_turn)
        log = EventLog.for_scan(log_path, scan, redactor=redactor)
        log.read_only = read_only_reason is not None
        if scan.last_seq is None:
            log.next_seq = state.last_seq + 1
        log.offset = scan.end_offset if scan.events else log.offset
        session = Session(state, log, builder, lock, read_only_reason, warnings)
        if builder.open_turn is None:
            session.mark_boundary()
        else:
            session.boundary_offset = state.log_offset
            session.boundary_seq = state.last_seq
        if builder.open_turn is not None and not session.read_only:
            # The process that wrote this turn died: close it honestly.
            session.append(
                "turn/end",
                {"reason": "interrupted", "synthesized": True},
                turn=builder.open_turn,
            )
            warnings.append(f"turn {state.turns} was interrupted and is marked as such")
        if not session.read_only and log.next_seq == 0:
            self.start_log(session)
        for message in warnings:
            logger.warning("%s", message)
        return session

    def read_events(self, session_id: str) -> LogScan:
        """Read a session's whole log (for transcripts, search, fork)."""
        self.check_store_dirs()
        return scan_log(self.log_path(session_id))

    def save(self, session: Session) -> Path:
        """Fsync the log and write the snapshot."""
        session.log.sync()
        return self.write_snapshot(session)

    # -- listing / deleting -----------------------------------------------------------

    def session_ids(self) -> Iterator[str]:
        """Yield the ids of every session in this project (from file names)."""
        if not self.sessions_dir.is_dir():
            return
        try:
            self.check_store_dirs()
        except StorageError as exc:
            logger.warning("%s: sessions not listed (%s)", self.sessions_dir, exc)
            return
        seen: set[str] = set()
        for entry in os.scandir(self.sessions_dir):
            name = entry.name
            for suffix in (".events.jsonl", ".json"):
                if name.endswith(suffix):
                    candidate = name[: -len(suffix)]
                    if is_valid_session_id(candidate) and candidate not in seen:
                        seen.add(candidate)
                        yield candidate

    def last_event_time(self, session_id: str) -> datetime | None:
        """Return the time of the log's last recorded event (recovery markers aside).

        Reads only the end of the log: the snapshot's time is stale after a crash.
        """
        path = self.log_path(session_id)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None
            start = max(0, st.st_size - LAST_EVENT_WINDOW)
            fh.seek(start)
            lines = fh.read(LAST_EVENT_WINDOW).split(b"\n")
        for line in reversed(lines[1:] if start else lines):  # the first may be cut
            try:
                record = orjson.loads(line)
                data = record.get("data") or {}
                if record.get("type") == "session/recover" or data.get("synthesized"):
                    continue
                moment = datetime.fromisoformat(str(record["ts"]))
            except (ValueError, TypeError, KeyError, AttributeError, orjson.JSONDecodeError):
                continue
            return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        return None

    def list_sessions(self) -> list[SessionInfo]:
        """List sessions newest first (snapshot metadata; the log only if no snapshot)."""
        infos: list[SessionInfo] = []
        for session_id in self.session_ids():
            state, _ = self.read_snapshot(session_id)
            if state is None:
                scan = scan_log(self.log_path(session_id))
                if not scan.events:
                    continue
                state = state_from_events(session_id, scan.events)
            else:
                updated = _log_mtime(self.log_path(session_id))
                if updated is not None and updated > state.updated_at:
                    state.updated_at = updated
            summary_line = (state.summary or "").strip().split("\n")[0][:TITLE_CHARS]
            title = state.title or summary_line or None
            infos.append(
                SessionInfo(
                    session_id,
                    title,
                    state.created_at,
                    state.updated_at,
                    state.turns,
                    state.parent_session_id,
                    state.phase,
                )
            )
        infos.sort(key=lambda i: i.updated_at, reverse=True)
        return infos

    def delete_session(self, session_id: str) -> list[Path]:
        """Delete a session's log, snapshot, lock and checkpoints; return what was removed."""
        removed = []
        for path in (self.log_path(session_id), self.snapshot_path(session_id)):
            if unlink_quiet(path):
                removed.append(path)
        checkpoints = self.checkpoints_dir / self._checked(session_id)
        if checkpoints.is_dir() and not checkpoints.is_symlink():
            shutil.rmtree(checkpoints)
            removed.append(checkpoints)
        unlink_quiet(self.lock_path(session_id))
        fsync_dir(self.sessions_dir)
        return removed


def _warn(warnings: list[str] | None, message: str) -> None:
    logger.warning("%s", message)
    if warnings is not None:
        warnings.append(message)


def _snapshot_matches_log(path: Path, state: SessionState) -> bool:
    """Check cheaply that the line ending at `log_offset` is event `last_seq`."""
    if state.last_seq < 0:
        return state.log_offset == 0
    offset = state.log_offset
    back = 1 << 16
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size < offset or offset <= 0:
                return False
            while True:  # widen the window until it holds the whole last line
                back = min(back, offset)
                fh.seek(offset - back)
                window = fh.read(back)
                if not window.endswith(b"\n"):
                    return False
                start = window.rfind(b"\n", 0, len(window) - 1) + 1
                if start > 0 or back == offset:
                    break
                back *= 4
    except OSError:
        return False
    try:
        return parse_event_line(window[start:-1]).seq == state.last_seq
    except ValueError:
        return False


def _log_mtime(path: Path) -> datetime | None:
    try:
        st = path.stat()
    except OSError:
        return None
    from datetime import UTC

    return datetime.fromtimestamp(st.st_mtime, UTC)
