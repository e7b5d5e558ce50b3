"""The language server as a subprocess: its environment, the lean LSP client that drives it.

Also what the cold-start and RSS rows compare it with: `python -c pass` and a bare sleeping
interpreter, both with the server's environment.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
)
from pygls.uris import from_fs_path

REPO = Path(__file__).resolve().parents[1]
Handler = Callable[[Any, Any], None]
TIMEOUT = 120.0
# Bytecode of every process here (servers, baselines, this one) goes to and comes from this
# directory, never to the source tree or the venv; it is kept between runs (.pyc files are
# validated against their sources' mtime and size, so a stale one is simply recompiled).
PYCACHE = Path(tempfile.gettempdir()) / f"agent-assist-bench-pycache-{os.getuid()}"


@contextmanager
def bench_bytecode() -> Iterator[None]:
    """Compile this process's imports into `PYCACHE` (as the servers do), then restore."""
    saved = sys.pycache_prefix, sys.dont_write_bytecode
    sys.pycache_prefix, sys.dont_write_bytecode = str(PYCACHE), False
    try:
        yield
    finally:
        sys.pycache_prefix, sys.dont_write_bytecode = saved


def server_env(home: Path, pycache: Path | None) -> dict[str, str]:
    """Environment of the server (and of the baselines): our store, no real model settings.

    With `pycache`, bytecode is written to and read from that directory only (as an installed
    package would have it: .pyc files exist); without, nothing is written and the venv's own
    (possibly missing) .pyc files are used, i.e. modules may be compiled on every start.
    """
    drop = ("OPENAI_", "AGENT_ASSIST_", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        {"AGENT_ASSIST_HOME": str(home), "PYDANTIC_AI_NO_BANNER": "1", "PYTHONUNBUFFERED": "1"}
    )
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def venv_has_bytecode() -> bool:
    """Return True if the installed pygls has .pyc files next to its sources."""
    import pygls

    return any(Path(pygls.__file__).parent.glob("__pycache__/*.pyc"))


def make_workspace(path: Path) -> Path:
    """Create a small project like the e2e tests use."""
    (path / "templates").mkdir(parents=True)
    (path / "agent_spec.md").write_text("# Support agent\nthree tools\n")
    (path / "templates" / "reply.txt").write_text("Dear {name},\n")
    return path


