"""SessionLifecycle: the transitions, plus what is recorded into the current session.

Turns (`TurnRecorder`), decisions and phases, drift the watcher sees, checkpoints and
restores, compactions and the running summary: every one an event appended to the log.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

from ..checkpoints import CheckpointRecord, RestorePlan
from ..compaction import CompactionPlan, CompactionSummary, history_tokens, plan_compaction
from ..context import build_resume_context, remembered
from ..errors import SessionError
from ..events import Event
from ..file_changes import prepare
from ..snapshot_meta import TITLE_CHARS
from ..storage import StorageError
from ..summary import SummaryPlan, clip_words
from ..workspace.drift import DriftReport
from ..workspace.files import read_workspace_file, set_file_mode, write_workspace_file
from ..workspace.manifest import plain_dict
from .changes import drift_changes, recording
from .offline import continue_offline
from .transitions import LifecycleTransitions
from .turns import TurnRecorder
from .values import PreviousSession, SaveResult

PHASES = ("design", "code", "deploy")


class SessionLifecycle(LifecycleTransitions):
    """One editor instance's session: its transitions and everything recorded into it."""

    def resume_or_start(self, previous: PreviousSession | None, accept: bool) -> str:
        """Resume `previous` if accepted (while the store is away, maybe in a new session)."""
        if previous is not None and accept and continue_offline(self, previous):
            return "new"
        return super().resume_or_start(previous, accept)

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
        data: dict[str, str] = {"input": text}
        if self.config.edge:
            data["edge"] = self.config.edge
        if self.config.client:
            data["client"] = self.config.client
        session.append("turn/start", data, turn=number)
        self._open_turn = TurnRecorder(
            lambda: self.current,
            number,
            headers_sent=self._headers_sent,
            on_completed=self._turn_completed,
            keep=self._keep_contents,
        )
        return self._open_turn

    def _keep_contents(self, contents: list[bytes]) -> AbstractContextManager[None]:
        """Keep file contents as this session's blobs; its event is appended inside.

        Not while the store is away (the events go to the spool): no wait on the database.
        """
        if not self.current.log.online:
            raise StorageError("the store is unreachable")
        return self.checkpoints.keeping(self.session_id, contents)

    @property
    def _metadata_only(self) -> bool:
        return self.current.state.persistence == "metadata"

    def record_file_change(
        self, call_id: str | None, relative: str, before: bytes | None, after: bytes | None
    ) -> None:
        """Note what tool call `call_id` replaced and wrote in `relative` (None: no file).

        Recorded with the call's `tool/result` (nothing outside a turn; an empty list if unchanged).
        """
        recorder = self._open_turn
        if call_id is None or recorder is None or recorder.closed:
            return
        if before == after:  # written as it was: `files: []` (a log of old had no `files`)
            recorder.note_unchanged(call_id)
            return
        change = prepare(
            relative, before, after, redactor=self.redactor, metadata=self._metadata_only
        )
        recorder.note_change(call_id, change)

    def _turn_completed(self) -> None:
        # The first successful reply after a reset re-enables autosave.
        self.session_deleted = False
        if not self._pointer_current:
            self.store.write_pointer(self.instance_id, self.session_id, self.config.editor)
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

    def note_assistant_file(self, relative: str) -> None:
        """Track a file the assistant read or wrote; its current content is not drift."""
        self.tracker.note_file(relative)

    def note_assistant_write(self, relative: str, content: bytes) -> None:
        """Record that the assistant wrote `content` (maybe unsaved in an editor): not drift."""
        if self.tracker.note_write(relative, content):
            self._turn_wrote = True

    def note_assistant_creating(self, relative: str) -> None:
        """Note a file the assistant creates through the editor: empty on disk at first."""
        self.tracker.note_creating(relative)

    def note_open_document(self, relative: str, content: bytes) -> None:
        """Note a tracked file the editor opened with unsaved changes: told to the model once."""
        self.tracker.note_open_document(relative, content)

    def take_drift_note(self) -> str | None:
        """Return (once) a note for the model about files changed outside the assistant."""
        return self.tracker.take_drift_note()

    def _drift_data(self, drift: DriftReport, source: str) -> dict[str, Any]:
        return {
            "source": source,
            "modified": drift.modified,
            "deleted": drift.deleted,
            "created": drift.created,
            "unchanged": drift.unchanged,
            "after_assistant_edit": drift.after_assistant_edit,
        }

    def _record_drift(self, drift: DriftReport, source: str) -> Event:
        """Record `workspace/drift`, with each changed file's digests (and content, kept)."""
        self._ensure_started()
        data = self._drift_data(drift, source)
        changes = drift_changes(self.workspace_root, drift, self.redactor, self._metadata_only)
        with recording(self._keep_contents, changes) as records:
            return self.current.append("workspace/drift", {**data, "changes": records})

    def check_live_drift(self, paths: list[str]) -> DriftReport | None:
        """Compare changed `paths` with the manifest; record and return real drift."""
        report = self.tracker.check(paths)
        if report is None:
            return None
        if not self.current.read_only:
            self._record_drift(report, "watcher")
        self.tracker.pending_drift.append(report)
        return report

    # -- checkpoints, compaction, summaries ----------------------------------------------

    def explicit_save(self) -> SaveResult:
        """`/save`: refresh spec path and manifest, record a checkpoint, write, move pointer."""
        self.ensure_writable()
        session = self.current
        record = self._checkpoint(auto=False, title=self._checkpoint_title())
        path = str(self.store.save(session))
        self.store.write_pointer(self.instance_id, session.session_id, self.config.editor)
        self._pointer_current = True
        self.session_deleted = False
        return SaveResult(session.session_id, record.number, record.created_at, path)

    def _checkpoint_title(self) -> str:
        """Name the turn saved: its number and what the user asked in it."""
        state = self.current.state
        if not state.turns:
            return "Session start"
        asked = _last_prompt(self.current.history.messages()) or state.title
        return f"Turn {state.turns}: {asked}" if asked else f"Turn {state.turns}"

    def _checkpoint(self, *, auto: bool, title: str) -> CheckpointRecord:
        """Record a numbered checkpoint: a `session/save` event plus copies of tracked files."""
        session = self.current
        self.pending_holding = None  # what holds the resume's changed files may change now
        self._ensure_started()
        self._refresh_workspace_state()
        number = session.state.checkpoint_count + 1
        files = plain_dict(session.state.file_manifest)
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
            self.resume_memory = remembered(self.current.state)
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

    def checkpoint_copy(self, relative: str, number: int | None = None) -> tuple[int, bytes] | None:
        """Return a checkpoint's copy of a file: checkpoint `number`'s, else the newest one's.

        None when no checkpoint (or not that one) kept a copy: the file was never tracked
        there, its copy was withheld (a secret), or the blob is gone.
        """
        records = self.list_checkpoints()
        for record in reversed(records):
            if number is not None and record.number != number:
                continue
            digest = record.files.get(relative)
            data = self.checkpoints.read_blob(digest) if digest else None
            if data is not None:
                return record.number, data
            if number is not None:
                return None
        return None

    def checkpoints_holding(self, paths: Iterable[str]) -> dict[str, int | None]:
        """Return, per path, the newest checkpoint that kept a copy of it (None: none did)."""
        paths = list(paths)
        pending = self.pending_holding
        if pending is not None and pending.answers(self.session_id, paths):
            return pending.result(self.warnings)  # the resume's, started when it found them
        return self.checkpoints.holding(self.session_id, paths, self.warnings)

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
        current = plain_dict(self.current.state.file_manifest)
        for relative, data in (open_documents or {}).items():
            if relative in current or relative in record.files:
                current[relative] = hashlib.sha256(data).hexdigest()
        plan = self.checkpoints.plan_restore(record, current)
        for relative, _ in plan.writes:  # what each write replaces: the editor's, else disk's
            document = (open_documents or {}).get(relative)
            plan.before[relative] = (
                document
                if document is not None
                else read_workspace_file(self.workspace_root, relative)
            )
        return plan

    def restore(self, plan: RestorePlan, applied: set[str] | None = None) -> list[str]:
        """Restore a planned checkpoint: save the present, write files, rewind the talk.

        `applied` are files the editor already wrote (through `workspace/applyEdit`); the
        rest are written here. Returns the restored paths.
        """
        session = self.current
        self._checkpoint(auto=True, title=f"Before restoring checkpoint {plan.record.number}")
        restored = []
        changes = []
        metadata = self._metadata_only
        for relative, data in plan.writes:
            if relative in plan.before:
                before = plan.before[relative]
            else:
                before = read_workspace_file(self.workspace_root, relative)
            if before != data:
                changes.append(
                    prepare(relative, before, data, redactor=self.redactor, metadata=metadata)
                )
            mode = plan.modes.get(relative)
            if applied is None or relative not in applied:
                write_workspace_file(self.workspace_root, relative, data, mode)
            else:  # the editor wrote it: its mode is the checkpoint's all the same
                set_file_mode(self.workspace_root, relative, mode)
            self.note_assistant_write(relative, data)
            restored.append(relative)
        self._turn_wrote = False
        rewind: dict[str, Any] = {"to_seq": plan.record.seq, "checkpoint": plan.record.number}
        with recording(self._keep_contents, changes) as files:
            session.append("session/rewind", {**rewind, "files": files} if files else rewind)
        return restored


def _last_prompt(messages: list[dict[str, Any]]) -> str | None:
    """Return the newest user prompt of a history (pydantic-ai's JSON), on one line."""
    for message in reversed(messages):
        if message.get("kind") != "request":
            continue
        for part in message.get("parts") or ():
            if not isinstance(part, dict) or part.get("part_kind") != "user-prompt":
                continue
            content = part.get("content")
            if isinstance(content, str):
                return " ".join(content.split())[:TITLE_CHARS] or None
    return None
