"""The language server: one session lifecycle per editor instance; features do the rest."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Awaitable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcParseError
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from engine.config import ServerConfig, parse_initialization_options
from engine.core import Engine
from engine.errors import UserError
from engine.host import Reporter
from engine.model.runner import ChatRunner
from session.lifecycle import SessionLifecycle
from session.redaction import Redactor
from session.store.backend import StoreSearch
from session.workspace.drift import DriftReport

from . import __version__
from . import protocol as proto
from .edits import WorkspaceEdits
from .progress import progress
from .transport import AgentAssistProtocol, PipeReader, keep_params_as_dicts, readable_in_loop

logger = logging.getLogger(__name__)

FeatureT = TypeVar("FeatureT")


class RequestFailedError(JsonRpcException):
    """RequestFailed (-32803): something the user can fix; the message says what."""

    CODE = proto.REQUEST_FAILED
    MESSAGE = "Request failed"


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
        self.initialize_params: types.InitializeParams | None = None
        self.ready = asyncio.Event()
        self.drift_count = 0  # tracked files changed outside the assistant (status.drift)
        self.origin: proto.SessionOrigin | None = None  # how this session came to be ours
        self.tasks: set[asyncio.Task[Any]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self.stop_watching = threading.Event()
        # In-flight request handlers, cancelled (and briefly awaited) when the process ends.
        self.requests: set[asyncio.Task[Any]] = set()
        self.stdout: BinaryIO | None = None
        self.shutdown_requested = False
        self.output_closed = False  # nothing more is written to the client
        self.finishing = False
        self.features: dict[type[Any], Any] = {}  # installed by features.install, in order
        self._edits = WorkspaceEdits(self)
        # What the log filters scrub (`cli`): taught the configured key and URL password too.
        self.log_redactor = Redactor()
        # The turn and everything it needs: this edge only translates it to LSP.
        self.engine = Engine(self, redactor=self.log_redactor)

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
        config, warnings = parse_initialization_options(
            params.initialization_options, client, os.environ, params.process_id
        )
        root: str | None = None
        if params.workspace_folders:
            root = to_fs_path(params.workspace_folders[0].uri)
        elif params.root_uri:
            root = to_fs_path(params.root_uri)
        elif params.root_path:
            root = params.root_path
        self.engine.configure(config, Path(root).resolve() if root else Path.cwd())
        return warnings

    # The engine's state, as the features read and set it.

    @property
    def config(self) -> ServerConfig:
        """Return the options (the engine's)."""
        return self.engine.config

    @config.setter
    def config(self, config: ServerConfig) -> None:
        self.engine.config = config

    @property
    def root(self) -> Path:
        """Return the project root."""
        return self.engine.root

    @property
    def runner(self) -> ChatRunner | None:
        """Return the model runner."""
        return self.engine.runner

    @runner.setter
    def runner(self, runner: ChatRunner | None) -> None:
        self.engine.runner = runner

    @property
    def turn_lock(self) -> asyncio.Lock:
        """Return the lock a turn (or a history operation) holds."""
        return self.engine.turn_lock

    @property
    def store_error(self) -> str | None:
        """Return why the configured store cannot be used now."""
        return self.engine.store_error

    async def connect_store(self) -> bool:
        """Open the configured store if it is not open yet; False (and why: `store_error`)."""
        return await self.engine.connect_store()

    @property
    def lifecycle(self) -> SessionLifecycle:
        """Return this instance's session lifecycle (after initialize, once the store is open).

        Before that a request is answered with why; `engine.lifecycle_or_none` is None meanwhile.
        """
        try:
            return self.engine.lifecycle
        except UserError as exc:
            raise RequestFailedError(exc.message) from None

    @lifecycle.setter
    def lifecycle(self, lifecycle: SessionLifecycle | None) -> None:
        self.engine.lifecycle_or_none = lifecycle

    @property
    def store_search(self) -> StoreSearch:
        """Return the project's search (opened on first use; see `StoreSearch`)."""
        return self.engine.indexing.search(self.lifecycle)

    def index_in_background(self) -> None:
        """Index the current session in a worker thread (see `engine.indexing`)."""
        self.engine.index_in_background()

    # -- the engine's host ----------------------------------------------------------------

    @property
    def edits(self) -> WorkspaceEdits:
        """Return the tools' editor side: `workspace/applyEdit` and the user's questions."""
        return self._edits

    def long_work(self, title: str) -> AbstractAsyncContextManager[Reporter]:
        """Show `$/progress` for the duration of the block (nothing if the client cannot)."""
        return progress(self, title)

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
        lifecycle = self.lifecycle
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
        self.engine.save_after_error()

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
        if self.engine.lifecycle_or_none is None or self.closed:
            return
        self.closed = True
        self.stop_watching.set()
        self.engine.close(why)

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
