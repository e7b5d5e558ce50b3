"""`LspClient`: one `agent-assist serve` subprocess and the JSON-RPC conversation with it.

It frames messages, matches responses, has `EditorSide` answer the requests a server sends
to an editor (`window/showMessageRequest`, `workspace/applyEdit`, `client/registerCapability`,
`window/workDoneProgress/create`) and hands every notification to listeners.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import sys
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import protocol as proto
from .editor import Asker, EditorSide, EditReviewer, client_capabilities
from .errors import LspError, ServerExitedError
from .workspace_edit import path_to_uri

logger = logging.getLogger(__name__)

Listener = Callable[[Any], None]

SHOW_MESSAGE = "window/showMessage"
LOG_MESSAGE = "window/logMessage"
PROGRESS = "$/progress"
STDERR_LINES = 200
_KEPT_NOTIFICATIONS = 1000


@dataclass
class PendingRequest:
    """A request on its way: its id (for `$/cancelRequest`) and the future of its result."""

    id: int
    method: str
    future: asyncio.Future[Any]


class LspClient:
    """One `agent-assist serve` subprocess and the LSP conversation with it."""

    def __init__(
        self,
        workspace: Path,
        *,
        instance_id: str,
        options: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        command: Sequence[str] | None = None,
        ask: Asker | None = None,
        review: EditReviewer | None = None,
        client_name: str = "agent-assist-terminal",
        stderr_sink: Callable[[str], None] | None = None,
    ) -> None:
        self.workspace = workspace.resolve()
        self.instance_id = instance_id
        self.options = dict(options or {})
        self.env = dict(env) if env is not None else dict(os.environ)
        if command is None:
            command = [sys.executable, "-m", "lsp_server.cli", "serve"]
            # The server runs this same code, even from a source checkout that is not installed.
            source = str(Path(__file__).resolve().parents[2])
            paths = [p for p in self.env.get("PYTHONPATH", "").split(os.pathsep) if p]
            self.env["PYTHONPATH"] = os.pathsep.join([source, *(p for p in paths if p != source)])
        self.command = list(command)
        self.client_name = client_name
        self.stderr_sink = stderr_sink
        self.editor_side = EditorSide(self.workspace, ask, review)
        self.notifications: dict[str, deque[Any]] = defaultdict(
            lambda: deque(maxlen=_KEPT_NOTIFICATIONS)
        )
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_LINES)
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self.returncode: int | None = None
        self._listeners: dict[str, list[Listener]] = defaultdict(list)
        self._ids = itertools.count(1)
        self._pending: dict[int, PendingRequest] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._process: asyncio.subprocess.Process | None = None
        self._session_changed = asyncio.Event()
        self._exited = asyncio.Event()
        self._closed = False

    # -- listeners ------------------------------------------------------------------------

    def on(self, method: str, listener: Listener) -> None:
        """Call `listener(params)` for every notification `method` from the server."""
        self._listeners[method].append(listener)

    # -- process ----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Return True while the server process is alive."""
        return self._process is not None and self._process.returncode is None

    @property
    def pid(self) -> int | None:
        """Return the server's process id."""
        return self._process.pid if self._process is not None else None

    def _spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and (exc := t.exception()) is not None:
                logger.error("lsp client task %s failed: %s", name, exc, exc_info=exc)

        task.add_done_callback(done)
        return task

    async def start(self, timeout: float = 30) -> dict[str, Any]:
        """Spawn the server, `initialize` it for the workspace, send `initialized`."""
        # A session of its own: Ctrl+C in the terminal reaches this client, not the server.
        self._process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            cwd=str(self.workspace),
            start_new_session=True,
        )
        self._spawn(self._read_messages(), "lsp-reader")
        self._spawn(self._read_stderr(), "lsp-stderr")
        self._spawn(self._watch_exit(), "lsp-exit")
        options = {"instanceId": self.instance_id, **self.options}
        uri = path_to_uri(self.workspace)
        result = await self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "clientInfo": {"name": self.client_name},
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": self.workspace.name}],
                "capabilities": client_capabilities(),
                "initializationOptions": options,
            },
            timeout=timeout,
        )
        self.server_info = dict(result.get("serverInfo") or {})
        self.capabilities = dict(result.get("capabilities") or {})
        self.notify("initialized", {})
        return dict(result)

    async def wait_session(self, timeout: float | None = None) -> dict[str, Any]:
        """Wait for the first `agentAssist/sessionChanged` (the resume decision is made)."""
        changed = asyncio.ensure_future(self._session_changed.wait())
        exited = asyncio.ensure_future(self._exited.wait())
        try:
            await asyncio.wait({changed, exited}, timeout=timeout, return_when="FIRST_COMPLETED")
        finally:
            changed.cancel()
            exited.cancel()
        if not self._session_changed.is_set():
            if self._exited.is_set():
                raise ServerExitedError(self._exit_message())
            raise TimeoutError("the server did not start a session in time")
        return dict(self.notifications[proto.SESSION_CHANGED][-1])

    async def shutdown(self, timeout: float = 15) -> int | None:
        """`shutdown` then `exit` (the server autosaves); wait for the process to end."""
        if self._process is None or self._closed:
            return self.returncode
        self._closed = True
        if self.running:
            try:
                await self.request("shutdown", None, timeout=timeout)
                self.notify("exit", None)
                if self._process.stdin is not None:
                    self._process.stdin.close()
            except (LspError, ServerExitedError, TimeoutError, ConnectionError) as exc:
                logger.info("shutdown: %s", exc)
        try:
            await asyncio.wait_for(self._process.wait(), timeout)
        except TimeoutError:
            logger.warning("the server did not exit; terminating it")
            self._process.terminate()
            await self._process.wait()
        await self._drain_tasks()
        return self.returncode

    async def kill(self) -> None:
        """Stop the server at once (SIGKILL), as a crash would."""
        self._closed = True
        if self._process is not None and self._process.returncode is None:
            self._process.kill()
            await self._process.wait()
        await self._drain_tasks()

    async def _drain_tasks(self) -> None:
        current = asyncio.current_task()
        tasks = [t for t in self._tasks if t is not current]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=5)
            for task in pending:
                task.cancel()

    async def _watch_exit(self) -> None:
        assert self._process is not None
        self.returncode = await self._process.wait()
        await asyncio.sleep(0)  # let the reader deliver what was already read
        self._exited.set()
        error = ServerExitedError(self._exit_message())
        for pending in list(self._pending.values()):
            if not pending.future.done():
                pending.future.set_exception(error)
        self._pending.clear()

    def _exit_message(self) -> str:
        text = f"the server exited (code {self.returncode})"
        if self.stderr_tail and not self._closed:
            text += ":\n" + "\n".join(list(self.stderr_tail)[-10:])
        return text

    # -- sending ----------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        if not self.running or self._process is None or self._process.stdin is None:
            raise ServerExitedError(self._exit_message())
        body = json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False).encode("utf-8")
        self._process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send_request(self, method: str, params: Any = None) -> PendingRequest:
        """Send a request without waiting; return it (its id serves `cancel`)."""
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        pending = PendingRequest(request_id, method, future)
        self._pending[request_id] = pending
        message: dict[str, Any] = {"id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._send(message)
        except ServerExitedError:
            self._pending.pop(request_id, None)
            raise
        return pending

    async def request(
        self, method: str, params: Any = None, *, timeout: float | None = None
    ) -> Any:
        """Send a request and return its result; raise LspError for an error answer."""
        pending = self.send_request(method, params)
        try:
            return await asyncio.wait_for(asyncio.shield(pending.future), timeout)
        finally:
            if not pending.future.done():
                self._pending.pop(pending.id, None)

    def cancel(self, pending: PendingRequest) -> None:
        """Send `$/cancelRequest` for a request still running."""
        if not pending.future.done() and self.running:
            self.notify("$/cancelRequest", {"id": pending.id})

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    # -- receiving --------------------------------------------------------------------------

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while line := await self._process.stderr.readline():
            text = line.decode("utf-8", "replace").rstrip()
            self.stderr_tail.append(text)
            if self.stderr_sink is not None:
                self.stderr_sink(text)

    async def _read_messages(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        reader = self._process.stdout
        while True:
            length = -1
            while True:
                header = await reader.readline()
                if not header:
                    return
                header = header.strip()
                if not header:
                    break
                name, _, value = header.decode("ascii", "replace").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if length < 0:
                continue
            try:
                body = await reader.readexactly(length)
            except asyncio.IncompleteReadError:
                return
            try:
                message = json.loads(body)
            except ValueError:
                logger.warning("the server sent invalid JSON: %r", body[:200])
                continue
            if isinstance(message, dict):
                self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            pending = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
            if pending is None or pending.future.done():
                return
            error = message.get("error")
            if error is not None:
                pending.future.set_exception(
                    LspError(
                        int(error.get("code", 0)), str(error.get("message", "")), error.get("data")
                    )
                )
            else:
                pending.future.set_result(message.get("result"))
        elif "id" in message:
            self._spawn(self._answer(message["id"], method, message.get("params")), method)
        else:
            self._notified(method, message.get("params"))

    def _notified(self, method: str, params: Any) -> None:
        if method != proto.CHAT_DELTA:  # deltas go to listeners only; the log holds them
            self.notifications[method].append(params)
        if method == proto.SESSION_CHANGED:
            self._session_changed.set()
        for listener in list(self._listeners.get(method, ())):
            try:
                listener(params)
            except Exception:
                logger.exception("listener for %s failed", method)

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        try:
            result = await self.editor_side.answer(method, params or {})
            reply: dict[str, Any] = {"id": request_id, "result": result}
        except LspError as exc:
            reply = {"id": request_id, "error": {"code": exc.code, "message": exc.message}}
        except Exception as exc:
            logger.exception("answering %s failed", method)
            reply = {"id": request_id, "error": {"code": -32603, "message": str(exc)}}
        with contextlib.suppress(ServerExitedError, ConnectionError):
            self._send(reply)
