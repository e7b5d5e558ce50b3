"""The ACP methods: each handler checks its params, calls `sessions`, converts the result."""

from __future__ import annotations

import asyncio
import logging
from itertools import islice
from typing import Any

from acp import RequestError
from acp.helpers import update_agent_message_text
from acp.schema import (
    ClientCapabilities,
    CloseSessionResponse,
    DeleteSessionResponse,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ResumeSessionResponse,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from session.workspace.drift import DriftReport

from . import checks, commands, hello, modes
from .client import ClientFiles, ClientLink
from .listing import BadCursorError, cursor_offset, listed, page, page_of
from .model_option import ModelOptions
from .replay import replay, rewinds
from .sessions import Held, Sessions

logger = logging.getLogger(__name__)

FIRST_BATCH = 8  # updates of the replay's first batch
REPLAY_BATCH = 200  # updates made in the worker thread between sends


def drift_message(drift: DriftReport) -> str | None:
    """Say which tracked files changed since the session was last saved (None: none)."""
    if not drift.has_drift:
        return None
    lines = ["Files changed since this session was last saved:"]
    for label, paths in (
        ("modified", drift.modified),
        ("deleted", drift.deleted),
        ("created", drift.created),
    ):
        if paths:
            lines.append(f"- {label}: {', '.join(paths)}")
    return "\n".join(lines) + "\n\n"


def _modes(held: Held) -> SessionModeState:
    return modes.mode_state(held.engine.lifecycle.current.state.phase)


class AcpAgent:
    """agent-assist as an ACP agent (the SDK's `Agent` protocol, plus `session/delete`)."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions
        self.models = ModelOptions(sessions)

    @property
    def link(self) -> ClientLink:
        """Return the client's side of the connection."""
        assert self.sessions.link is not None
        return self.sessions.link

    def on_connect(self, link: ClientLink) -> None:
        """Keep the client's side of the connection."""
        self.sessions.link = link

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """Negotiate the version (we speak 1) and say what this agent can do."""
        if client_info is not None and client_info.name:
            self.sessions.client_name = client_info.name
        fs = client_capabilities.fs if client_capabilities is not None else None
        if fs is not None:
            self.sessions.files = ClientFiles(
                read=bool(fs.read_text_file), write=bool(fs.write_text_file)
            )
        result = hello.initialize_result(self.sessions.options, self.sessions.env)
        return InitializeResponse.model_validate(result)

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        """Say where the key goes (an error): it comes from the environment only."""
        if method_id == hello.API_KEY_METHOD and hello.needs_key(
            self.sessions.options, self.sessions.env
        ):
            raise checks.failed(hello.KEY_ADVICE)
        raise checks.invalid(f"unknown authentication method {method_id!r}: none is needed")

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        """Set the session's model (from its next turn on); answer with every option."""
        held = self.sessions.get(checks.session_id(session_id))
        options = self.models.set(held, config_id, value)
        return SetSessionConfigOptionResponse(config_options=list(options))

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        """Start a fresh session of `cwd`'s project."""
        root = checks.project_dir(cwd)
        held = await self.sessions.new(root, checks.mcp_servers(mcp_servers))
        self._offer_commands(held.session_id)
        return NewSessionResponse(
            session_id=held.session_id, modes=_modes(held), config_options=self._options(held)
        )

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        """Open a session and replay its conversation before answering; then its drift."""
        root = checks.project_dir(cwd)
        sid = checks.session_id(session_id)
        held, drift = await self.sessions.open(root, sid, checks.mcp_servers(mcp_servers))
        store = held.engine.lifecycle.store
        # Two passes over the log, streamed (a batch of events in memory at a time): the
        # rewinds first (a later rewind hides earlier turns: a quick pass validating those
        # only), then the updates, sent a batch at a time as they are made (in a worker
        # thread: reading may take long); the first batch small, so the first update is
        # on its way at once.
        # A session open here may have no event yet (new, or fresh after `/reset`).
        if await asyncio.to_thread(store.exists, sid):
            only = frozenset({"session/rewind"})
            found = await asyncio.to_thread(rewinds, store.iter_events(sid, types=only))
            updates = replay(store.iter_events(sid), root, found)
            size = FIRST_BATCH
            while batch := await asyncio.to_thread(list, islice(updates, size)):
                for update in batch:
                    await self.link.update(sid, update)
                size = REPLAY_BATCH
        await self._tell_drift(sid, drift)
        return LoadSessionResponse(modes=_modes(held), config_options=self._options(held))

    async def resume_session(
        self, session_id: str, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> ResumeSessionResponse:
        """Open a session without replaying it (the model gets the resume block)."""
        root = checks.project_dir(cwd)
        sid = checks.session_id(session_id)
        held, drift = await self.sessions.open(root, sid, checks.mcp_servers(mcp_servers))
        await self._tell_drift(sid, drift)
        return ResumeSessionResponse(modes=_modes(held), config_options=self._options(held))

    def _options(self, held: Held) -> list[Any]:
        """Return the session's config options; the models the server lists follow later."""
        options = self.models.of(held)
        self.models.announce(self.link, held, options)
        return list(options)

    async def _tell_drift(self, session_id: str, drift: DriftReport | None) -> None:
        message = drift_message(drift) if drift is not None else None
        if message:
            await self.link.update(session_id, update_agent_message_text(message))
        await self.link.update(session_id, commands.available())

    def _offer_commands(self, session_id: str) -> None:
        """Send our commands once the answer naming the new session is out.

        The answer is written as soon as the handler returns (nothing in between waits), so
        a task started now writes after it.
        """
        update = commands.available()
        self.sessions.tasks.spawn(self.link.update(session_id, update), "commands to the client")

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """List a project's sessions (all edges' ones), newest first, a page at a time.

        Without `cwd`, every project's: the local store's projects on this machine, or the
        role's in PostgreSQL, each session with its project's directory.
        """
        try:
            offset = cursor_offset(cursor)
        except BadCursorError as exc:
            raise checks.invalid(str(exc), cursor=cursor) from None
        if cwd is None:
            return await self._list_every_project(offset)
        root = checks.project_dir(cwd)
        self.sessions.roots.add(root)
        store = await asyncio.to_thread(self.sessions.store_of, root)
        try:
            rows, _total, _folded = await asyncio.to_thread(
                store.list_rows_page, 0, None, empty=True
            )
        finally:
            await asyncio.to_thread(store.close)
        here = {sid: None for sid, held in self.sessions.held.items() if held.root == root}
        return page(listed(rows, here), root, offset)

    async def _list_every_project(self, offset: int) -> ListSessionsResponse:
        from pathlib import Path

        from session.store.choose import store_projects

        store = await asyncio.to_thread(self.sessions.store_of, Path.cwd().resolve())
        try:
            found, _, _ = await asyncio.to_thread(
                store_projects(store, every=True).rows, 0, None, empty=True
            )
        finally:
            await asyncio.to_thread(store.close)
        # A project whose workspace is not recorded is left out: no directory to name for it.
        entries = [(scoped.row, scoped.workspace) for scoped in found if scoped.workspace]
        roots = {row[0]: cwd for row, cwd in entries}
        roots |= {sid: str(held.root) for sid, held in self.sessions.held.items()}
        here = {sid: None for sid in self.sessions.held}
        rows = listed([row for row, _ in entries], here)
        self.sessions.roots |= {Path(cwd) for cwd in roots.values()}  # where delete looks
        return page_of([(row, roots[row[0]]) for row in rows], offset)

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """Cancel the session's prompt, save the session and let it go."""
        sid = checks.session_id(session_id)
        self.sessions.get(sid)
        await self.sessions.close(sid, "session/close")
        return CloseSessionResponse()

    async def delete_session(self, session_id: str, **kwargs: Any) -> DeleteSessionResponse:
        """Delete a session, as `sessions rm` does (refused while another process holds it)."""
        sid = checks.session_id(session_id)
        await self.sessions.delete(sid)
        return DeleteSessionResponse()

    async def fork_session(
        self, session_id: str, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> ForkSessionResponse:
        """Fork a session at its last closed turn into a new open session."""
        root = checks.project_dir(cwd)
        sid = checks.session_id(session_id)
        held = await self.sessions.fork(root, sid, checks.mcp_servers(mcp_servers))
        self._offer_commands(held.session_id)
        return ForkSessionResponse(
            session_id=held.session_id, modes=_modes(held), config_options=self._options(held)
        )

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        """Run a turn; its activity streams as `session/update`s."""
        from .turns import run_prompt

        sid = checks.session_id(session_id)
        held = self.sessions.get(sid)
        text = checks.prompt_text(prompt)
        if (command := commands.parse(text)) is not None:
            said = await commands.run(self.sessions, held, *command)
            await self.link.update(sid, update_agent_message_text(said))
            return PromptResponse(stop_reason="end_turn")
        return await run_prompt(self.link, held, text)

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        """Set the session's phase (recorded as the model's `set_phase` records it)."""
        held = self.sessions.get(checks.session_id(session_id))
        try:
            phase = modes.phase_of(mode_id)
        except ValueError as exc:
            raise checks.invalid(str(exc), modeId=mode_id) from None
        async with held.engine.turn_lock:  # between turns, as the model's own change
            held.engine.lifecycle.set_phase(phase)
        return SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Stop the session's running prompt (recorded `aborted`; it answers `cancelled`)."""
        held = self.sessions.held.get(session_id) if isinstance(session_id, str) else None
        if held is not None and held.turn is not None and not held.turn.done():
            held.turn.cancel()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """No extension methods yet."""
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications are ignored."""
