"""checkpoint (list/restore), compact, fork: history operations that only append."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from pygls.uris import to_fs_path

from session.fork import fork_session

from .. import protocol as proto
from ..server import AgentAssistServer, RequestFailedError
from .base import Feature, request

logger = logging.getLogger(__name__)


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

    @request(proto.CHECKPOINT)
    async def checkpoint(
        self, params: proto.CheckpointParams
    ) -> proto.CheckpointListResult | proto.CheckpointRestoreResult:
        """List the checkpoints, or restore one (files and conversation)."""
        ls = self.server
        lifecycle = ls.lifecycle
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
        lifecycle = self.server.lifecycle
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
        outcome = await self.server.engine.compaction.asked()
        return proto.CompactResult(**dataclasses.asdict(outcome))

    @request(proto.FORK)
    async def fork(self, params: proto.ForkParams) -> proto.ForkResult:
        """Fork this or another session at a closed-turn boundary; it becomes this one."""
        ls = self.server
        lifecycle = ls.lifecycle
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
                before_turn=params.before_turn,
            )
            lifecycle.adopt(result.session)
        ls.announce(proto.SessionChangeReason.FORKED)
        return proto.ForkResult(
            session_id=result.session.session_id,
            parent_session_id=result.parent_session_id,
            boundary=result.boundary,
        )
