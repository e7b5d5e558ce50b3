"""The language server process: cold start, per-turn overhead, first delta, delta rate, RSS.

Everything talks to one `FakeOpenAI` running in a thread of this process. "Ours" goes through
the real server subprocess (`python -m lsp_server.cli serve`, LSP over stdio) and is timed at
the client; the baseline runs the very same pydantic-ai agent (`build_agent`, same tools and
instructions, same message history length) in this process's event loop.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.protocol import JsonRPCNotification, JsonRPCResponseMessage, default_converter
from pygls.uris import from_fs_path

from lsp_server.config import ModelConfig
from lsp_server.fake_openai import FakeOpenAI, Reply, parse_reply

from .common import Mode, Result, Row, fmt_bytes, fmt_s, median, scratch_dir

if TYPE_CHECKING:
    from pydantic_ai import Agent

    from lsp_server.agent import ToolDeps

REPO = Path(__file__).resolve().parents[1]
Handler = Callable[[Any, Any], None]
SPAWNS: dict[Mode, int] = {"smoke": 2, "default": 7, "long": 15}
NOCACHE_SPAWNS: dict[Mode, int] = {"smoke": 1, "default": 3, "long": 5}
TURNS: dict[Mode, int] = {"smoke": 3, "default": 30, "long": 100}  # timed, per path
# For the RSS row. 1,000 turns cost ~5 min on a 2-CPU machine (the round trip grows with the
# session, see the details), so only the long mode runs them.
TOTAL_TURNS: dict[Mode, int] = {"smoke": 5, "default": 100, "long": 1000}
GROWTH_MIN_TURNS = 40  # filler turns needed for the "round trip, end vs start" row
LONG_REPEATS: dict[Mode, int] = {"smoke": 1, "default": 3, "long": 5}
LONG_REPLY: dict[Mode, tuple[int, int]] = {  # (chars, chunks)
    "smoke": (2_000, 200),
    "default": (20_000, 2_000),
    "long": (20_000, 2_000),
}
REPLY_CHARS, REPLY_CHUNKS = 400, 40
INIT_TARGET = 0.600  # s
OVERHEAD_TARGET_S, OVERHEAD_TARGET_RATIO = 0.005, 1.10
FIRST_DELTA_TARGET = 0.002  # s added
RSS_IDLE_TARGET, RSS_FIRST_CHAT_TARGET = 60e6, 150e6  # bytes (MB = 10^6 B, like fmt_bytes)
MODEL_NAME = "bench-model"
TIMEOUT = 120.0
# Bytecode of every process here (servers, baselines, this one) goes to and comes from this
# directory, never to the source tree or the venv; it is kept between runs (.pyc files are
# validated against their sources' mtime and size, so a stale one is simply recompiled).
PYCACHE = Path(tempfile.gettempdir()) / f"agent-assist-bench-pycache-{os.getuid()}"


def reply_text(chars: int) -> str:
    """Return `chars` characters of plain words."""
    words = "the quick brown fox jumps over a lazy dog while agents stream replies ".split()
    out: list[str] = []
    size = 0
    i = 0
    while size < chars:
        word = words[i % len(words)]
        out.append(word)
        size += len(word) + 1
        i += 1
    return " ".join(out)[:chars]


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
    return converter


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
            "agent-assist-bench", "0", converter_factory=_plain_json_converter
        )
        self.deltas = 0
        self.delta_chars = 0
        self.first_delta: float | None = None
        self.session_changes: list[dict[str, Any]] = []
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

        def ignore(ls: Any, params: Any) -> None:
            return None  # notifications we do not look at; requests answered with null

        feature("agentAssist/chatDelta")(delta)
        feature("agentAssist/sessionChanged")(changed)
        for method in (
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
                    initialization_options={
                        "instanceId": "bench",
                        "model": self.model_options,
                        **self.options,
                    },
                    client_info=types.ClientInfo(name="Bench Editor"),
                )
            ),
            TIMEOUT,
        )
        return result

    async def ready(self) -> None:
        """Send `initialized` and wait for the session to start."""
        self.client.initialized(types.InitializedParams())
        deadline = time.perf_counter() + TIMEOUT
        while not self.session_changes:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"no sessionChanged; server stderr: {self.stderr_tail!r}")
            await asyncio.sleep(0.001)

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


@dataclass
class DirectTurn:
    """One in-process run of the agent."""

    seconds: float
    first_delta: float
    deltas: int
    text: str


class DirectAgent:
    """The baseline: the same agent, streamed in-process like lsp_server/agent.py does."""

    def __init__(self, base_url: str) -> None:
        from lsp_server.pydantic_agent import build_agent

        self.agent: Agent[ToolDeps, str] = build_agent(
            ModelConfig(name=MODEL_NAME, base_url=base_url, api_key="x")
        )
        # The instructions only read `deps.lifecycle.resume_context`; no tools are called.
        self.deps = cast("ToolDeps", SimpleNamespace(lifecycle=SimpleNamespace(resume_context="")))
        self.history: list[Any] = []

    async def turn(self, prompt: str) -> DirectTurn:
        """Run one turn, carrying the history forward like the server does."""
        from pydantic_ai import Agent
        from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta

        deltas = 0
        first: float | None = None
        start = time.perf_counter()
        async with self.agent.iter(prompt, message_history=self.history, deps=self.deps) as run:
            async for node in run:
                if Agent.is_model_request_node(node):
                    async with node.stream(run.ctx) as stream:
                        async for event in stream:
                            delta = ""
                            if isinstance(event, PartStartEvent) and isinstance(
                                event.part, TextPart
                            ):
                                delta = event.part.content
                            elif isinstance(event, PartDeltaEvent) and isinstance(
                                event.delta, TextPartDelta
                            ):
                                delta = event.delta.content_delta
                            if delta:
                                if first is None:
                                    first = time.perf_counter()
                                deltas += 1
                elif Agent.is_call_tools_node(node):
                    async with node.stream(run.ctx) as tool_stream:
                        async for _event in tool_stream:
                            pass
        end = time.perf_counter()
        assert run.result is not None
        self.history = run.result.all_messages()
        return DirectTurn(end - start, (first or end) - start, deltas, run.result.output)


class LeanFake(FakeOpenAI):
    """FakeOpenAI giving every request the same reply, keeping only each request's size.

    A fixed reply rather than a queue: the server may make requests of its own (e.g. a
    summary when it compacts a long history), which must not shift the script.
    """

    def __init__(self) -> None:
        super().__init__()
        self.message_counts: list[int] = []
        self.reply = parse_reply("unset")

    def use(self, text: str, chunk: int) -> None:
        """Answer every following request with `text` streamed in `chunk`-char deltas."""
        self.reply = parse_reply({"text": text, "chunk": chunk})

    @property
    def request_count(self) -> int:
        """Return how many chat completion requests were received."""
        with self._lock:
            return len(self.message_counts)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        return self.reply

    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> int:
        with self._lock:
            self.message_counts.append(len(body.get("messages") or []))
            return len(self.message_counts)

    def __enter__(self) -> LeanFake:
        self.start()
        return self


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


async def warm_up(env: dict[str, str]) -> bool:
    """Fill the bytecode cache and import pydantic-ai here (for the direct agent).

    The child checks what the server's start-up modules import (and caches their bytecode);
    this process imports the agent module, caching pydantic-ai's bytecode (see `run`).
    """
    imported, _ = await asyncio.gather(
        pydantic_ai_at_startup(env),
        asyncio.to_thread(importlib.import_module, "lsp_server.pydantic_agent"),
    )
    return imported


@dataclass
class Measured:
    """Everything the async part measured."""

    phases: list[tuple[str, float]]
    imported: bool
    init: list[float]
    ready: list[float]
    init_nocache: list[float]
    bare_start: list[float]
    bare_rss: int
    rss_idle: int
    rss_first_chat: int
    rss_after: int
    total_turns: int
    first_chat: float
    direct_first: float
    server_turns: list[float]
    direct_turns: list[float]
    server_first: list[float]
    direct_first_deltas: list[float]
    server_rates: list[float]
    direct_rates: list[float]
    long_deltas: int
    fill_seconds: float
    fill_turns: list[float]
    extra_requests: int
    messages_last: tuple[int, int]


async def measure(mode: Mode, tmp: Path) -> Measured:
    """Run every measurement (cold starts, then one long-lived server)."""
    phases: list[tuple[str, float]] = []
    mark = time.perf_counter()

    def phase(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        phases.append((name, now - mark))
        mark = now

    pycache = PYCACHE
    env = server_env(tmp / "home", pycache)
    imported = await warm_up(env)
    phase("bytecode warm-up")
    await cold_start(tmp, "warm-up", pycache)
    init: list[float] = []
    ready: list[float] = []
    bare_start: list[float] = []
    for i in range(SPAWNS[mode]):  # interleaved with the baseline
        bare_start.append(await spawn_python("pass", env))
        times = await cold_start(tmp, f"cold-{i}", pycache)
        init.append(times[0])
        ready.append(times[1])
    init_nocache = [
        (await cold_start(tmp, f"nocache-{i}", None))[0] for i in range(NOCACHE_SPAWNS[mode])
    ]
    phase("cold starts")
    base_rss = await bare_rss(env)
    reply = reply_text(REPLY_CHARS)
    chunk = REPLY_CHARS // REPLY_CHUNKS
    with LeanFake() as fake:
        model = {"name": MODEL_NAME, "baseUrl": fake.base_url, "apiKey": "x"}
        client = BenchClient(env, make_workspace(tmp / "ws"), model)
        await client.start()
        await client.initialize()
        await client.ready()
        await asyncio.sleep(0.2)  # let start-up work (watcher registration, GC) settle
        rss_idle = rss_bytes(client.process.pid)
        phase("server start")

        async def server_turn(number: int, text: str, size: int) -> tuple[float, float]:
            gc.collect()
            before = fake.request_count
            seconds, first, result = await client.chat(f"question {number}")
            assert result["endReason"] == "completed" and result["text"] == text, result
            assert client.delta_chars == len(text) and client.deltas == len(text) // size
            assert fake.request_count == before + 1, "a timed turn made more than one request"
            return seconds, first

        async def direct_turn(number: int, text: str, size: int) -> DirectTurn:
            gc.collect()
            done = await direct.turn(f"question {number}")
            assert done.text == text and done.deltas == len(text) // size, done
            return done

        # Warm-up (the first chat imports pydantic-ai in the server; here, building the agent).
        fake.use(reply, chunk)
        first_chat, _ = await server_turn(0, reply, chunk)
        rss_first_chat = rss_bytes(client.process.pid)
        start = time.perf_counter()
        direct = DirectAgent(fake.base_url)
        direct_first = time.perf_counter() - start + (await direct_turn(0, reply, chunk)).seconds
        phase("first chats")

        server_turns: list[float] = []
        direct_turns: list[float] = []
        server_first: list[float] = []
        direct_first_deltas: list[float] = []
        for number in range(1, TURNS[mode] + 1):
            for which in ("server", "direct") if number % 2 else ("direct", "server"):
                if which == "server":
                    seconds, first = await server_turn(number, reply, chunk)
                    server_turns.append(seconds)
                    server_first.append(first)
                else:
                    done = await direct_turn(number, reply, chunk)
                    direct_turns.append(done.seconds)
                    direct_first_deltas.append(done.first_delta)
        messages_last = (fake.message_counts[-2], fake.message_counts[-1])
        phase("timed turns")

        fill_start = time.perf_counter()
        turns_done = 1 + TURNS[mode]
        total = max(TOTAL_TURNS[mode], turns_done)
        requests_before = fake.request_count
        fill_turns: list[float] = []
        for number in range(turns_done, total):
            seconds, _, result = await client.chat(f"question {number}")
            assert result["endReason"] == "completed" and client.delta_chars == len(reply), result
            fill_turns.append(seconds)
        extra_requests = fake.request_count - requests_before - (total - turns_done)
        fill_seconds = time.perf_counter() - fill_start
        await asyncio.sleep(0.2)
        rss_after = rss_bytes(client.process.pid)
        phase("filler turns")

        # Delta rate on long replies, both paths from an empty history.
        await client.request("agentAssist/reset", {"deleteFiles": False})
        direct.history = []
        chars, chunks = LONG_REPLY[mode]
        long_text = reply_text(chars)
        size = chars // chunks
        fake.use(long_text, size)
        server_rates: list[float] = []
        direct_rates: list[float] = []
        for number in range(LONG_REPEATS[mode]):
            for which in ("server", "direct") if number % 2 == 0 else ("direct", "server"):
                if which == "server":
                    seconds, _ = await server_turn(number, long_text, size)
                    server_rates.append(chunks / seconds)
                else:
                    done = await direct_turn(number, long_text, size)
                    direct_rates.append(done.deltas / done.seconds)
        await client.stop()
        phase("long replies + stop")
    return Measured(
        phases=phases,
        imported=imported,
        init=init,
        ready=ready,
        init_nocache=init_nocache,
        bare_start=bare_start,
        bare_rss=base_rss,
        rss_idle=rss_idle,
        rss_first_chat=rss_first_chat,
        rss_after=rss_after,
        total_turns=total,
        first_chat=first_chat,
        direct_first=direct_first,
        server_turns=server_turns,
        direct_turns=direct_turns,
        server_first=server_first,
        direct_first_deltas=direct_first_deltas,
        server_rates=server_rates,
        direct_rates=direct_rates,
        long_deltas=chunks,
        fill_seconds=fill_seconds,
        fill_turns=fill_turns,
        extra_requests=extra_requests,
        messages_last=messages_last,
    )


def _spread(values: list[float], fmt: Callable[[float], str] = fmt_s) -> str:
    return (
        f"median {fmt(median(values))}, min {fmt(min(values))}, max {fmt(max(values))}, "
        f"n={len(values)}"
    )


def run(mode: Mode) -> Result:
    """Run the server benchmark and return its rows."""
    result = Result("server")
    saved = sys.pycache_prefix, sys.dont_write_bytecode
    sys.pycache_prefix, sys.dont_write_bytecode = str(PYCACHE), False
    try:
        with scratch_dir("server") as tmp:
            m = asyncio.run(measure(mode, tmp))
    finally:
        sys.pycache_prefix, sys.dont_write_bytecode = saved
    rows = result.rows

    init, bare = median(m.init), median(m.bare_start)
    rows.append(
        Row(
            f"cold `initialize` round trip vs `python -c pass` (n={len(m.init)})",
            fmt_s(init),
            fmt_s(bare),
            init / bare,
        )
    )
    rows.append(
        Row(
            "cold `initialize` round trip, absolute",
            fmt_s(init),
            target=f"≤ {fmt_s(INIT_TARGET)}",
            ok=init <= INIT_TARGET,
        )
    )
    nocache = median(m.init_nocache)
    rows.append(
        Row(
            f"cold `initialize`, no .pyc for site-packages (n={len(m.init_nocache)})",
            fmt_s(nocache),
            fmt_s(init),
            nocache / init,
        )
    )
    rows.append(
        Row(
            "pydantic_ai imported by the start-up modules",
            str(m.imported),
            target="= False",
            ok=not m.imported,
        )
    )

    ours, base = median(m.server_turns), median(m.direct_turns)
    added = ours - base
    rows.append(
        Row(
            f"chat turn ({REPLY_CHARS} chars / {REPLY_CHUNKS} chunks) via server vs direct agent",
            fmt_s(ours),
            fmt_s(base),
            ours / base,
            f"added ≤ {fmt_s(OVERHEAD_TARGET_S)} or ≤ {OVERHEAD_TARGET_RATIO:g}×",
            added <= OVERHEAD_TARGET_S or ours / base <= OVERHEAD_TARGET_RATIO,
        )
    )
    ours_first, base_first = median(m.server_first), median(m.direct_first_deltas)
    rows.append(
        Row(
            "first delta after request: via server vs direct agent",
            fmt_s(ours_first),
            fmt_s(base_first),
            ours_first / base_first,
            f"added ≤ {fmt_s(FIRST_DELTA_TARGET)}",
            ours_first - base_first <= FIRST_DELTA_TARGET,
        )
    )
    ours_rate, base_rate = median(m.server_rates), median(m.direct_rates)
    rows.append(
        Row(
            f"deltas/s, {m.long_deltas:,}-chunk reply: at the client vs direct agent",
            f"{ours_rate:,.0f} /s",
            f"{base_rate:,.0f} /s",
            ours_rate / base_rate,
        )
    )
    for label, value, target in (
        ("server RSS idle after initialize", m.rss_idle, RSS_IDLE_TARGET),
        ("server RSS after the first chat", m.rss_first_chat, RSS_FIRST_CHAT_TARGET),
        (f"server RSS after {m.total_turns:,} turns", m.rss_after, None),
    ):
        rows.append(
            Row(
                f"{label} vs bare interpreter",
                fmt_bytes(value),
                fmt_bytes(m.bare_rss),
                value / m.bare_rss,
                "report only" if target is None else f"≤ {fmt_bytes(target)}",
                None if target is None else value <= target,
            )
        )

    tenth = len(m.fill_turns) // 10
    if len(m.fill_turns) >= GROWTH_MIN_TURNS:
        start_s, end_s = median(m.fill_turns[:tenth]), median(m.fill_turns[-tenth:])
        rows.append(
            Row(
                f"chat round trip, last {tenth} vs first {tenth} of turns "
                f"{m.total_turns - len(m.fill_turns) + 1:,}-{m.total_turns:,} (untimed filler)",
                fmt_s(end_s),
                fmt_s(start_s),
                end_s / start_s,
            )
        )

    d = result.details
    d.append(
        "cold = a new server process on a new store, its .pyc files already cached "
        f"(PYTHONPYCACHEPREFIX={PYCACHE}, filled by an untimed warm-up), as after "
        "`pip install`; this venv itself has "
        + ("" if venv_has_bytecode() else "no ")
        + ".pyc files for site-packages (uv installs none and PYTHONDONTWRITEBYTECODE is set), "
        "see the `no .pyc` row (baseline there: the cached figure)"
    )
    d.append(f"cold initialize (spawn → InitializeResult): {_spread(m.init)}")
    d.append(f"cold initialize, no .pyc for site-packages: {_spread(m.init_nocache)}")
    d.append(f"cold spawn → session started (sessionChanged): {_spread(m.ready)}")
    d.append(f"`python -c pass` (same interpreter and env): {_spread(m.bare_start)}")
    d.append(
        f"first chat (server imports pydantic-ai, builds the agent): {fmt_s(m.first_chat)}; "
        f"direct agent build + first run in this process: {fmt_s(m.direct_first)}"
    )
    paired = [s - b for s, b in zip(m.server_turns, m.direct_turns, strict=True)]
    d.append(f"chat turn via server: {_spread(m.server_turns)}")
    d.append(f"chat turn, direct agent: {_spread(m.direct_turns)}")
    d.append(
        f"added per turn: {fmt_s(added)} (difference of medians), median of paired "
        f"differences {fmt_s(median(paired))}; paths interleaved, history carried on both "
        f"(last requests: {m.messages_last[0]} and {m.messages_last[1]} messages)"
    )
    third = max(1, len(paired) // 3)
    d.append(
        f"added per turn (median of paired differences) in the first third of the timed turns "
        f"{fmt_s(median(paired[:third]))}, last third {fmt_s(median(paired[-third:]))} "
        "(the history grows by 2 messages a turn)"
    )
    d.append(f"first delta via server: {_spread(m.server_first)}")
    d.append(f"first delta, direct agent: {_spread(m.direct_first_deltas)}")
    rate = lambda v: f"{v:,.0f}/s"  # noqa: E731
    d.append(f"deltas/s via server: {_spread(m.server_rates, rate)}")
    d.append(f"deltas/s, direct agent: {_spread(m.direct_rates, rate)}")
    growth = (m.rss_after - m.rss_first_chat) / max(1, m.total_turns - 1)
    d.append(
        f"RSS: bare interpreter {fmt_bytes(m.bare_rss)}; idle {fmt_bytes(m.rss_idle)}; "
        f"after first chat {fmt_bytes(m.rss_first_chat)}; after {m.total_turns:,} turns "
        f"{fmt_bytes(m.rss_after)} ({fmt_bytes(growth)}/turn after the first); "
        f"untimed filler turns took {fmt_s(m.fill_seconds)} and made {m.extra_requests} model "
        "request(s) besides the turns' own (e.g. a summary when the server compacts history)"
    )
    if tenth:
        d.append(
            f"filler turns {m.total_turns - len(m.fill_turns) + 1:,}-{m.total_turns:,}, chat "
            f"round trip (no gc.collect before each): first {tenth} "
            f"{_spread(m.fill_turns[:tenth])}; last {tenth} {_spread(m.fill_turns[-tenth:])}"
        )
    d.append("phases: " + ", ".join(f"{name} {fmt_s(sec)}" for name, sec in m.phases))
    return result
