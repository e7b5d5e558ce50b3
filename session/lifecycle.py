"""SessionLifecycle: one editor instance's session, its transitions, autosave and resume."""

from __future__ import annotations

import hashlib
import logging
import shutil
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from .checkpoints import CheckpointRecord, CheckpointStore, RestorePlan, write_workspace_file
from .compaction import CompactionPlan, CompactionSummary, history_tokens, plan_compaction
from .context import build_resume_context, format_utc
from .derive import Message
from .manager import (
    DEFAULT_HISTORY_TOKENS,
    UNWRITABLE_ERRNOS,
    Session,
    SessionError,
    SessionLockedError,
    SessionManager,
    SessionNotFoundError,
)
from .models import EndReason, Event, Persistence
from .redaction import Redactor
from .storage import StorageError
from .summary import SummaryPlan, clip_words, extractive_session_summary, plan_summary
from .workspace import (
    DEFAULT_TRACKED,
    DriftReport,
    Manifest,
    TrackedPatterns,
    build_file_manifest,
    compare_manifests,
    detect_file_drift,
    is_safe_relative_path,
)

logger = logging.getLogger(__name__)

AGENT_SPEC_FILE = "agent_spec.md"
PHASES = ("design", "code", "deploy")
TEMPLATES_DIR = "templates"


@dataclass(frozen=True)
class LifecycleConfig:
    """What the lifecycle needs to know about the user's settings."""

    tracked: tuple[str, ...] = DEFAULT_TRACKED
    persistence: Persistence = "full"
    secrets: tuple[str, ...] = ()
    history_tokens: int = DEFAULT_HISTORY_TOKENS


@dataclass(frozen=True)
class PreviousSession:
    """The session this editor instance used last, offered for resume."""

    session_id: str
    last_active: datetime
    turns: int
    title: str | None

    def prompt(self) -> str:
        """Return the resume question, as the seed asks it."""
        return (
            f"Previous session found (last active: {format_utc(self.last_active)})\n"
            "Resume previous session?"
        )


@dataclass(frozen=True)
class SaveResult:
    """What an explicit save did."""

    session_id: str
    checkpoint: int
    saved_at: datetime
    path: Path


@dataclass(frozen=True)
class ResetResult:
    """What a reset did."""

    old_session_id: str
    session_id: str
    deleted_files: list[str] = field(default_factory=list)


