"""The language server: one session lifecycle per editor instance; features do the rest."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcParseError
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from engine.config import ServerConfig, parse_initialization_options
from engine.model.runner import ChatRunner
from session.errors import SessionError
from session.lifecycle import LifecycleConfig, SessionLifecycle
from session.redaction import Redactor, url_credential
from session.search import SearchIndex
from session.store.backend import SessionStore
from session.store.choose import FALLBACK_HINT, open_store, store_kind
from session.store.manager import SessionManager
from session.workspace.drift import DriftReport

from . import __version__
from . import protocol as proto
from .edits import WorkspaceEdits
from .transport import AgentAssistProtocol, PipeReader, keep_params_as_dicts, readable_in_loop

logger = logging.getLogger(__name__)

FeatureT = TypeVar("FeatureT")


class RequestFailedError(JsonRpcException):
    """RequestFailed (-32803): something the user can fix; the message says what."""

    CODE = proto.REQUEST_FAILED
    MESSAGE = "Request failed"


def _sync_quietly(index: SearchIndex, manager: SessionManager, session_id: str) -> None:
    """Sync one session into the index; a failure is logged (the index is a projection)."""
    try:
        index.sync_session(manager, session_id)
    except Exception as exc:  # never fail a turn for it
        logger.warning("search index not updated: %s", exc)


def drift_summary(drift: DriftReport) -> str:
    """Return a one-line description of drift for a warning message."""
    parts = [f"{p}: modified" for p in drift.modified]
    parts += [f"{p}: deleted" for p in drift.deleted]
    parts += [f"{p}: created" for p in drift.created]
    shown = ", ".join(parts[:10]) + (f" (+{len(parts) - 10} more)" if len(parts) > 10 else "")
    return f"Files changed since the last session: {shown}"


class AgentAssistServer(LanguageServer):
    """pygls server holding this editor instance's configuration and session."""

    def __init__(self) -> None:
        super().__init__(
            "agent-assist",
            __version__,
            converter_factory=keep_params_as_dicts,
            protocol_cls=AgentAssistProtocol,
        )
        self.config = ServerConfig()
        self.initialize_params: types.InitializeParams | None = None
        self.root: Path = Path.cwd()
        self.lifecycle: SessionLifecycle | None = None
        self.runner: ChatRunner | None = None
        self.ready = asyncio.Event()
        self.turn_lock = asyncio.Lock()
        self.drift_count = 0  # tracked files changed outside the assistant (status.drift)
        self.origin: proto.SessionOrigin | None = None  # how this session came to be ours
        self.tasks: set[asyncio.Task[Any]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self.stop_watching = threading.Event()
        self._search: SearchIndex | None = None
        self._indexing: asyncio.Task[None] | None = None  # the worker sync running, if any
        self._index_next: tuple[SearchIndex, SessionManager, str] | None = None
        self.store_error: str | None = None  # why the configured store cannot be used now
        # In-flight request handlers, cancelled (and briefly awaited) when the process ends.
        self.requests: set[asyncio.Task[Any]] = set()
        self.stdout: BinaryIO | None = None
        self.shutdown_requested = False
        self.output_closed = False  # nothing more is written to the client
        self.finishing = False
        self.features: dict[type[Any], Any] = {}  # installed by features.install, in order
        self.edits = WorkspaceEdits(self)
        # What the log filters scrub (`cli`): taught the configured key and URL password too.
        self.log_redactor = Redactor()

    def _start_io_async(
        self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
    ) -> None:
        """Serve stdio until the client goes; every ending leaves through `finish`.

        stdin is read in the event loop when it is a pipe (see PipeReader), else through
        pygls' thread-pool reader.
        """
        stdin = stdin or sys.stdin.buffer
        stdout = stdout or sys.stdout.buffer
        self.stdout = stdout
        self._stop_event = stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout))
        in_loop = readable_in_loop(stdin, stdout)
        logger.info("Starting async IO server%s", " (stdin read in the event loop)" * in_loop)

        async def serve() -> None:
            loop = self.loop = asyncio.get_running_loop()
            transport: asyncio.BaseTransport | None = None
            reader: Any
            if in_loop:
                stream = asyncio.StreamReader(loop=loop)
                transport, _ = await loop.connect_read_pipe(
                    lambda: asyncio.StreamReaderProtocol(stream), stdin
                )
                reader = PipeReader(stream)
            else:
                reader = StdinAsyncReader(stdin, self.thread_pool)
            try:
                await run_async(
                    stop_event=stop_event,
                    reader=reader,
                    protocol=self.protocol,
                    logger=logger,
                    error_handler=self.report_server_error,
                )
            finally:
                if transport is not None:
                    transport.close()
            await self.finish("end of input", 0 if self.shutdown_requested else 1)

        try:
            asyncio.run(serve())
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.exit_now("server stop", 0)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log a message-loop error; answer a body that is not JSON with -32700."""
        if isinstance(error, ValueError) and not isinstance(error, JsonRpcException):
            protocol = self.protocol
            if isinstance(protocol, AgentAssistProtocol):
                protocol.send_error(None, JsonRpcParseError())
        logger.error("%s", error)

    # -- state ------------------------------------------------------------------------

    def configure(self, params: types.InitializeParams) -> list[str]:
        """Parse init options and pick the project root; return user-facing warnings."""
        self.initialize_params = params
        client = params.client_info.name if params.client_info else None
        self.config, warnings = parse_initialization_options(
            params.initialization_options, client, os.environ, params.process_id
        )
        root: str | None = None
        if params.workspace_folders:
            root = to_fs_path(params.workspace_folders[0].uri)
        elif params.root_uri:
            root = to_fs_path(params.root_uri)
        elif params.root_path:
            root = params.root_path
        self.root = Path(root).resolve() if root else Path.cwd()
        if store_kind(self.config.store) == "local":
            self._use_store(SessionManager(self.root))
        # else: connected in the background by `connect_store` (requests wait until then)
        self.runner = ChatRunner(self.config.model)
        return warnings

    def _use_store(self, store: SessionStore) -> None:
        model = self.config.model
        secrets = tuple(s for s in (model.api_key, url_credential(model.base_url)) if s)
        for secret in secrets:  # never in a log record either (stderr, window/logMessage)
            self.log_redactor.add_secret(secret)
        self.lifecycle = SessionLifecycle(
            store,
            self.config.instance_id,
            LifecycleConfig(
                tracked=self.config.tracked_files,
                persistence=self.config.persistence,
                secrets=secrets,
                history_tokens=self.config.history_budget,
                offer_unheld=self.config.instance_derived,
                editor=self.config.editor,
            ),
        )

    async def connect_store(self) -> bool:
        """Open the configured store if it is not open yet; False (and why: `store_error`)."""
        if self.lifecycle is not None:
            return True
        try:
            store = await asyncio.to_thread(open_store, self.config.store, self.root)
        except SessionError as exc:
            self.store_error = f"agent-assist cannot use its session store: {exc}; {FALLBACK_HINT}"
            return False
        if self.closed:  # the editor went while we connected
            await asyncio.to_thread(store.close)
            return False
        self.store_error = None
        self._use_store(store)
        return True

    @property
    def session(self) -> SessionLifecycle:
        """Return the lifecycle (after initialize, once the store is open)."""
        if self.lifecycle is None:
            raise RequestFailedError(self.store_error or "the server is not initialized yet")
        return self.lifecycle

    @property
    def search_index(self) -> SearchIndex:
        """Return the project's search index (opened on first use)."""
        if self._search is None:
            self._search = SearchIndex.for_project(self.session.manager)
        return self._search

    def _index_target(self) -> tuple[SearchIndex, SessionManager, str] | None:
        """Return what a sync of the current session syncs (None: none, or not the local store)."""
        if self.lifecycle is None or self.lifecycle.session is None:
            return None
        if self.lifecycle.store.kind != "local":
            return None  # the database's search indexes what it holds itself
        return self.search_index, self.lifecycle.manager, self.lifecycle.session_id

    def index_in_background(self) -> None:
        """Index the current session in a worker thread: the event loop never waits for it.

        A sync is usually under a millisecond, but one that recounts the trigrams or lets
        FTS5 merge its segments takes up to a second on a large index (1M events).
        Requests made meanwhile are queued into one more sync after it.
        """
        target = self._index_target()
        if target is None:
            return
        self._index_next = target
        if self._indexing is None or self._indexing.done():
            self._indexing = self.spawn(self._index_queued(), "search index sync")

    async def _index_queued(self) -> None:
        while (target := self._index_next) is not None:
            self._index_next = None
            await asyncio.to_thread(_sync_quietly, *target)

    # -- client I/O ---------------------------------------------------------------------

    def notify(self, params: proto.Notification) -> None:
        """Send one of the contract's notifications."""
        body = params.wire()
        protocol = self.protocol
        if isinstance(protocol, AgentAssistProtocol):
            protocol.notify_json(params.METHOD, body)
        else:
            protocol.notify(params.METHOD, body)

    def announce(self, reason: proto.SessionChangeReason, drift: DriftReport | None = None) -> None:
        """Tell the client that this instance's session changed: the one way it is said.

        Shows the lifecycle's pending warnings, sets `status.drift` and sends
        `agentAssist/drift` for drift found on the way in (also as a message on a resume,
        unless the client renders drift itself: `driftMessages: false`), then
        `agentAssist/sessionChanged`.
        """
        lifecycle = self.session
        for warning in lifecycle.warnings:
            self.show(warning)
        lifecycle.warnings.clear()
        if reason != proto.SessionChangeReason.RESTORED:
            self.drift_count = 0
            origins = {o.value for o in proto.SessionOrigin}
            self.origin = proto.SessionOrigin(reason) if reason in origins else None
        session_id = lifecycle.session_id
        if drift is not None and drift.has_drift:
            self.drift_count = len(drift.modified) + len(drift.deleted) + len(drift.created)
            shown = reason == proto.SessionChangeReason.RESUMED and self.config.drift_messages
            if shown:
                self.show(drift_summary(drift))
            self.notify(proto.DriftParams.of(session_id, "resume", drift, message_shown=shown))
        self.notify(proto.SessionChangedParams(session_id=session_id, reason=reason))

    def get_feature(self, kind: type[FeatureT]) -> FeatureT:
        """Return the installed feature of that class."""
        feature = self.features.get(kind)
        if not isinstance(feature, kind):
            raise RequestFailedError(f"the {kind.__name__} feature is not available")
        return feature

    def save_after_error(self) -> None:
        """Autosave after an internal error (best effort: another error is being reported)."""
        if self.lifecycle is None:
            return
        try:
            self.lifecycle.snapshot_and_save()
        except Exception:
            logger.exception("autosave after an internal error failed")

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """Show a message in the editor."""
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        """Run a tracked background task whose failure is logged, never lost."""
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        task.set_name(name)
        self.tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self.tasks.discard(t)
            if not t.cancelled() and (exc := t.exception()) is not None:
                logger.error("task %s failed: %s", name, exc, exc_info=exc)

        task.add_done_callback(done)
        return task

    def autosave(self, why: str) -> None:
        """Autosave and release the session (idempotent); never raises."""
        if self.lifecycle is None or self.closed:
            return
        self.closed = True
        self.stop_watching.set()
        target = self._index_target()
        try:
            saved = self.lifecycle.close()
            logger.info("autosave on %s: %s", why, "written" if saved else "skipped")
        except Exception as exc:  # on the way out: report it, never raise it
            logger.error("autosave on %s failed: %s", why, exc)
        # The session is saved first: indexing is a projection, and a worker sync still
        # running (it holds the index) must not keep the snapshot from being written.
        if target is not None and (self._indexing is None or self._indexing.done()):
            _sync_quietly(*target)
        try:
            self.lifecycle.store.close()
        except Exception as exc:
            logger.error("closing the session store failed: %s", exc)
        if self._search is not None:
            self._search.close()

    def transport_lost(self, exc: BaseException) -> None:
        """Handle a lost stdout reader: say so once, stop writing, and leave."""
        if self.output_closed:
            return
        self.output_closed = True
        logger.warning("the connection to the editor is lost (%s); stopping", exc)
        self.finish_soon("the editor closed the connection", 1)

    def finish_soon(self, why: str, code: int) -> None:
        """Leave through `finish` from any thread or callback (a signal, a failed write)."""
        from .lifetime import start_watchdog

        start_watchdog(code, why)  # even if the loop never runs `finish`
        loop = self.loop
        if loop is None or loop.is_closed():
            self.exit_now(why, code)

        def schedule() -> None:
            self.spawn(self.finish(why, code), f"finish ({why})")

        try:
            loop.call_soon_threadsafe(schedule)
        except RuntimeError:  # the loop is closing
            self.exit_now(why, code)

    async def cancel_work(self, timeout: float) -> None:
        """Cancel in-flight requests and background tasks; give them `timeout` to record."""
        current = asyncio.current_task()
        pending = [t for t in (*self.requests, *self.tasks) if t is not current and not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    async def finish(self, why: str, code: int) -> None:
        """Leave the one way out: stop writing, cancel work (briefly awaited), autosave, exit."""
        from .lifetime import GRACE_SECONDS, start_watchdog

        if self.finishing:  # another ending is already on its way out
            await asyncio.Event().wait()
        self.finishing = True
        start_watchdog(code, why)
        if why != "shutdown":
            self.output_closed = True  # nothing reaches stdout after `exit`
        await self.cancel_work(GRACE_SECONDS)
        self.exit_now(why, code)

    def exit_now(self, why: str, code: int) -> NoReturn:
        """Autosave and end the process at once (never returns)."""
        from .lifetime import hard_exit

        self.output_closed = True
        self.autosave(why)
        hard_exit(code)
        raise AssertionError("unreachable")  # pragma: no cover - os._exit does not return
