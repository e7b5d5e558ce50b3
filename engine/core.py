"""One session's engine: its options, lifecycle, model runner, turn lock and projections.

An edge makes one `Engine` per session it serves (the LSP server one per editor
instance; the ACP agent one per ACP session) and hands it a `Host`. The engine owns what a
turn needs and what must happen after it; the edge says what happened in its protocol.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from session.errors import SessionError
from session.lifecycle import LifecycleConfig, SessionLifecycle
from session.redaction import Redactor, url_credential
from session.store.backend import SessionStore, StoreSearch
from session.store.choose import FALLBACK_HINT, open_store, store_kind

from .compaction import Compaction
from .config import ServerConfig
from .errors import UserError
from .host import Host
from .indexing import Indexing
from .model.mcp import McpServers
from .model.mcp_spec import McpServerSpec
from .model.runner import ChatRunner
from .model_server import ModelServer
from .summaries import RunningSummary
from .turns import TurnEngine

logger = logging.getLogger(__name__)


class Engine:
    """What a session's turns run on (see the module doc)."""

    def __init__(
        self,
        host: Host,
        config: ServerConfig | None = None,
        root: Path | None = None,
        *,
        redactor: Redactor | None = None,
        edge: str = "lsp",
    ) -> None:
        self.host = host
        self.edge = edge  # recorded with each turn: which edge wrote it
        self.config = config or ServerConfig()
        self.root = root or Path.cwd()
        self.lifecycle_or_none: SessionLifecycle | None = None
        self.mcp = McpServers()  # the MCP servers the edge was given (`use_mcp_servers`)
        self._runner: ChatRunner | None = None
        self.turn_lock = asyncio.Lock()  # one turn (or history operation) at a time
        self.store_error: str | None = None  # why the configured store cannot be used now
        self.closed = False
        # What the logs scrub: taught the configured key and the URL's password too.
        self.redactor = redactor or Redactor()
        self.indexing = Indexing(host.spawn)
        self.summaries = RunningSummary(self)
        self.model_server = ModelServer(self)
        self.compaction = Compaction(self)
        self.turns = TurnEngine(self)

    def configure(self, config: ServerConfig, root: Path) -> None:
        """Take the options and the project root; open the local store at once.

        Another store is opened by `connect_store` (it may take a while, or fail).
        """
        self.config = config
        self.root = root
        if store_kind(config.store) == "local":
            self.use_store(open_store(None, root))
        self.runner = ChatRunner(config.model)

    @property
    def runner(self) -> ChatRunner | None:
        """Return the model runner (None before `configure`)."""
        return self._runner

    @runner.setter
    def runner(self, runner: ChatRunner | None) -> None:
        if runner is not None:  # whoever made it (new settings too): the session's servers
            runner.mcp = self.mcp
        self._runner = runner

    def use_mcp_servers(self, specs: Sequence[McpServerSpec]) -> None:
        """Offer these MCP servers' tools to the model from the next turn on.

        `ValueError` (saying what) if two share a name; servers given before are stopped, but
        those given again alike, which go on. A stdio server without a `cwd` runs in the
        project's root.
        """
        root = str(self.root)
        specs = [s if s.cwd or s.transport != "stdio" else replace(s, cwd=root) for s in specs]
        old = self.mcp
        self.mcp = McpServers(specs, keep=old)
        if self._runner is not None:
            self._runner.mcp = self.mcp
        self._stop_mcp(old)

    def _stop_mcp(self, servers: McpServers) -> None:
        """Stop `servers` in the background; with no event loop, the process is ending.

        A stdio server then ends as its input closes with this process.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self.host.spawn(servers.aclose(), "stopping MCP servers")

    def use_store(self, store: SessionStore) -> None:
        """Make the session lifecycle over `store`."""
        model = self.config.model
        secrets = tuple(s for s in (model.api_key, url_credential(model.base_url)) if s)
        for secret in secrets:  # never in a log record either
            self.redactor.add_secret(secret)
        self.lifecycle_or_none = SessionLifecycle(
            store,
            self.config.instance_id,
            LifecycleConfig(
                tracked=self.config.tracked_files,
                persistence=self.config.persistence,
                secrets=secrets,
                history_tokens=self.config.history_budget,
                offer_unheld=self.config.instance_derived,
                editor=self.config.editor,
                edge=self.edge,
                client=self.config.client,
            ),
        )

    async def connect_store(self) -> bool:
        """Open the configured store if it is not open yet; False (and why: `store_error`)."""
        if self.lifecycle_or_none is not None:
            return True
        try:
            # A database that does not answer opens offline: the session is kept on this
            # machine and sent when it answers (`session/pg/offline.py`).
            store = await asyncio.to_thread(
                open_store, self.config.store, self.root, offline_ok=True
            )
        except SessionError as exc:
            self.store_error = f"agent-assist cannot use its session store: {exc}; {FALLBACK_HINT}"
            return False
        if self.closed:  # the edge went away while we connected
            await asyncio.to_thread(store.close)
            return False
        self.store_error = None
        self.use_store(store)
        return True

    @property
    def lifecycle(self) -> SessionLifecycle:
        """Return the lifecycle (once the store is open), else say why there is none.

        `lifecycle_or_none` is the same object, None before the store is open.
        """
        if self.lifecycle_or_none is None:
            raise UserError(self.store_error or "the server is not initialized yet")
        return self.lifecycle_or_none

    @property
    def search(self) -> StoreSearch:
        """Return the project's search (opened on first use; see `StoreSearch`)."""
        return self.indexing.search(self.lifecycle)

    def index_in_background(self) -> None:
        """Index the current session in a worker thread (see `indexing`)."""
        self.indexing.in_background(self.lifecycle_or_none)

    def session_started(self) -> None:
        """Once the session is settled: ask the model server about itself, in the background."""
        self.model_server.learn()

    def save_after_error(self) -> None:
        """Autosave after an internal error (best effort: another error is being reported)."""
        if self.lifecycle_or_none is None:
            return
        try:
            self.lifecycle_or_none.snapshot_and_save()
        except Exception:
            logger.exception("autosave after an internal error failed")

    def close(self, why: str) -> None:
        """Autosave and release the session, close the store, stop the MCP servers (idempotent).

        Never raises.
        """
        if self.mcp:
            self._stop_mcp(self.mcp)
            self.mcp = McpServers()
            if self._runner is not None:
                self._runner.mcp = self.mcp
        if self.lifecycle_or_none is None or self.closed:
            return
        self.closed = True
        target = self.indexing.target(self.lifecycle_or_none)
        try:
            saved = self.lifecycle_or_none.close()
            logger.info("autosave on %s: %s", why, "written" if saved else "skipped")
        except Exception as exc:  # on the way out: report it, never raise it
            logger.error("autosave on %s failed: %s", why, exc)
        # The session is saved first: indexing is a projection, and a worker sync still
        # running (it holds the index) must not keep the snapshot from being written.
        self.indexing.sync_at_exit(target)
        try:
            self.lifecycle_or_none.store.close()
        except Exception as exc:
            logger.error("closing the session store failed: %s", exc)
        self.indexing.close()
