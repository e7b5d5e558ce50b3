"""Initialize, the resume offer, and autosave on shutdown/exit."""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types

from session.workspace import DriftReport

from .. import protocol as proto
from ..lifetime import GRACE_SECONDS, watch_client
from ..server import AgentAssistServer

logger = logging.getLogger(__name__)

RESUME = "Resume"
NEW_SESSION = "New session"


def drift_params(
    session_id: str, source: str, drift: DriftReport, message_shown: bool = False
) -> dict[str, object]:
    """Return the `agentAssist/drift` params for a report."""
    return {
        "sessionId": session_id,
        "source": source,
        "messageShown": message_shown,
        "modified": drift.modified,
        "deleted": drift.deleted,
        "created": drift.created,
        "unchanged": drift.unchanged,
    }


def drift_summary(drift: DriftReport) -> str:
    """Return a one-line description of drift for a warning message."""
    parts = [f"{p}: modified" for p in drift.modified]
    parts += [f"{p}: deleted" for p in drift.deleted]
    parts += [f"{p}: created" for p in drift.created]
    shown = ", ".join(parts[:10]) + (f" (+{len(parts) - 10} more)" if len(parts) > 10 else "")
    return f"Files changed since the last session: {shown}"


async def ask_resume(ls: AgentAssistServer, prompt: str) -> bool:
    """Ask the resume question; Resume or a dismissed prompt resumes."""
    try:
        answer = await ls.window_show_message_request_async(
            types.ShowMessageRequestParams(
                type=types.MessageType.Info,
                message=prompt,
                actions=[types.MessageActionItem(RESUME), types.MessageActionItem(NEW_SESSION)],
            )
        )
    except Exception as exc:  # a client that cannot ask: take the [Y/n] default
        logger.warning("resume question failed (%s); resuming", exc)
        return True
    return answer is None or answer.title != NEW_SESSION


async def start_session(ls: AgentAssistServer) -> None:
    """Resume or start this instance's session, then let waiting requests through."""
    lifecycle = ls.session
    try:
        previous = lifecycle.find_previous()
        accept = True
        if previous is not None:
            if ls.config.auto_resume == "never":
                accept = False
            elif ls.config.auto_resume == "ask":
                accept = await ask_resume(ls, previous.prompt())
        reason = lifecycle.resume_or_start(previous, accept)
        session_id = lifecycle.session_id
        for warning in lifecycle.warnings:
            ls.show(warning)
        lifecycle.warnings.clear()
        drift = lifecycle.last_drift if reason == "resumed" else None
        if drift is not None and drift.has_drift:
            ls.drift_count = len(drift.modified) + len(drift.deleted) + len(drift.created)
            shown = ls.config.drift_messages  # a client that renders drift turns it off
            if shown:
                ls.show(drift_summary(drift))
            ls.notify(proto.DRIFT, drift_params(session_id, "resume", drift, shown))
        ls.notify(proto.SESSION_CHANGED, {"sessionId": session_id, "reason": reason})
    finally:
        ls.ready.set()
    from .workspace_watch import register_watchers

    await register_watchers(ls)


def setup(server: AgentAssistServer) -> None:
    """Register initialize/initialized/shutdown/exit."""

    @server.feature(types.INITIALIZE)
    def initialize(ls: AgentAssistServer, params: types.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        for warning in ls.configure(params):
            ls.show(warning)
        logger.info("agent-assist for %s, instance %s", ls.root, ls.config.instance_id)
        ls.spawn(
            watch_client(params.process_id, ls.stdout, lambda why: ls.finish_soon(why, 1)),
            "watch-client",
        )

    @server.feature(types.INITIALIZED)
    def initialized(ls: AgentAssistServer, params: types.InitializedParams) -> None:
        ls.spawn(start_session(ls), "start-session")

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: AgentAssistServer, params: object) -> None:
        # Turns in flight are cancelled first, so they record `aborted` before the autosave.
        ls.shutdown_requested = True
        await ls.cancel_work(GRACE_SECONDS)
        ls.autosave("shutdown")

    @server.feature(types.EXIT)
    async def exit_(ls: AgentAssistServer, params: object) -> None:
        # Never returns: pygls' own exit handler (sys.exit inside a callback) never runs.
        await ls.finish("exit", 0 if ls.shutdown_requested else 1)