def rss_bytes(pid: int) -> int:
    """Return VmRSS of a process in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def _plain_json_converter() -> Any:
    """Keep custom results and notification params as plain dicts (like tests/e2e/harness)."""
    make: Callable[[], Any] = default_converter
    converter = make()
    converter.register_structure_hook(
        JsonRPCResponseMessage,
        lambda obj, cls: cls(
            id=obj.get("id"), jsonrpc=obj.get("jsonrpc"), result=obj.get("result")
        ),
    )
    converter.register_structure_hook(
        JsonRPCNotification,
        lambda obj, cls: cls(
            method=obj.get("method"), jsonrpc=obj.get("jsonrpc"), params=obj.get("params")
        ),
    )
    converter.register_structure_hook(
        JsonRPCRequestMessage,
        lambda obj, cls: cls(
            id=obj.get("id"),
            method=obj.get("method"),
            jsonrpc=obj.get("jsonrpc"),
            params=obj.get("params"),
        ),
    )
    return converter


class _PlainProtocol(LanguageServerProtocol):
    """pygls' protocol, keeping what the server sends as plain JSON, LSP methods too.

    pygls would build lsprotocol classes for `window/showMessage`,
    `client/registerCapability` and the like, generating their cattrs code once per client,
    so once per spawn (~1 ms each, timed with the server's resume): an editor does no such
    work, and the bench only counts or ignores these messages.
    """

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Structure the server's requests and notifications as plain JSON-RPC messages."""
        if "jsonrpc" in data and "method" in data:
            kind = JsonRPCRequestMessage if "id" in data else JsonRPCNotification
            return self._converter.structure(data, kind)
        return super().structure_message(data)  # a response: as its request asked


class BenchClient:
    """A lean LSP client: timestamps every chat delta as it is handled."""

    def __init__(
        self,
        env: dict[str, str],
        workspace: Path,
        model: dict[str, str] | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        self.env = env
        self.workspace = workspace
        self.model_options = model or {}
        self.options = options or {}  # more initializationOptions (e.g. autoResume)
        self.client = LanguageClient(
            "agent-assist-bench",
            "0",
            protocol_cls=_PlainProtocol,
            converter_factory=_plain_json_converter,
        )
        self.deltas = 0
        self.delta_chars = 0
        self.first_delta: float | None = None
        self.session_changes: list[dict[str, Any]] = []
        self.session_changed = asyncio.Event()
        self.stderr_tail = b""
        self._drain: asyncio.Task[None] | None = None
        self._register()

    def _register(self) -> None:
        feature = cast(Callable[[str], Callable[[Handler], object]], self.client.feature)

        def delta(ls: Any, params: Any) -> None:
            if self.first_delta is None:
                self.first_delta = time.perf_counter()
            self.deltas += 1
            self.delta_chars += len(params["delta"])

        def changed(ls: Any, params: Any) -> None:
            self.session_changes.append(params)
            self.session_changed.set()

        def ignore(ls: Any, params: Any) -> None:
            return None  # notifications we do not look at; requests answered with null

        feature("agentAssist/chatDelta")(delta)
        feature("agentAssist/sessionChanged")(changed)
        for method in (
            "agentAssist/turnStarted",
            "agentAssist/toolCall",
            "agentAssist/drift",
            types.WINDOW_LOG_MESSAGE,
            types.WINDOW_SHOW_MESSAGE,
            types.WINDOW_SHOW_MESSAGE_REQUEST,  # "Resume?" never comes: every store is new
            types.CLIENT_REGISTER_CAPABILITY,
        ):
            feature(method)(ignore)

    @property
    def process(self) -> asyncio.subprocess.Process:
        """Return the server process."""
        server = self.client._server
        assert server is not None
        return server

    async def start(self) -> None:
        """Spawn the server; drain its stderr so a chatty log can never block it."""
        await self.client.start_io(
            sys.executable,
            "-m",
            "lsp_server.cli",
            "serve",
            env=self.env,
            cwd=str(REPO),
        )
        self._drain = asyncio.ensure_future(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while chunk := await stream.read(65536):
            self.stderr_tail = (self.stderr_tail + chunk)[-4000:]

    def initialization_options(self) -> dict[str, Any]:
        """Return the `initializationOptions` this client sends."""
        return {"instanceId": "bench", "model": self.model_options, **self.options}

    async def initialize(self) -> types.InitializeResult:
        """Send `initialize` as VS Code would (it can apply edits and watch files)."""
        uri = from_fs_path(str(self.workspace)) or ""
        capabilities = types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(
                apply_edit=True,
                did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                    dynamic_registration=True
                ),
            )
        )
        result = await asyncio.wait_for(
            self.client.initialize_async(
                types.InitializeParams(
                    capabilities=capabilities,
                    root_uri=uri,
                    workspace_folders=[types.WorkspaceFolder(uri=uri, name="bench")],
                    initialization_options=self.initialization_options(),
                    client_info=types.ClientInfo(name="Bench Editor"),
                )
            ),
            TIMEOUT,
        )
        return result

    async def ready(self) -> None:
        """Send `initialized` and wait for the session to start."""
        self.client.initialized(types.InitializedParams())
        # Woken by the notification, not by polling: a client spinning on a timer takes
        # CPU from the server it times, which needs both cores at 100,000 files.
        try:
            await asyncio.wait_for(self.session_changed.wait(), TIMEOUT)
        except TimeoutError:
            raise TimeoutError(f"no sessionChanged; server stderr: {self.stderr_tail!r}") from None

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a custom request and return its plain JSON result."""
        return await asyncio.wait_for(
            self.client.protocol.send_request_async(method, params), TIMEOUT
        )

    async def chat(self, text: str) -> tuple[float, float, dict[str, Any]]:
        """Run one turn; return (round trip, time to first delta, result)."""
        self.deltas = self.delta_chars = 0
        self.first_delta = None
        start = time.perf_counter()
        result = await self.request("agentAssist/chat", {"text": text})
        end = time.perf_counter()
        first = (self.first_delta or end) - start
        return end - start, first, cast(dict[str, Any], result)

    async def stop(self) -> None:
        """Shut down and exit like an editor closing."""
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT)
            self.client.exit(None)
            await asyncio.wait_for(cast(Callable[[], Awaitable[None]], self.client.stop)(), TIMEOUT)
        finally:
            if self.client._server is not None and self.client._server.returncode is None:
                self.client._server.kill()
                await self.client._server.wait()
            if self._drain is not None:
                await asyncio.wait_for(self._drain, TIMEOUT)


async def spawn_python(code: str, env: dict[str, str]) -> float:
    """Time `python -c code` from spawn to exit."""
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code, env=env, cwd=REPO)
    await proc.wait()
    return time.perf_counter() - start


async def bare_rss(env: dict[str, str]) -> int:
    """RSS of a bare interpreter that is up and sleeping."""
    code = "import time; print('ready', flush=True); time.sleep(30)"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, env=env, cwd=REPO, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    await proc.stdout.readline()
    try:
        return rss_bytes(proc.pid)
    finally:
        proc.kill()
        await proc.wait()


async def cold_start(tmp: Path, name: str, pycache: Path | None) -> tuple[float, float]:
    """Spawn a server on a fresh store; return (spawn → InitializeResult, → session started)."""
    client = BenchClient(server_env(tmp / f"{name}-home", pycache), make_workspace(tmp / name))
    start = time.perf_counter()
    await client.start()
    await client.initialize()
    init = time.perf_counter() - start
    await client.ready()
    ready = time.perf_counter() - start
    await client.stop()
    return init, ready


async def pydantic_ai_at_startup(env: dict[str, str]) -> bool:
    """Return True if importing the server's start-up modules imports pydantic_ai."""
    code = (
        "import sys, lsp_server.cli, lsp_server.server, lsp_server.features;"
        "print('pydantic_ai' in sys.modules)"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, cwd=REPO, env=env, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0 and out.strip() in (b"True", b"False"), out
    return out.strip() == b"True"