class SessionLifecycle:
    """Holds the session of one editor instance and enforces the seed's transitions."""

    def __init__(
        self,
        manager: SessionManager,
        instance_id: str,
        config: LifecycleConfig | None = None,
    ) -> None:
        self.manager = manager
        self.instance_id = instance_id
        self.config = config or LifecycleConfig()
        self.patterns = TrackedPatterns(self.config.tracked)
        self.redactor = Redactor(
            self.config.secrets, metadata_only=self.config.persistence == "metadata"
        )
        self.session: Session | None = None
        self.resumed = False
        self.resume_context = ""
        self.session_deleted = False
        self.last_drift: DriftReport | None = None
        self.last_active: datetime | None = None  # of the resumed session, before this process
        self.warnings: list[str] = []
        self.assistant_paths: set[str] = set()
        self._manifest: Manifest | None = None
        self.pending_drift: list[DriftReport] = []
        self._pointer_current = False
        self._headers_sent: set[str] = set()
        self._turn_wrote = False
        self.checkpoints = CheckpointStore(manager)
        # Set while the store refuses writes (read-only, permissions): the session is open
        # read-only and `ensure_writable` takes it back for writing once the store allows it.
        self.store_fault: str | None = None
        # Set by `close`: the process is stopping, and nothing may open a session again
        # (a late event from a cancelled turn must not create a fresh, empty one).
        self.stopped = False

    # -- state -------------------------------------------------------------------

    @property
    def workspace_root(self) -> Path:
        """Return the project root."""
        return self.manager.workspace_root

    @property
    def current(self) -> Session:
        """Return the open session (starting a fresh one if none is open)."""
        if self.session is None:
            self.start_fresh()
        assert self.session is not None
        return self.session

    @property
    def session_id(self) -> str:
        """Return the id of the current session."""
        return self.current.session_id

    def message_history(self) -> list[Message]:
        """Return the message history the model is sent (pydantic-ai JSON form)."""
        return self.current.history.messages(self.config.history_tokens)

    # -- launch ------------------------------------------------------------------------

    def find_previous(self) -> PreviousSession | None:
        """Return this instance's previous session if its pointer names a loadable one."""
        session_id = self.manager.read_pointer(self.instance_id, self.warnings)
        if session_id is None:
            return None
        state, _ = self.manager.read_snapshot(session_id, self.warnings)
        last_active = self.manager.last_event_time(session_id)
        if state is None:
            scan = self.manager.read_events(session_id)
            if not scan.events:
                return None
            return PreviousSession(session_id, last_active or scan.events[-1].ts, 0, None)
        return PreviousSession(
            session_id, last_active or state.updated_at, state.turns, state.title
        )

    def start_fresh(self) -> Session:
        """Start a new session with a random id (its files appear at the first event)."""
        self._refuse_if_stopped()
        self._close_current(autosave=True)
        try:
            self.session = self.manager.create_session(
                instance_id=self.instance_id,
                persistence=self.config.persistence,
                redactor=self.redactor,
                write_start=False,
            )
            self.store_fault = None
        except (SessionError, StorageError) as exc:
            if exc.errno not in UNWRITABLE_ERRNOS:
                raise
            reason = self._store_refused(exc, "a new session is shown but")
            self.session = self.manager.detached_session(
                reason,
                instance_id=self.instance_id,
                persistence=self.config.persistence,
                redactor=self.redactor,
            )
        self.session.history_tokens = self.config.history_tokens
        self.resumed = False
        self.resume_context = ""
        self._pointer_current = False
        self._headers_sent.clear()
        self._manifest = build_file_manifest(
            self.workspace_root, self.patterns, extra=self.assistant_paths
        )
        # The baseline for drift, also written into `session/start` so a crash before the
        # first snapshot does not lose it.
        state = self.session.state
        state.file_manifest = dict(self._manifest.files)
        state.file_stats = dict(self._manifest.stats)
        state.dir_stats = dict(self._manifest.dirs)
        state.tracked_patterns = list(self._manifest.patterns)
        state.manifest_recorded_ns = self._manifest.recorded_ns
        return self.session

    def resume(self, session_id: str) -> DriftReport:
        """Carry a previous session forward: same id, drift checked, context injected."""
        self._refuse_if_stopped()
        # Before opening: opening may append recovery events (a crash's open turn closed).
        last_active = self.manager.last_event_time(session_id)
        try:
            session = self.manager.open_session(session_id, redactor=self.redactor)
            self.store_fault = None
        except (SessionError, StorageError) as exc:
            if exc.errno not in UNWRITABLE_ERRNOS:
                raise
            session = self.manager.open_session(session_id, redactor=self.redactor, read_only=True)
            session.read_only_reason = self._store_refused(exc, f"session {session_id} is open but")
        session.history_tokens = self.config.history_tokens
        self._close_current(autosave=True)
        self.session = session
        self.warnings.extend(session.warnings)
        mode = session.state.persistence
        if mode != self.config.persistence:
            self.warnings.append(
                f"session {session_id} keeps {mode} persistence, chosen when it started; "
                f"persistence {self.config.persistence!r} applies to new sessions"
            )
        self.resumed = True
        self.session_deleted = False
        self._headers_sent.clear()
        state = session.state
        previous = Manifest(
            dict(state.file_manifest),
            dict(state.file_stats),
            dict(state.dir_stats),
            state.manifest_recorded_ns,
            patterns=tuple(state.tracked_patterns),
        )
        self.assistant_paths |= {p for p in state.file_manifest if not self.patterns.matches(p)}
        drift, self._manifest = detect_file_drift(
            self.workspace_root, state.file_manifest, self.patterns, previous
        )
        for path in drift.unsafe:
            self.warnings.append(f"session {session_id}: unsafe manifest path skipped: {path!r}")
        self.last_drift = drift
        # Before the drift event. Turns the running summary never reached (the process
        # ended first) get an extractive one here; the model's follows in the background.
        self.last_active = last_active or state.updated_at
        self.resume_context = build_resume_context(
            state, drift, self._uncovered_summary(), self.last_active
        )
        if drift.has_drift and not session.read_only:
            self._record_drift(drift, "resume")
        self._pointer_current = False
        if not session.read_only:
            self.manager.write_pointer(self.instance_id, session_id)
            self._pointer_current = True
        return drift

    def _uncovered_summary(self) -> str | None:
        plan = self.plan_summary()
        if plan is None:
            return None
        return extractive_session_summary(plan, self.current.state.decisions).summary

    def _refuse_if_stopped(self) -> None:
        if self.stopped:
            raise SessionError("the session is closed: the server is stopping")

    def _store_refused(self, exc: SessionError | StorageError, what: str) -> str:
        """Remember that the store refuses writes; warn; return the read-only reason."""
        self.store_fault = f"the session store {self.manager.home} is not writable ({exc})"
        self.warnings.append(
            f"{self.store_fault}: {what} nothing new can be recorded until it is writable again"
        )
        return self.store_fault

    def ensure_writable(self) -> None:
        """After a store fault, take the session back for writing; raise if still refused."""
        if self.store_fault is None or self.session is None:
            return
        old = self.session
        try:
            if self.manager.exists(old.session_id):
                session = self.manager.open_session(old.session_id, redactor=self.redactor)
            else:  # a fresh session nothing was written for yet: same id, same baseline
                session = self.manager.create_session(
                    instance_id=self.instance_id,
                    persistence=self.config.persistence,
                    redactor=self.redactor,
                    session_id=old.session_id,
                    write_start=False,
                )
                session.state = old.state
        except (SessionError, StorageError) as exc:
            if exc.errno in UNWRITABLE_ERRNOS:
                raise SessionError(
                    f"the session store {self.manager.home} is still not writable ({exc})",
                    errno=exc.errno,
                ) from None
            raise
        old.close()
        session.history_tokens = self.config.history_tokens
        self.session = session
        self.store_fault = None
        self.warnings.extend(session.warnings)
        if self.resumed:
            if self.last_drift is not None and self.last_drift.has_drift:
                self._record_drift(self.last_drift, "resume")  # not recorded while refused
            self.manager.write_pointer(self.instance_id, session.session_id)
            self._pointer_current = True

    def adopt(self, session: Session) -> None:
        """Make `session` (e.g. a fresh fork) this instance's current session."""
        self._refuse_if_stopped()
        self._close_current(autosave=True)
        session.history_tokens = self.config.history_tokens
        self.session = session
        self.resumed = False
        self.resume_context = ""
        self.session_deleted = False
        self.last_drift = None
        self._headers_sent.clear()
        self._manifest = build_file_manifest(
            self.workspace_root, self.patterns, extra=self.assistant_paths
        )
        self.manager.write_pointer(self.instance_id, session.session_id)
        self._pointer_current = True

    def resume_or_start(self, previous: PreviousSession | None, accept: bool) -> str:
        """Resume `previous` if accepted (falling back to a fresh session); return the reason."""
        if previous is not None and accept:
            try:
                self.resume(previous.session_id)
                return "resumed"
            except SessionLockedError as exc:
                self.warnings.append(f"{exc}; starting a new session instead")
            except (SessionNotFoundError, SessionError, StorageError) as exc:
                self.warnings.append(f"cannot resume session {previous.session_id}: {exc}")
        self.start_fresh()
        return "new"

    # -- turns -------------------------------------------------------------------------

    def begin_turn(self, text: str) -> TurnRecorder:
        """Open a turn for the user's `text`; every event of it goes to the log as it happens."""
        self.ensure_writable()
        session = self.current
        self._ensure_started()
        if session.open_turn is not None:
            # A turn whose end the disk refused to record (a full disk): close it first.
            session.append(
                "turn/end",
                {"reason": "interrupted", "error": "its end could not be recorded"},
                turn=session.open_turn,
            )
        number = session.state.turns + 1
        session.append("turn/start", {"input": text}, turn=number)
        return TurnRecorder(self, number)

    def _ensure_started(self) -> None:
        session = self.current
        if session.log.next_seq == 0:
            self.manager.start_log(session)

    def _turn_completed(self) -> None:
        # The first successful reply after a reset re-enables autosave.
        self.session_deleted = False
        if not self._pointer_current:
            self.manager.write_pointer(self.instance_id, self.session_id)
            self._pointer_current = True
        if self._turn_wrote:  # the assistant changed files: make this state restorable
            self._turn_wrote = False
            self._checkpoint(auto=True, title=f"After turn {self.current.state.turns}")

    def record_decision(self, text: str) -> Event:
        """Record a key decision (it joins the snapshot's `decisions`)."""
        self._ensure_started()
        return self.current.append("session/decision", {"text": text})

    def set_phase(self, phase: str | None) -> Event:
        """Record a change of conversation phase (`design`, `code`, `deploy` or None)."""
        if phase is not None and phase not in PHASES:
            raise ValueError(f"phase must be one of {', '.join(PHASES)} (or none), not {phase!r}")
        self._ensure_started()
        return self.current.append("session/phase", {"phase": phase})

    # -- drift -------------------------------------------------------------------------

    def _record_drift(self, drift: DriftReport, source: str) -> Event:
        self._ensure_started()
        return self.current.append(
            "workspace/drift",
            {
                "source": source,
                "modified": drift.modified,
                "deleted": drift.deleted,
                "created": drift.created,
                "unchanged": drift.unchanged,
            },
        )

    def note_assistant_file(self, relative: str) -> None:
        """Track a file the assistant read or wrote; its current content is not drift."""
        if not is_safe_relative_path(self.workspace_root, relative):
            return
        self.assistant_paths.add(relative)
        fresh = build_file_manifest(self.workspace_root, TrackedPatterns(()), extra=[relative])
        manifest = self._manifest if self._manifest is not None else Manifest()
        manifest.files.pop(relative, None)
        manifest.stats.pop(relative, None)
        manifest.files.update(fresh.files)
        manifest.stats.update(fresh.stats)
        self._manifest = manifest

    def note_assistant_write(self, relative: str, content: bytes) -> None:
        """Record that the assistant wrote `content` (maybe unsaved in an editor): not drift."""
        if not is_safe_relative_path(self.workspace_root, relative):
            return
        self.assistant_paths.add(relative)
        self._turn_wrote = True
        manifest = self._manifest if self._manifest is not None else Manifest()
        manifest.files[relative] = hashlib.sha256(content).hexdigest()
        manifest.stats.pop(relative, None)  # no stat shortcut: the next check hashes it
        self._manifest = manifest

    def take_drift_note(self) -> str | None:
        """Return (once) a note for the model about files changed outside the assistant."""
        if not self.pending_drift:
            return None
        modified: dict[str, str] = {}
        for report in self.pending_drift:
            for path in report.modified:
                modified[path] = "modified"
            for path in report.deleted:
                modified[path] = "deleted"
            for path in report.created:
                modified[path] = "created"
        self.pending_drift = []
        lines = [f"- {path}: {what}" for path, what in sorted(modified.items())]
        return (
            "[workspace notice] These files were changed outside the assistant since your "
            "last reply:\n" + "\n".join(lines) + "\nEarlier tool results for these files "
            "are stale; read them again before relying on their content."
        )

    def check_live_drift(self, paths: list[str]) -> DriftReport | None:
        """Compare changed `paths` with the manifest; record and return real drift."""
        base = self._manifest if self._manifest is not None else Manifest()
        relevant = [
            p
            for p in dict.fromkeys(paths)
            if is_safe_relative_path(self.workspace_root, p)
            and (p in base.files or p in self.assistant_paths or self.patterns.matches(p))
        ]
        if not relevant:
            return None
        old = {p: base.files[p] for p in relevant if p in base.files}
        fresh = build_file_manifest(self.workspace_root, TrackedPatterns(()), extra=relevant)
        report = compare_manifests(
            old, fresh, TrackedPatterns((*self.patterns.patterns, *relevant))
        )
        for p in relevant:
            base.files.pop(p, None)
            base.stats.pop(p, None)
        base.files.update(fresh.files)
        base.stats.update(fresh.stats)
        self._manifest = base
        if not report.has_drift:
            return None
        report.unchanged = len(base.files) - len(report.modified) - len(report.created)
        if not self.current.read_only:
            self._record_drift(report, "watcher")
        self.pending_drift.append(report)
        return report

    # -- save / reset / exit ----------------------------------------------------------

    def _refresh_workspace_state(self) -> None:
        state = self.current.state
        spec = self.workspace_root / AGENT_SPEC_FILE
        state.agent_spec_path = (
            AGENT_SPEC_FILE if spec.is_file() and not spec.is_symlink() else None
        )
        extra = set(self.assistant_paths) | set(state.file_manifest)
        manifest = build_file_manifest(
            self.workspace_root, self.patterns, extra=extra, previous=self._manifest
        )
        self._manifest = manifest
        state.file_manifest = dict(manifest.files)
        state.file_stats = dict(manifest.stats)
        state.dir_stats = dict(manifest.dirs)
        state.tracked_patterns = list(manifest.patterns)
        state.manifest_recorded_ns = manifest.recorded_ns

    def explicit_save(self) -> SaveResult:
        """`/save`: refresh spec path and manifest, record a checkpoint, write, move pointer."""
        self.ensure_writable()
        session = self.current
        record = self._checkpoint(auto=False, title=self._checkpoint_title())
        path = self.manager.save(session)
        self.manager.write_pointer(self.instance_id, session.session_id)
        self._pointer_current = True
        self.session_deleted = False
        return SaveResult(session.session_id, record.number, record.created_at, path)

    def _checkpoint_title(self) -> str:
        title = self.current.state.title
        turns = self.current.state.turns
        if not turns:
            return "Session start"
        return f"Turn {turns}: {title}" if title else f"Turn {turns}"

    def _checkpoint(self, *, auto: bool, title: str) -> CheckpointRecord:
        """Record a numbered checkpoint: a `session/save` event plus copies of tracked files."""
        session = self.current
        self._ensure_started()
        self._refresh_workspace_state()
        number = session.state.checkpoint_count + 1
        files = dict(session.state.file_manifest)
        event = session.append(
            "session/save", {"checkpoint": number, "manifest": files, "auto": auto}
        )
        if session.state.persistence == "metadata":
            files = {}  # no copies of anything in metadata mode: hashes only
        return self.checkpoints.create(
            session.session_id,
            number,
            seq=event.seq,
            turn=session.state.turns,
            title=session.log.redactor.scrub({"title": title})["title"],
            files=files,
            auto=auto,
            redactor=self.redactor,
        )

    def plan_compaction(
        self, keep_tokens: int, *, open_turn: bool = False, force: bool = False
    ) -> CompactionPlan | None:
        """Choose the turns a compaction would summarise (None: nothing to compact)."""
        return plan_compaction(self.current.history, keep_tokens, open_turn=open_turn, force=force)

    def plan_summary(self) -> SummaryPlan | None:
        """Return what the running summary should cover next (None: nothing, or not kept)."""
        session = self.session
        if session is None or session.read_only or session.state.persistence == "metadata":
            return None
        return plan_summary(session.history, session.state)

    def record_summary(
        self, plan: SummaryPlan, summary: CompactionSummary, *, fallback: bool
    ) -> Event:
        """Record `session/summary`; a resumed session's context block shows it from now on."""
        event = self.current.append(
            "session/summary",
            {
                "summary": clip_words(summary.summary),
                "decisions": list(summary.decisions),
                "covers_seq": plan.covers_seq,
                "turns": plan.turns,
                "fallback": fallback,
            },
        )
        if self.resumed and self.resume_context:
            self.resume_context = build_resume_context(
                self.current.state, self.last_drift, last_active=self.last_active
            )
        return event

    def set_history_budget(self, tokens: int) -> None:
        """Send at most `tokens` of history from now on (a smaller context window)."""
        self.config = replace(self.config, history_tokens=tokens)
        if self.session is not None:
            self.session.history_tokens = tokens

    def compact(
        self, plan: CompactionPlan, summary: CompactionSummary, *, fallback: bool
    ) -> tuple[int, int]:
        """Record `session/compact`; return (messages, tokens) of the history afterwards."""
        decisions = list(dict.fromkeys([*self.current.state.decisions, *summary.decisions]))
        self.current.append(
            "session/compact",
            {
                "summary": summary.summary,
                "decisions": decisions,
                "covers_seq": plan.covers_seq,
                "fallback": fallback,
            },
        )
        after = self.current.history.messages()
        return len(after), history_tokens(after)

    def list_checkpoints(self) -> list[CheckpointRecord]:
        """Return this session's checkpoints, oldest first."""
        return self.checkpoints.records(self.session_id, self.warnings)

    def plan_restore(
        self, number: int, open_documents: dict[str, bytes] | None = None
    ) -> RestorePlan:
        """Work out what restoring checkpoint `number` writes; raises if there is none.

        `open_documents` are editor buffers (maybe unsaved): their text, not the disk's,
        decides whether a file needs restoring.
        """
        record = self.checkpoints.load(self.session_id, number)
        if record is None:
            known = [r.number for r in self.list_checkpoints()]
            raise SessionError(
                f"no checkpoint {number} in session {self.session_id}"
                + (f" (it has {', '.join(map(str, known))})" if known else " (it has none)")
            )
        self._refresh_workspace_state()
        current = dict(self.current.state.file_manifest)
        for relative, data in (open_documents or {}).items():
            if relative in current or relative in record.files:
                current[relative] = hashlib.sha256(data).hexdigest()
        return self.checkpoints.plan_restore(record, current)

    def restore(self, plan: RestorePlan, applied: set[str] | None = None) -> list[str]:
        """Restore a planned checkpoint: save the present, write files, rewind the talk.

        `applied` are files the editor already wrote (through `workspace/applyEdit`); the
        rest are written here. Returns the restored paths.
        """
        session = self.current
        self._checkpoint(auto=True, title=f"Before restoring checkpoint {plan.record.number}")
        restored = []
        for relative, data in plan.writes:
            if applied is None or relative not in applied:
                write_workspace_file(self.workspace_root, relative, data)
            self.note_assistant_write(relative, data)
            restored.append(relative)
        self._turn_wrote = False
        session.append(
            "session/rewind", {"to_seq": plan.record.seq, "checkpoint": plan.record.number}
        )
        return restored

    def snapshot_and_save(self) -> bool:
        """Autosave on exit: skipped after a reset with nothing since; True if written."""
        if self.session is None or self.session_deleted or self.session.read_only:
            return False
        if self.session.log.next_seq == 0 and not self.resumed:
            return False  # nothing was ever recorded: leaving creates no session
        self._ensure_started()
        self._refresh_workspace_state()
        self.manager.save(self.session)
        self.manager.write_pointer(self.instance_id, self.session.session_id)
        self._pointer_current = True
        return True

    def new_session(self) -> tuple[str, str]:
        """Start a fresh session; the current one is saved and stays whole on disk.

        Return (previous id, new id). The pointer moves at the new session's first
        completed turn or save, as after declining a resume.
        """
        previous = self.current.session_id
        self.start_fresh()
        self.session_deleted = False
        return previous, self.session_id

    def reset_targets(self) -> list[str]:
        """Return the spec file / template dir that exist (the caller confirms deleting them)."""
        return [
            name
            for name in (AGENT_SPEC_FILE, TEMPLATES_DIR)
            if (self.workspace_root / name).exists() or (self.workspace_root / name).is_symlink()
        ]

    def reset(self, delete_files: bool = False) -> ResetResult:
        """`/reset`: new id, session files and pointer deleted, context cleared, autosave off."""
        old = self.current
        old_id = old.session_id
        deleted: list[str] = []
        if delete_files:
            deleted = self._delete_workspace_targets()
        old.close()
        self.session = None
        self.manager.delete_session(old_id)
        self.checkpoints.collect_garbage()  # blobs only the deleted checkpoints used
        self.manager.delete_pointer(self.instance_id)
        self.assistant_paths.clear()
        self.start_fresh()
        self.resume_context = ""
        self.last_drift = None
        self.session_deleted = True
        return ResetResult(old_id, self.session_id, deleted)

    def _delete_workspace_targets(self) -> list[str]:
        deleted = []
        for name in self.reset_targets():
            target = self.workspace_root / name
            try:
                if target.is_symlink() or target.is_file():
                    target.unlink()  # a symlink itself, never what it points to
                elif target.is_dir():
                    shutil.rmtree(target)
                else:
                    continue
            except OSError as exc:
                self.warnings.append(f"could not delete {name}: {exc.strerror or exc}")
                continue
            deleted.append(name)
        return deleted

    def close(self) -> bool:
        """Autosave (unless skipped) and release the session for good; True if saved."""
        self.stopped = True
        return self._close_current(autosave=True)

    def _close_current(self, *, autosave: bool) -> bool:
        saved = False
        if self.session is None:
            return False
        session = self.session
        try:
            if session.open_turn is not None and not session.read_only:
                # The process is stopping mid-turn: say so now rather than on the next start.
                session.append("turn/end", {"reason": "interrupted"}, turn=session.open_turn)
            if autosave:
                saved = self.snapshot_and_save()
        finally:
            self.session.close()
            if self.session.log.next_seq == 0 and not saved:
                # never used: leave no lock file behind
                self.manager.delete_session(self.session.session_id)
            self.session = None
        return saved


