"""Which session one editor instance holds, and the seed's transitions between sessions.

Fresh (a random id, files at the first event), resume (same id, drift checked, context
built), decline, adopt (a fork), new, reset (the old session deleted, autosave off until
the next reply), autosave and close. A store that refuses writes leaves the session open
read-only until `ensure_writable` can take it back.
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..checkpoint_holding import PendingHolding
from ..context import build_resume_context, remembered
from ..derive.messages import Message
from ..errors import UNWRITABLE_ERRNOS, SessionError, SessionLockedError, SessionNotFoundError
from ..events import Event
from ..paths import host_name, scan_hint_path
from ..redaction import Redactor
from ..snapshot import record_manifest, recorded_manifest
from ..storage import StorageError
from ..store.backend import SessionStore
from ..store.session import Session
from ..summary import SummaryPlan, extractive_session_summary, plan_summary
from ..workspace.drift import DriftReport
from ..workspace.patterns import TrackedPatterns
from ..workspace.spec_files import agent_spec_path, delete_reset_targets, reset_targets
from ..workspace.tracker import WorkspaceTracker
from .previous import find_previous_session
from .values import LifecycleConfig, PreviousSession, ResetResult, StoreState

if TYPE_CHECKING:
    from .turns import TurnRecorder

logger = logging.getLogger(__name__)


class LifecycleTransitions:
    """Holds the session of one editor instance and enforces the seed's transitions."""

    def __init__(
        self,
        store: SessionStore,
        instance_id: str,
        config: LifecycleConfig | None = None,
    ) -> None:
        self.store = store
        self.instance_id = instance_id
        self.config = config or LifecycleConfig()
        self.tracker = WorkspaceTracker(
            store.workspace_root,
            TrackedPatterns(self.config.tracked),
            scan_hint_path(store.home, store.workspace_root),
        )
        self.redactor = Redactor(
            self.config.secrets, metadata_only=self.config.persistence == "metadata"
        )
        self.session: Session | None = None
        self.resumed = False
        self.resume_context = ""
        self.session_deleted = False
        self.last_drift: DriftReport | None = None
        self.pending_holding: PendingHolding | None = None  # for the resume's changed files
        self.last_active: datetime | None = None  # of the resumed session, before this process
        # The summary and key decisions the resume block gave the model (None: not resumed).
        self.resume_memory: tuple[str, list[str]] | None = None
        self.warnings: list[str] = []
        self._pointer_current = False
        self._headers_sent: set[str] = set()
        self._turn_wrote = False
        self._open_turn: TurnRecorder | None = None  # its held streamed text is kept on close
        self.checkpoints = store.checkpoint_store()
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
        return self.store.workspace_root

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

    def store_state(self) -> StoreState:
        """Say which store holds the sessions and whether it takes writes now."""
        log = self.session.log if self.session is not None else None
        pending = log.pending if log is not None else 0
        online = self.store_fault is None and (log is None or log.online)
        return StoreState(self.store.kind, self.store.label, online, pending)

    def message_history(self) -> list[Message]:
        """Return the message history the model is sent (pydantic-ai JSON form)."""
        return self.current.history.messages(self.config.history_tokens)

    # -- launch ------------------------------------------------------------------------

    def find_previous(self) -> PreviousSession | None:
        """Return this instance's previous session, or a shared store's latest (`previous.py`)."""
        return find_previous_session(
            self.store,
            self.instance_id,
            self.tracker,
            self.warnings,
            offer_unheld=self.config.offer_unheld,
            editor=self.config.editor,
        )

    def start_fresh(self) -> Session:
        """Start a new session with a random id (its files appear at the first event)."""
        self._refuse_if_stopped()
        self._close_current(autosave=True)
        try:
            self.session = self.store.create_session(
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
            self.session = self.store.detached_session(
                reason,
                instance_id=self.instance_id,
                persistence=self.config.persistence,
                redactor=self.redactor,
            )
        self.session.history_tokens = self.config.history_tokens
        self.resumed = False
        self.resume_context = ""
        self.resume_memory = None
        self._pointer_current = False
        self._headers_sent.clear()
        # The baseline for drift, also written into `session/start` so a crash before the
        # first snapshot does not lose it.
        record_manifest(self.session.state, self.tracker.baseline())
        return self.session

    def resume(self, session_id: str) -> DriftReport:
        """Carry a previous session forward: same id, drift checked, context injected."""
        self._refuse_if_stopped()
        # Before opening: opening may append recovery events (a crash's open turn closed),
        # and records this machine as the session's writer.
        last_active = self.store.last_event_time(session_id)
        written_on = self.store.session_host(session_id)
        try:
            session = self.store.open_session(session_id, redactor=self.redactor)
            self.store_fault = None
        except (SessionError, StorageError) as exc:
            if exc.errno not in UNWRITABLE_ERRNOS:
                raise
            session = self.store.open_session(session_id, redactor=self.redactor, read_only=True)
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
        baseline = state
        if written_on is not None and written_on != host_name():
            # Another machine's stats say nothing of these files: the first check hashes.
            baseline = state.model_copy(update={"stat_cache": None, "file_stats": {}})
        drift = self.tracker.resume(state.file_manifest, recorded_manifest(baseline))
        for path in drift.unsafe:
            self.warnings.append(f"session {session_id}: unsafe manifest path skipped: {path!r}")
        self.last_drift = drift
        changed = [*drift.modified, *drift.deleted]  # an editor asks about them at once
        self.pending_holding = self.checkpoints.holding_later(session_id, changed)
        # Before the drift event. Turns the running summary never reached (the process
        # ended first) get an extractive one here; the model's follows in the background.
        self.last_active = last_active or state.updated_at
        pending = self._uncovered_summary()
        self.resume_memory = remembered(state, pending)
        self.resume_context = build_resume_context(state, drift, pending, self.last_active)
        if drift.has_drift and not session.read_only:
            self._record_drift(drift, "resume")
        self._pointer_current = False
        if not session.read_only:
            self.store.write_pointer(self.instance_id, session_id, self.config.editor)
            self._pointer_current = True
        return drift

    def _uncovered_summary(self) -> str | None:
        plan = self.plan_summary()
        if plan is None:
            return None
        return extractive_session_summary(plan, self.current.state.decisions).summary

    def plan_summary(self) -> SummaryPlan | None:
        """Return what the running summary should cover next (None: nothing, or not kept)."""
        session = self.session
        if session is None or session.read_only or session.state.persistence == "metadata":
            return None
        return plan_summary(session.history, session.state)

    def _refuse_if_stopped(self) -> None:
        if self.stopped:
            raise SessionError("the session is closed: the server is stopping")

    def _store_refused(self, exc: SessionError | StorageError, what: str) -> str:
        """Remember that the store refuses writes; warn; return the read-only reason."""
        self.store_fault = f"the session store {self.store.label} is not writable ({exc})"
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
            if self.store.exists(old.session_id):
                session = self.store.open_session(old.session_id, redactor=self.redactor)
            else:  # a fresh session nothing was written for yet: same id, same baseline
                session = self.store.create_session(
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
                    f"the session store {self.store.label} is still not writable ({exc})",
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
            self.store.write_pointer(self.instance_id, session.session_id, self.config.editor)
            self._pointer_current = True

    def adopt(self, session: Session) -> None:
        """Make `session` (e.g. a fresh fork) this instance's current session."""
        self._refuse_if_stopped()
        self._close_current(autosave=True)
        session.history_tokens = self.config.history_tokens
        self.session = session
        self.resumed = False
        self.resume_context = ""  # the history goes on: the model needs no resume block
        # ...but what the session carries (its summary, decisions) is still worth showing.
        self.resume_memory = remembered(session.state) if session.state.turns else None
        self.session_deleted = False
        self.last_drift = None
        self._headers_sent.clear()
        self.tracker.baseline()
        self.store.write_pointer(self.instance_id, session.session_id, self.config.editor)
        self._pointer_current = True

    def resume_or_start(self, previous: PreviousSession | None, accept: bool) -> str:
        """Resume `previous` if accepted (falling back to a fresh session); return the reason."""
        if previous is not None and accept:
            try:
                if previous.source == "seed":  # copied into ours first (`seed_store`)
                    self.store.import_seed(previous.session_id, self.redactor)
                self.resume(previous.session_id)
                return "resumed"
            except SessionLockedError as exc:
                self.warnings.append(f"{exc}; starting a new session instead")
            except (SessionNotFoundError, SessionError, StorageError) as exc:
                self.warnings.append(f"cannot resume session {previous.session_id}: {exc}")
        self.start_fresh()
        return "new"

    def _ensure_started(self) -> None:
        session = self.current
        if session.log.next_seq == 0:
            self.store.start_log(session)

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
                "after_assistant_edit": drift.after_assistant_edit,
            },
        )

    # -- save / new / reset / exit ------------------------------------------------------

    def _refresh_workspace_state(self) -> None:
        state = self.current.state
        state.agent_spec_path = agent_spec_path(self.workspace_root)
        record_manifest(state, self.tracker.refresh(state.file_manifest))

    def snapshot_and_save(self) -> bool:
        """Autosave on exit: skipped after a reset with nothing since; True if written.

        As the seed's exit: a session without a turn is saved too (its manifest is the
        baseline the next launch measures drift from) and the pointer names it; it is not
        offered for resume (`previous.py`) and the listings fold it.
        """
        if self.session is None or self.session_deleted or self.session.read_only:
            return False
        self._ensure_started()
        self._refresh_workspace_state()
        self.store.save(self.session)
        self.store.write_pointer(self.instance_id, self.session.session_id, self.config.editor)
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
        return reset_targets(self.workspace_root)

    def reset(self, delete_files: bool = False) -> ResetResult:
        """`/reset`: new id, session files and pointer deleted, context cleared, autosave off."""
        old = self.current
        old_id = old.session_id
        deleted: list[str] = []
        if delete_files:
            deleted = delete_reset_targets(self.workspace_root, self.warnings)
        old.close()
        self.session = None
        self.store.delete_session(old_id)
        self.checkpoints.collect_garbage()  # blobs only the deleted checkpoints used
        self.store.delete_pointer(self.instance_id)
        self.tracker.assistant_paths.clear()
        self.start_fresh()
        self.resume_context = ""
        self.resume_memory = None
        self.last_drift = None
        self.session_deleted = True
        return ResetResult(old_id, self.session_id, deleted)

    def close(self) -> bool:
        """Autosave (unless skipped) and release the session for good; True if saved."""
        self.stopped = True
        try:
            return self._close_current(autosave=True)
        finally:
            self.tracker.drop_prefetch()

    def _close_current(self, *, autosave: bool) -> bool:
        saved = False
        if self.session is None:
            return False
        session = self.session
        try:
            if session.open_turn is not None and not session.read_only:
                turn, self._open_turn = self._open_turn, None
                if turn is not None and not turn.closed:
                    turn.flush()  # the streamed text it held back (redacted) is kept
                # The process is stopping mid-turn: say so now rather than on the next start.
                session.append("turn/end", {"reason": "interrupted"}, turn=session.open_turn)
            if autosave:
                saved = self.snapshot_and_save()
        finally:
            self.session.close()
            if self.session.log.next_seq == 0 and not saved and not self.session.read_only:
                # never written (after a reset): leave no lock file behind
                self.store.delete_session(self.session.session_id)
            self.session = None
        return saved
