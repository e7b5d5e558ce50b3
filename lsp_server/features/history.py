"""checkpoint (list/restore), compact, fork: history operations that only append."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from engine.model.faults import summary_failure
from session.compaction import extractive_summary, history_tokens, render_transcript
from session.fork import fork_session

from .. import protocol as proto
from ..server import AgentAssistServer, RequestFailedError
from .base import Feature, request
from .summaries import RunningSummary

logger = logging.getLogger(__name__)


class Progress:
    """`$/progress` for one piece of long work (a no-op if the client cannot show it)."""

    def __init__(self, ls: AgentAssistServer, token: str | None) -> None:
        self.ls = ls
        self.token = token

    def report(self, message: str, percentage: int | None = None) -> None:
        """Report a step."""
        if self.token is not None:
            self.ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
            )


@asynccontextmanager
async def progress(ls: AgentAssistServer, title: str) -> AsyncIterator[Progress]:
    """Show progress for the duration of the block, with a fresh token."""
    window = ls.client_capabilities.window
    token: str | None = None
    if window is not None and window.work_done_progress:
        token = str(uuid.uuid4())
        try:
            await ls.work_done_progress.create_async(token)
            ls.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title=title, percentage=0)
            )
        except Exception as exc:
            logger.info("progress not shown: %s", exc)
            token = None
    try:
        yield Progress(ls, token)
    finally:
        if token is not None:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))


def open_documents(ls: AgentAssistServer) -> dict[str, bytes]:
    """Return the workspace files open in the editor, by relative path, with their text."""
    out: dict[str, bytes] = {}
    for uri, document in ls.workspace.text_documents.items():
        path = to_fs_path(uri)
        if path is None:
            continue
        try:
            relative = Path(path).relative_to(ls.root).as_posix()
        except ValueError:
            continue
        out[relative] = document.source.encode("utf-8")
    return out


class History(Feature):
    """Checkpoints (list and restore), compaction and fork."""

    name = "history"
    needs = (RunningSummary,)

    @request(proto.CHECKPOINT)
    async def checkpoint(
        self, params: proto.CheckpointParams
    ) -> proto.CheckpointListResult | proto.CheckpointRestoreResult:
        """List the checkpoints, or restore one (files and conversation)."""
        ls = self.server
        lifecycle = ls.session
        if params.number is None:
            return proto.CheckpointListResult(
                session_id=lifecycle.session_id,
                checkpoints=[
                    proto.CheckpointInfo.model_validate(record)
                    for record in lifecycle.list_checkpoints()
                ],
            )
        if params.dry_run:
            plan = lifecycle.plan_restore(params.number, open_documents(ls))
            return proto.CheckpointRestoreResult(
                session_id=lifecycle.session_id,
                number=params.number,
                restored_files=[relative for relative, _ in plan.writes],
                created_files=plan.created_after,
                skipped_files=[*plan.skipped, *plan.withheld],
                withheld_files=plan.withheld,
                dry_run=True,
            )
        async with ls.turn_lock:
            plan = lifecycle.plan_restore(params.number, open_documents(ls))
            applied: set[str] = set()
            for relative, data in plan.writes:
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    continue  # binary: written directly
                if await ls.edits.apply_file_edit(relative, text):
                    applied.add(relative)
            restored = lifecycle.restore(plan, applied)
        ls.announce(proto.SessionChangeReason.RESTORED)
        return proto.CheckpointRestoreResult(
            session_id=lifecycle.session_id,
            number=params.number,
            restored_files=restored,
            created_files=plan.created_after,
            skipped_files=[*plan.skipped, *plan.withheld],
            withheld_files=plan.withheld,
        )

    @request(proto.CHECKPOINT_FILE)
    async def checkpoint_file(
        self, params: proto.CheckpointFileParams
    ) -> proto.CheckpointFileResult:
        """Return a checkpoint's copy of a file (to diff the file against)."""
        lifecycle = self.server.session
        path = params.path.strip().removeprefix("./")
        copy = lifecycle.checkpoint_copy(path, params.number)
        if copy is None:
            reason = (
                f"checkpoint {params.number} kept no copy of {path}"
                if params.number
                else f"no checkpoint kept a copy of {path}"
            )
            return proto.CheckpointFileResult(path=path, number=None, text=None, reason=reason)
        number, data = copy
        try:
            text: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        return proto.CheckpointFileResult(
            path=path,
            number=number,
            text=text,
            reason=None if text is not None else "the copy is not UTF-8 text",
        )

    @request(proto.COMPACT)
    async def compact(self, params: proto.EmptyParams) -> proto.CompactResult:
        """Compact the conversation now (asked for: compacts whenever it can)."""
        with self.need(RunningSummary).giving_way():
            async with self.server.turn_lock:
                return await self.compact_now(asked=True)

    @request(proto.FORK)
    async def fork(self, params: proto.ForkParams) -> proto.ForkResult:
        """Fork this or another session at a closed-turn boundary; it becomes this one."""
        ls = self.server
        lifecycle = ls.session
        source = params.session_id or lifecycle.session_id
        if not lifecycle.store.exists(source):
            raise RequestFailedError(f"no session {source} in this project")
        async with ls.turn_lock:
            result = fork_session(
                lifecycle.store,
                source,
                params.boundary,
                instance_id=ls.config.instance_id,
                child_session_id=params.child_session_id,
            )
            lifecycle.adopt(result.session)
        ls.announce(proto.SessionChangeReason.FORKED)
        return proto.ForkResult(
            session_id=result.session.session_id,
            parent_session_id=result.parent_session_id,
            boundary=result.boundary,
        )

    async def compact_now(
        self, *, open_turn: bool = False, asked: bool = False
    ) -> proto.CompactResult:
        """Summarise older turns (model, else extractive) and keep the recent tail.

        `open_turn`: compact around the turn in progress (its prompt did not fit the window).
        `asked`: the user asked for it, so with two closed turns or more something is compacted.
        """
        ls = self.server
        lifecycle = ls.session
        current = lifecycle.message_history()
        tokens = history_tokens(current)
        result = proto.CompactResult(
            session_id=lifecycle.session_id,
            messages_before=len(current),
            messages_after=len(current),
            tokens_before=tokens,
            tokens_after=tokens,
            compacted=False,
        )
        plan = lifecycle.plan_compaction(ls.config.keep_tokens, open_turn=open_turn, force=asked)
        if plan is None:
            if asked:
                result.reason = (
                    "Nothing to compact: a turn is running."
                    if lifecycle.current.open_turn is not None
                    else "Nothing to compact: compaction keeps the newest turn, and there is "
                    "only one (or none) in the history."
                )
            return result
        async with progress(ls, "Compacting the conversation") as bar:
            summary = None
            if ls.runner is not None and ls.config.model.configured and ls.runner.can_summarize:
                bar.report("Summarising older turns with the model", 10)
                try:
                    # Half the window for what is summarised: the summary request must fit too.
                    limit = ls.config.context_window * 2
                    summary = await ls.runner.summarize(render_transcript(plan.old)[-limit:])
                except Exception as exc:
                    why = summary_failure(exc)
                    logger.warning("model summary failed: %s (%s)", why, exc)
                    ls.show(f"The model could not summarise: {why}. Used an extractive summary.")
            fallback = summary is None
            if summary is None:
                summary = extractive_summary(plan.old, lifecycle.current.state.decisions)
            bar.report("Recording the summary", 90)
            messages_after, tokens_after = lifecycle.compact(plan, summary, fallback=fallback)
        result.messages_after = messages_after
        result.tokens_after = tokens_after
        result.compacted = True
        result.fallback = fallback
        return result

    async def compact_if_needed(self, history: list[dict[str, Any]]) -> bool:
        """Compact before a turn when the history passed the configured threshold."""
        if history_tokens(history) <= self.server.config.compact_threshold:
            return False
        return (await self.compact_now()).compacted