class TurnRecorder:
    """Writes the events of one turn, in order, as they happen."""

    def __init__(self, lifecycle: SessionLifecycle, number: int) -> None:
        self.lifecycle = lifecycle
        self.number = number
        self.step = 0
        self.closed = False
        self.attempt = 1  # of the current model request
        self.resending = False

    @property
    def _session(self) -> Session:
        return self.lifecycle.current

    def _append(self, type_: str, data: dict[str, Any]) -> Event:
        return self._session.append(type_, data, turn=self.number, step=self.step or None)

    def start_step(self, messages: list[Message]) -> Event:
        """Start a model request; `messages` are the new request messages it carries.

        After `retry_step` the first step resends the request already in the history, so
        it records no new messages.
        """
        self.step += 1
        if self.resending:
            self.resending = False
            return self._append("step/start", {"messages": [], "attempt": self.attempt})
        return self._append("step/start", {"messages": messages})

    def retry_step(self, kind: str, reason: str, delay: float, streamed: bool) -> Event:
        """Abandon the current step's answer; the next step resends its request."""
        event = self._append(
            "step/retry",
            {
                "attempt": self.attempt,
                "kind": kind,
                "reason": reason,
                "delay": round(delay, 3),
                "streamed": streamed,
            },
        )
        self.attempt += 1
        self.resending = self.step > 0  # else nothing was sent: the prompt goes out afresh
        return event

    def request_header(self, model: str, settings: dict[str, Any], system_prompt: str) -> Event:
        """Record the request's model, settings and system prompt (text once, then hash)."""
        digest = hashlib.sha256(system_prompt.encode()).hexdigest()
        seen = self.lifecycle._headers_sent
        data: dict[str, Any] = {
            "model": model,
            "settings": settings,
            "system_prompt_sha256": digest,
        }
        if digest not in seen:
            data["system_prompt"] = system_prompt
            seen.add(digest)
        return self._append("request/header", data)

    def chunk(self, delta: str) -> Event:
        """Record a streamed text delta."""
        return self._append("assistant/chunk", {"delta": delta})

    def assistant_message(self, message: Message) -> Event:
        """Record the complete model response (even if empty)."""
        return self._append("assistant/message", {"message": message})

    def tool_call(self, tool_call_id: str, name: str, args: Any) -> Event:
        """Record a tool call."""
        return self._append("tool/call", {"tool_call_id": tool_call_id, "name": name, "args": args})

    def tool_result(
        self, tool_call_id: str, name: str, content: Any, is_error: bool = False
    ) -> Event:
        """Record a tool's result."""
        return self._append(
            "tool/result",
            {"tool_call_id": tool_call_id, "name": name, "content": content, "is_error": is_error},
        )

    def end_step(self, usage: dict[str, Any] | None = None) -> Event:
        """Record the end of a model call."""
        return self._append("step/end", {"usage": usage or {}})

    def end(self, reason: EndReason, error: str | None = None) -> Event:
        """Close the turn (fsynced)."""
        if self.closed:
            raise SessionError(f"turn {self.number} is already closed")
        try:
            event = self._session.append(
                "turn/end", {"reason": reason, "error": error}, turn=self.number
            )
        finally:
            # Closed once its end is in the log; if the disk refused, the next turn closes it.
            self.closed = self._session.open_turn != self.number
        if reason == "completed":
            self.lifecycle._turn_completed()
        return event
