"""The language server: one session lifecycle per editor instance, thin handlers."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import os
import stat
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, Protocol, TypeVar

import cattrs
import orjson
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    LanguageServerProtocol,
    default_converter,
)
from pygls.uris import from_fs_path, to_fs_path

from session.lifecycle import LifecycleConfig, SessionLifecycle
from session.manager import SessionError, SessionManager
from session.search import SearchIndex
from session.storage import StorageError, explain_write_error

from . import __version__
from . import protocol as proto
from .agent import ChatRunner
from .config import ServerConfig, parse_initialization_options

logger = logging.getLogger(__name__)

P = TypeVar("P", bound=proto.Params)
Handler = Callable[["AgentAssistServer", Any], Awaitable[Any]]


class RequestFailedError(JsonRpcException):
    """RequestFailed (-32803): something the user can fix; the message says what."""

    CODE = proto.REQUEST_FAILED
    MESSAGE = "Request failed"


def _keep_params_as_dicts() -> cattrs.Converter:
    """Build a converter that keeps custom params as plain JSON (pydantic validates them)."""
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]

    def request(obj: dict[str, Any], cls: type) -> Any:
        return cls(
            id=obj.get("id"),
            method=obj.get("method", ""),
            jsonrpc=obj.get("jsonrpc", ""),
            params=obj.get("params"),
        )

    def notification(obj: dict[str, Any], cls: type) -> Any:
        return cls(
            method=obj.get("method", ""), jsonrpc=obj.get("jsonrpc", ""), params=obj.get("params")
        )

    converter.register_structure_hook(JsonRPCRequestMessage, request)
    converter.register_structure_hook(JsonRPCNotification, notification)
    return converter


_HEADER_TAIL = b"\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"


class PipeReader:
    """pygls' reader interface over an asyncio stream: no thread hop per header line or body.

    pygls reads stdin in its thread pool, one executor round trip per header line and per
    body (three or four per message, ~0.3 ms each on a busy machine); reading the pipe in
    the event loop itself makes a request reach its handler in one wake-up.
    """

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.stream = stream

    async def readline(self) -> bytes:
        """Return the next line with its newline (shorter at end of input, b"" at EOF)."""
        pieces: list[bytes] = []
        while True:
            try:
                pieces.append(await self.stream.readuntil(b"\n"))
            except asyncio.IncompleteReadError as exc:
                pieces.append(exc.partial)
            except asyncio.LimitOverrunError as exc:  # a huge line: take it in pieces
                pieces.append(await self.stream.readexactly(max(1, exc.consumed)))
                continue
            return b"".join(pieces)

    async def readexactly(self, n: int) -> bytes:
        """Return `n` bytes (fewer at end of input, like a blocking `read(n)`)."""
        try:
            return await self.stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


def _readable_in_loop(stdin: BinaryIO, stdout: BinaryIO) -> bool:
    """Return True if stdin is a pipe or socket that is not also stdout.

    The event loop makes the descriptor non-blocking: never a terminal or file (shared with
    a shell), nor the very object written with blocking writes.
    """
    if sys.platform == "win32":
        return False
    try:
        st_in = os.fstat(stdin.fileno())
        st_out = os.fstat(stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    if not (stat.S_ISFIFO(st_in.st_mode) or stat.S_ISSOCK(st_in.st_mode)):
        return False
    return (st_in.st_dev, st_in.st_ino) != (st_out.st_dev, st_out.st_ino)


class AgentAssistProtocol(LanguageServerProtocol):
    """pygls' protocol, answering malformed JSON-RPC instead of dropping or crashing on it."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Structure a message; one that cannot be is kept raw (an invalid request)."""
        try:
            return super().structure_message(data)
        except JsonRpcException:
            return data

    def handle_message(self, message: Any) -> None:
        """Answer -32600 to anything that is not a JSON-RPC request, notification or reply."""
        raw = message if isinstance(message, dict) else None
        msg_id = raw.get("id") if raw is not None else getattr(message, "id", None)
        method = raw.get("method") if raw is not None else getattr(message, "method", "")
        valid_id = msg_id is None or (
            isinstance(msg_id, str | int) and not isinstance(msg_id, bool)
        )
        if raw is not None or not hasattr(message, "jsonrpc") or not isinstance(method, str):
            self.send_error(msg_id if valid_id else None, JsonRpcInvalidRequest())
            return
        if not valid_id:
            self.send_error(None, JsonRpcInvalidRequest())
            return
        super().handle_message(message)

    def notify_json(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification whose params are plain JSON, serialized in one step.

        pygls builds an attrs message, unstructures it with cattrs and `json.dumps` it
        (~16 µs); a chat streams one notification per delta. Anything orjson refuses
        (lone surrogates, non-string keys, huge ints) takes pygls' own path.
        """
        try:
            body = orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params})
        except TypeError:
            super().notify(method, params)
            return
        self._write_frame(b"Content-Length: %d%s%s" % (len(body), _HEADER_TAIL, body))

    def _send_data(self, data: Any) -> None:
        """Send a message (pygls' serialization), through the one guarded write."""
        if not data:
            return
        try:
            body = json.dumps(data, default=self._serialize_message).encode(self.CHARSET)
        except Exception as error:  # a result that cannot be serialized: answer the error
            logger.exception("cannot serialize a message")
            self._server._report_server_error(error, JsonRpcInternalError)
            return
        if not self._include_headers:
            self._write_frame(body)
            return
        self._write_frame(b"Content-Length: %d%s%s" % (len(body), _HEADER_TAIL, body))

    def _write_frame(self, frame: bytes) -> None:
        """Write one framed message; a transport that is gone is reported once, never raised.

        Raising here would fail whatever was sending (a streamed delta would fail its turn),
        and logging each failure as an error would be forwarded to the same dead transport.
        """
        server = self._server
        writer = self.writer
        if writer is None or (isinstance(server, AgentAssistServer) and server.output_closed):
            return
        try:
            sent = writer.write(frame)
            if inspect.isawaitable(sent):  # a websocket writer
                asyncio.ensure_future(sent)
        except (OSError, ValueError) as exc:  # EPIPE, a closed file, ECONNRESET...
            if isinstance(server, AgentAssistServer):
                server.transport_lost(exc)
            else:
                raise

    def send_error(self, msg_id: Any, error: JsonRpcException) -> None:
        """Send an error response (id null when the request's id is unknown)."""
        # A plain dict: the converter would drop `"id": null`, which JSON-RPC requires.
        body = {"code": error.code, "message": error.message}
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": body})


class BackgroundWork(Protocol):
    """Work a completed turn starts in the background (the running summary)."""

    def schedule(self) -> None:
        """Start it soon."""
        ...


class AgentAssistServer(LanguageServer):
    """pygls server holding this editor instance's configuration and session."""

    def __init__(self) -> None:
        super().__init__(
            "agent-assist",
            __version__,
            converter_factory=_keep_params_as_dicts,
            protocol_cls=AgentAssistProtocol,
        )
        self.config = ServerConfig()
        self.root: Path = Path.cwd()
        self.lifecycle: SessionLifecycle | None = None
        self.runner: ChatRunner | None = None
        self.ready = asyncio.Event()
        self.turn_lock = asyncio.Lock()
        self.running = False
        self.waiting = 0
        self.drift_count = 0
        self.tasks: set[asyncio.Task[Any]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self.stop_watching = threading.Event()
        self._search: SearchIndex | None = None
        # In-flight request handlers, cancelled (and briefly awaited) when the process ends.
        self.requests: set[asyncio.Task[Any]] = set()
        self.stdout: BinaryIO | None = None
        self.shutdown_requested = False
        self.output_closed = False  # nothing more is written to the client
        self.finishing = False
        self.summaries: BackgroundWork | None = None  # set by the running-summary feature

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
        in_loop = _readable_in_loop(stdin, stdout)
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
        client = params.client_info.name if params.client_info else None
        self.config, warnings = parse_initialization_options(
            params.initialization_options, client, os.environ
        )
        root: str | None = None
        if params.workspace_folders:
            root = to_fs_path(params.workspace_folders[0].uri)
        elif params.root_uri:
            root = to_fs_path(params.root_uri)
        elif params.root_path:
            root = params.root_path
        self.root = Path(root).resolve() if root else Path.cwd()
        manager = SessionManager(self.root)
        secrets = (self.config.model.api_key,) if self.config.model.api_key else ()
        self.lifecycle = SessionLifecycle(
            manager,
            self.config.instance_id,
            LifecycleConfig(
                tracked=self.config.tracked_files,
                persistence=self.config.persistence,
                secrets=secrets,
                history_tokens=self.config.history_budget,
            ),
        )
        self.runner = ChatRunner(self.config.model)
        return warnings

    @property
    def session(self) -> SessionLifecycle:
        """Return the lifecycle (after initialize)."""
        if self.lifecycle is None:
            raise RequestFailedError("the server is not initialized yet")
        return self.lifecycle

    @property
    def search_index(self) -> SearchIndex:
        """Return the project's search index (opened on first use)."""
        if self._search is None:
            self._search = SearchIndex.for_project(self.session.manager)
        return self._search

    def index_session(self) -> None:
        """Bring the search index up to date with the current session (best effort)."""
        if self.lifecycle is None or self.lifecycle.session is None:
            return
        try:
            self.search_index.sync_session(self.lifecycle.manager, self.lifecycle.session_id)
        except Exception as exc:  # the index is a projection: never fail a turn for it
            logger.warning("search index not updated: %s", exc)

    # -- client I/O ---------------------------------------------------------------------

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a custom notification (plain JSON params)."""
        protocol = self.protocol
        if isinstance(protocol, AgentAssistProtocol):
            protocol.notify_json(method, params)
        else:
            protocol.notify(method, params)

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

    def supports_apply_edit(self) -> bool:
        """Return True if the client can apply workspace edits."""
        caps = self.client_capabilities.workspace
        return bool(caps and caps.apply_edit)

    async def apply_file_edit(self, relative: str, content: str) -> bool:
        """Replace a file's content through `workspace/applyEdit` (undoable in the editor)."""
        if not self.supports_apply_edit():
            return False
        path = self.root / relative
        uri = from_fs_path(str(path))
        if uri is None:
            return False
        changes: list[Any] = []
        ops = self.client_capabilities.workspace
        edit_caps = ops.workspace_edit if ops else None
        document_changes = bool(edit_caps and edit_caps.document_changes)
        if not path.exists():
            kinds = (edit_caps.resource_operations or []) if edit_caps else []
            if types.ResourceOperationKind.Create not in kinds or not document_changes:
                return False
            changes.append(types.CreateFile(uri=uri, options=types.CreateFileOptions()))
            current = ""
        else:
            document = self.workspace.text_documents.get(uri)
            current = (
                document.source
                if document is not None
                else path.read_text(encoding="utf-8", errors="replace")
            )
        lines = current.split("\n")
        end = types.Position(line=len(lines) - 1, character=len(lines[-1].encode("utf-16-le")) // 2)
        text_edit = types.TextEdit(types.Range(types.Position(0, 0), end), content)
        if document_changes:
            changes.append(
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri),
                    edits=[text_edit],
                )
            )
            edit = types.WorkspaceEdit(document_changes=changes)
        else:
            edit = types.WorkspaceEdit(changes={uri: [text_edit]})
        result = await self.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(
                edit=edit,
                label=f"Agent Assist: write {relative}",
            )
        )
        return bool(result and result.applied)

    # -- lifecycle ----------------------------------------------------------------------

    def autosave(self, why: str) -> None:
        """Autosave and release the session (idempotent); never raises."""
        if self.lifecycle is None or self.closed:
            return
        self.closed = True
        self.stop_watching.set()
        self.index_session()
        try:
            saved = self.lifecycle.close()
            logger.info("autosave on %s: %s", why, "written" if saved else "skipped")
        except Exception as exc:  # on the way out: report it, never raise it
            logger.error("autosave on %s failed: %s", why, exc)
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


def request_handler(
    server: AgentAssistServer, method: str, model: type[P]
) -> Callable[[Callable[[AgentAssistServer, P], Awaitable[Any]]], Handler]:
    """Register `fn` for `method` and its `agentAssist.<verb>` command, with error mapping."""

    def decorate(fn: Callable[[AgentAssistServer, P], Awaitable[Any]]) -> Handler:
        @functools.wraps(fn)
        async def handle(ls: AgentAssistServer, raw: Any) -> Any:
            try:
                params = proto.parse_params(model, method, raw)
            except proto.ParamsError as exc:
                raise JsonRpcInvalidParams(str(exc)) from None
            task = asyncio.current_task()
            if task is not None:
                ls.requests.add(task)
                task.add_done_callback(ls.requests.discard)
            try:
                return await fn(ls, params)
            except (asyncio.CancelledError, JsonRpcException):
                raise
            except (SessionError, StorageError) as exc:
                raise RequestFailedError(explain_write_error(str(exc), exc.errno)) from None
            except Exception as exc:
                logger.exception("%s failed", method)
                if ls.lifecycle is not None:
                    try:
                        ls.lifecycle.snapshot_and_save()
                    except Exception:  # best effort while reporting another error
                        logger.exception("autosave after an internal error failed")
                raise JsonRpcInternalError(f"{method}: internal error: {exc}") from None

        server.feature(method)(handle)

        async def command(ls: AgentAssistServer, *args: Any) -> Any:
            return await handle(ls, list(args))

        server.command(proto.command_name(method))(command)
        return handle

    return decorate
