"""save, reset, resume, status, history, sessions and open."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from session.derive import transcript
from session.manager import SessionLockedError, SessionNotFoundError
from session.search import SearchError

from .. import protocol as proto
from ..server import AgentAssistServer, RequestFailedError, request_handler
from .lifecycle import drift_params

DELETE_FILES = "Delete files"
KEEP_FILES = "Keep files"
CANCEL = "Cancel"


async def confirm_file_deletion(ls: AgentAssistServer, targets: list[str]) -> bool:
    """Ask whether reset also deletes the spec file / template dir; Cancel raises."""
    names = " and ".join(f"{t}/" if t == "templates" else t for t in targets)
    answer = await ls.window_show_message_request_async(
        types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=f"Start a new session. Also delete {names}?",
            actions=[
                types.MessageActionItem(DELETE_FILES),
                types.MessageActionItem(KEEP_FILES),
                types.MessageActionItem(CANCEL),
            ],
        )
    )
    if answer is None or answer.title == CANCEL:
        raise RequestFailedError("Reset cancelled; nothing was changed.")
    return answer.title == DELETE_FILES


def setup(server: AgentAssistServer) -> None:
    """Register the session requests."""

    @request_handler(server, proto.SAVE, proto.EmptyParams)
    async def save(ls: AgentAssistServer, params: proto.EmptyParams) -> dict[str, Any]:
        await ls.ready.wait()
        # A checkpoint is a closed-turn boundary: a save during a reply waits for its end,
        # so a restore never rewinds to half a turn (files and conversation would disagree).
        async with ls.turn_lock:
            result = ls.session.explicit_save()
        return {
            "sessionId": result.session_id,
            "checkpoint": result.checkpoint,
            "savedAt": result.saved_at.isoformat(),
            "path": str(result.path),
        }

    @request_handler(server, proto.RESET, proto.ResetParams)
    async def reset(ls: AgentAssistServer, params: proto.ResetParams) -> dict[str, Any]:
        await ls.ready.wait()
        lifecycle = ls.session
        delete = params.delete_files
        if delete is None:
            targets = lifecycle.reset_targets()
            delete = await confirm_file_deletion(ls, targets) if targets else False
        async with ls.turn_lock:
            result = lifecycle.reset(delete_files=delete)
        ls.drift_count = 0
        ls.notify(proto.SESSION_CHANGED, {"sessionId": result.session_id, "reason": "reset"})
        return {"sessionId": result.session_id, "deletedFiles": result.deleted_files}

    @request_handler(server, proto.NEW, proto.EmptyParams)
    async def new(ls: AgentAssistServer, params: proto.EmptyParams) -> dict[str, Any]:
        await ls.ready.wait()
        async with ls.turn_lock:
            previous, session_id = ls.session.new_session()
        ls.drift_count = 0
        ls.notify(proto.SESSION_CHANGED, {"sessionId": session_id, "reason": "new"})
        return {"sessionId": session_id, "previousSessionId": previous}

    @request_handler(server, proto.RESUME, proto.EmptyParams)
    async def resume(ls: AgentAssistServer, params: proto.EmptyParams) -> dict[str, Any]:
        await ls.ready.wait()
        return {"context": ls.session.resume_context}

    @request_handler(server, proto.STATUS, proto.EmptyParams)
    async def status(ls: AgentAssistServer, params: proto.EmptyParams) -> dict[str, Any]:
        await ls.ready.wait()
        lifecycle = ls.session
        session = lifecycle.current
        return {
            "sessionId": session.session_id,
            "state": "running" if ls.running else "idle",
            "waiting": ls.waiting,
            "resumed": lifecycle.resumed,
            "turns": session.state.turns,
            "model": ls.config.model.name,
            "drift": ls.drift_count,
            "readOnly": session.read_only,
            "persistence": session.state.persistence,
            "contextWindow": ls.config.context_window,
            "phase": session.state.phase,
        }

    @request_handler(server, proto.HISTORY, proto.HistoryParams)
    async def history(ls: AgentAssistServer, params: proto.HistoryParams) -> dict[str, Any]:
        await ls.ready.wait()
        lifecycle = ls.session
        session_id = params.session_id or lifecycle.session_id
        if not lifecycle.manager.exists(session_id):
            if session_id == lifecycle.session_id:
                return {"sessionId": session_id, "items": []}
            raise RequestFailedError(f"no session {session_id} in this project")
        scan = lifecycle.manager.read_events(session_id)
        return {"sessionId": session_id, "items": proto.transcript_items(transcript(scan.events))}

    @request_handler(server, proto.SEARCH, proto.SearchParams)
    async def search(ls: AgentAssistServer, params: proto.SearchParams) -> dict[str, Any]:
        await ls.ready.wait()
        manager = ls.session.manager
        if params.session_id is not None and not manager.exists(params.session_id):
            raise RequestFailedError(f"no session {params.session_id} in this project")
        try:
            index = ls.search_index
            if params.session_id is not None:
                index.sync_session(manager, params.session_id)
            else:
                index.sync(manager)
            hits = index.search(params.query, params.session_id, params.limit)
        except SearchError as exc:
            raise RequestFailedError(f"search is unavailable: {exc}") from None
        return {
            "results": [
                {
                    "sessionId": h.session_id,
                    "seq": h.seq,
                    "turn": h.turn,
                    "type": h.type,
                    "snippet": h.snippet,
                    "score": h.score,
                }
                for h in hits
            ]
        }

    @request_handler(server, proto.SESSIONS, proto.EmptyParams)
    async def sessions(ls: AgentAssistServer, params: proto.EmptyParams) -> dict[str, Any]:
        await ls.ready.wait()
        current = ls.session.session_id
        rows = []
        for info in ls.session.manager.list_sessions():
            row: dict[str, Any] = {
                "sessionId": info.session_id,
                "title": info.title,
                "createdAt": info.created_at.isoformat(),
                "updatedAt": info.updated_at.isoformat(),
                "turns": info.turns,
                "active": info.session_id == current,
            }
            if info.parent_session_id:
                row["parentSessionId"] = info.parent_session_id
            if info.phase:
                row["phase"] = info.phase
            rows.append(row)
        return {"sessions": rows}

    @request_handler(server, proto.OPEN, proto.OpenParams)
    async def open_(ls: AgentAssistServer, params: proto.OpenParams) -> dict[str, Any]:
        await ls.ready.wait()
        lifecycle = ls.session
        if params.session_id == lifecycle.session_id:
            return {"sessionId": params.session_id, "context": lifecycle.resume_context}
        async with ls.turn_lock:
            try:
                drift = lifecycle.resume(params.session_id)
            except SessionNotFoundError:
                raise RequestFailedError(
                    f"no session {params.session_id} in this project"
                ) from None
            except SessionLockedError as exc:
                raise RequestFailedError(str(exc)) from None
        for warning in lifecycle.warnings:
            ls.show(warning)
        lifecycle.warnings.clear()
        ls.drift_count = len(drift.modified) + len(drift.deleted) + len(drift.created)
        if drift.has_drift:
            ls.notify(proto.DRIFT, drift_params(params.session_id, "resume", drift))
        ls.notify(proto.SESSION_CHANGED, {"sessionId": params.session_id, "reason": "opened"})
        return {"sessionId": params.session_id, "context": lifecycle.resume_context}
