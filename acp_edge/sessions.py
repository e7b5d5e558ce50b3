"""The sessions one `agent-assist acp` process holds: one engine (and lifecycle) each.

Every session of the process is the instance `acp-<client>-<pid>` (the pointer records the
client and this process, so it is stale once the process is gone); ACP has no resume
question of its own, the client chooses through `session/list` and `session/load`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.config import ServerConfig, client_label, parse_initialization_options
from session.errors import SessionError, SessionLockedError, SessionNotFoundError
from session.storage import StorageError
from session.store.backend import SessionStore
from session.store.choose import open_store
from session.workspace.drift import DriftReport

from .checks import failed, invalid
from .client import ClientFiles, ClientLink
from .host import AcpHost, Tasks

if TYPE_CHECKING:
    from engine.core import Engine

logger = logging.getLogger(__name__)


@dataclass
class Held:
    """One open session: its project, its engine, the prompt running in it."""

    session_id: str
    root: Path
    engine: Engine
    turn: asyncio.Task[Any] | None = None


class Sessions:
    """The open sessions, and the stores of the projects requests named."""

    def __init__(self, options: Mapping[str, Any], env: Mapping[str, str]) -> None:
        self.options = dict(options)
        self.env = env
        self.client_name: str | None = None  # `clientInfo.name` at initialize
        self.files = ClientFiles()  # what the client can do with files
        self.link: ClientLink | None = None
        self.tasks = Tasks()
        self.held: dict[str, Held] = {}
        self.roots: set[Path] = {Path.cwd().resolve()}  # where `session/delete` looks
        self.stopping = False

    def config(self) -> ServerConfig:
        """Return the options of every session of this process (warnings logged)."""
        config, warnings = parse_initialization_options(
            self.options, f"acp-{self.client_name or 'client'}", self.env, os.getpid()
        )
        for warning in warnings:
            logger.warning("option: %s", warning)
        # Each turn records the client as it named itself (the instance has the `acp-` prefix).
        return config.model_copy(update={"client": client_label(self.client_name)})

    def get(self, session_id: str) -> Held:
        """Return an open session, or say that it is not open here."""
        found = self.held.get(session_id)
        if found is None:
            raise invalid(f"session {session_id} is not open: load or resume it first")
        return found

    def link_of(self) -> ClientLink:
        """Return the client's side of the connection (set once connected)."""
        assert self.link is not None
        return self.link

    def rekey(self, held: Held, session_id: str) -> None:
        """Hold an open session under its new id (a `/reset` started a fresh one)."""
        self.held.pop(held.session_id, None)
        held.session_id = session_id
        held.engine.host.session_id = session_id  # type: ignore[attr-defined]
        self.held[session_id] = held

    async def _engine(self, root: Path) -> Engine:
        from engine.core import Engine  # the engine (and pydantic-ai later): never at initialize

        if self.stopping:
            raise failed("the agent is stopping")
        assert self.link is not None
        config = self.config()
        host = AcpHost(self.link, self.tasks, root, config.tools.protected_paths, self.files)
        engine = Engine(host, config, root, edge="acp")
        engine.configure(config, root)
        if not await engine.connect_store():
            raise failed(engine.store_error or "the session store cannot be used")
        self.roots.add(root)
        return engine

    def _hold(self, engine: Engine, root: Path, mcp: Sequence[Any]) -> Held:
        engine.use_mcp_servers(mcp)
        lifecycle = engine.lifecycle
        session_id = lifecycle.session_id
        engine.host.session_id = session_id  # type: ignore[attr-defined]
        held = Held(session_id, root, engine)
        self.held[session_id] = held
        # A database that did not answer: the session is kept on this machine (told once).
        if notice := getattr(lifecycle.store, "offline_notice", lambda: None)():
            engine.host.show(f"agent-assist: {notice}")
        engine.session_started()
        return held

    async def new(self, root: Path, mcp: Sequence[Any] = ()) -> Held:
        """Start a fresh session of the project at `root`."""
        engine = await self._engine(root)
        try:
            engine.lifecycle.start_fresh()
        except (SessionError, StorageError) as exc:
            engine.close("a session that could not start")
            raise failed(f"cannot start a session: {exc}") from None
        return self._hold(engine, root, mcp)

    async def open(
        self, root: Path, session_id: str, mcp: Sequence[Any] = ()
    ) -> tuple[Held, DriftReport | None]:
        """Open an existing session of the project at `root` (resumed: drift, resume block)."""
        if (found := self.held.get(session_id)) is not None:
            if found.root != root:
                raise invalid(f"session {session_id} is open here for {found.root}, not {root}")
            return found, None
        engine = await self._engine(root)
        try:
            drift = engine.lifecycle.resume(session_id)
        except SessionNotFoundError:
            engine.close("a session that was not found")
            raise invalid(f"no session {session_id} in the project at {root}") from None
        except SessionLockedError as exc:
            engine.close("a session in use")
            raise failed(str(exc)) from None
        except (SessionError, StorageError) as exc:
            engine.close("a session that could not open")
            raise failed(f"cannot open session {session_id}: {exc}") from None
        return self._hold(engine, root, mcp), drift

    async def fork(self, root: Path, parent_id: str, mcp: Sequence[Any] = ()) -> Held:
        """Fork `parent_id` at its last closed turn into a new session of this process."""
        from session.fork import fork_session

        engine = await self._engine(root)
        lifecycle = engine.lifecycle
        try:
            if not lifecycle.store.exists(parent_id):
                raise invalid(f"no session {parent_id} in the project at {root}")
            result = fork_session(lifecycle.store, parent_id, instance_id=engine.config.instance_id)
            lifecycle.adopt(result.session)
        except SessionError as exc:
            engine.close("a fork that failed")
            raise failed(f"cannot fork session {parent_id}: {exc}") from None
        except BaseException:
            engine.close("a fork that failed")
            raise
        return self._hold(engine, root, mcp)

    async def close(self, session_id: str, why: str) -> None:
        """Stop the session's prompt, save it and let it go."""
        held = self.held.pop(session_id, None)
        if held is None:
            return
        turn = held.turn
        if turn is not None and not turn.done():
            turn.cancel()
            await asyncio.wait({turn}, timeout=1.5)
        held.engine.close(why)

    async def close_all(self, why: str) -> None:
        """Close every session (the process is ending)."""
        self.stopping = True
        turns = [h.turn for h in self.held.values() if h.turn is not None and not h.turn.done()]
        for turn in turns:
            turn.cancel()  # recorded `aborted` as each ends
        if turns:
            await asyncio.wait(turns, timeout=1)
        # The work after turns (summaries, indexing) stops before the sessions are closed.
        await self.tasks.cancel_all(timeout=0.3)
        for session_id in list(self.held):
            await self.close(session_id, why)

    def store_of(self, root: Path) -> SessionStore:
        """Open the configured store for the project at `root` (the caller closes it)."""
        try:
            return open_store(self.config().store, root)
        except SessionError as exc:
            raise failed(f"the session store cannot be used: {exc}") from None

    async def delete(self, session_id: str) -> None:
        """Delete a session of a project named before, as `sessions rm` does (under its lock)."""
        from session.deletion import delete_unless_in_use

        if session_id in self.held:
            await self.close(session_id, "session/delete")
        for root in sorted(self.roots):
            store = await asyncio.to_thread(self.store_of, root)
            try:
                if not await asyncio.to_thread(store.exists, session_id):
                    continue
                await asyncio.to_thread(delete_unless_in_use, store, session_id)
                return
            except SessionLockedError:
                raise failed(
                    f"session {session_id} is in use by a running agent-assist; not deleted"
                ) from None
            finally:
                await asyncio.to_thread(store.close)
        raise invalid(f"no session {session_id} in the projects this agent was asked about")
