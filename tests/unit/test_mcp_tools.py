"""MCP servers' tools offered to the model: called, recorded, prefixed, and failing alone.

A real stdio MCP server (`mcp_fixture_server.py`, the `mcp` SDK's server) and our real
`ChatRunner` against the scripted OpenAI-compatible model server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.config import ModelConfig
from engine.model.mcp import McpServers, McpServerSpec, parse_mcp_servers
from engine.model.runner import ChatRunner, TurnResult
from engine.model.tools import EditOutcome, ToolDeps
from lsp_server.fake_model import FakeOpenAI
from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from tests.fixtures import free_port
from tests.unit.conftest import make_lifecycle

SERVER = str(Path(__file__).with_name("mcp_fixture_server.py"))
REPO = Path(__file__).resolve().parents[2]


class Editor:
    """An `EditorHost` that answers `confirm_tool` with `allow` and notes what it was asked."""

    def __init__(self, allow: bool = False) -> None:
        self.allow = allow
        self.asked: list[tuple[str, str, dict[str, Any]]] = []

    async def apply_file_edit(
        self, relative: str, content: str, call_id: str | None = None
    ) -> EditOutcome:
        return EditOutcome(applied=False)

    async def confirm(self, relative: str, reason: str, call_id: str | None = None) -> bool:
        return False

    async def confirm_tool(self, server: str, tool: str, args: dict[str, Any]) -> bool:
        self.asked.append((server, tool, args))
        return self.allow

    def protected_globs(self) -> tuple[str, ...]:
        return ()

    async def read_document(self, relative: str) -> str | None:
        return None


class Sink:
    streamed = False

    def __init__(self) -> None:
        self.tools: list[tuple[str, str]] = []

    def delta(self, text: str) -> None:
        self.streamed = True

    def tool(self, name: str, args: Any, status: str, call_id: str) -> None:
        self.tools.append((name, status))

    def retry(self, attempt: int, reason: str) -> None:
        pass

    def thinking(self) -> None:
        pass

    def end_thinking(self) -> None:
        pass


def fixture_spec(name: str = "fx", **fields: Any) -> McpServerSpec:
    return McpServerSpec(name=name, command=sys.executable, args=(SERVER,), **fields)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def turn(
    runner: ChatRunner, lc: SessionLifecycle, text: str, editor: Editor | None = None
) -> tuple[TurnResult, Sink]:
    sink = Sink()
    recorder = lc.begin_turn(text)
    deps = ToolDeps(lc, editor or Editor())
    result = await runner.run_attempt(deps, recorder, text, lc.message_history(), sink)
    recorder.end("completed")
    return result, sink


def tool_events(manager: SessionManager, lc: SessionLifecycle) -> list[tuple[str, dict[str, Any]]]:
    events = manager.read_events(lc.session_id).events
    return [(e.type, e.data.model_dump()) for e in events if e.type.startswith("tool/")]


def tool_names(fake: FakeOpenAI, i: int) -> list[str]:
    return [t["function"]["name"] for t in fake.requests[i].body.get("tools", [])]


def tool_message(fake: FakeOpenAI, i: int) -> str:
    return [str(m["content"]) for m in fake.messages(i) if m["role"] == "tool"][-1]


async def test_the_model_calls_an_mcp_tool_and_the_log_has_the_call_and_its_result(
    manager: SessionManager,
) -> None:
    lc = make_lifecycle(manager)
    with FakeOpenAI([call("fx_echo", text="hi"), "done", call("fx_pid"), "again"]) as fake:
        runner = ChatRunner(ModelConfig(name="m", base_url=fake.base_url, api_key="k"))
        runner.mcp = McpServers([fixture_spec()])
        try:
            result, sink = await turn(runner, lc, "echo hi")
            assert result.text == "done"
            names = tool_names(fake, 0)
            assert {"fx_echo", "fx_pid", "fx_crash", "fx_hang", "read_file"} <= set(names)
            assert "echo" not in names  # every server tool is prefixed
            assert tool_message(fake, 1) == "echo: hi"
            assert sink.tools == [("fx_echo", "started"), ("fx_echo", "done")]
            (_, called), (_, answered) = tool_events(manager, lc)
            assert (called["name"], called["args"]) == ("fx_echo", {"text": "hi"})
            assert (answered["name"], answered["content"]) == ("fx_echo", "echo: hi")
            assert answered["tool_call_id"] == called["tool_call_id"] and not answered["is_error"]
            await turn(runner, lc, "pid")
            pid = int(tool_message(fake, 3))
            assert pid_alive(pid)  # kept running between turns
        finally:
            await runner.aclose()
        assert not pid_alive(pid)  # closing the runner ended it


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not status.exists() or status.read_text().split(") ")[-1][:1] != "Z"


async def test_a_server_that_crashes_mid_call_is_a_tool_error_and_starts_again(
    manager: SessionManager,
) -> None:
    lc = make_lifecycle(manager)
    script = [call("fx_pid"), "one", call("fx_crash"), "it crashed", call("fx_pid"), "back"]
    with FakeOpenAI(script) as fake:
        runner = ChatRunner(ModelConfig(name="m", base_url=fake.base_url, api_key="k"))
        runner.mcp = McpServers([fixture_spec()])
        try:
            await turn(runner, lc, "pid")
            first = tool_message(fake, 1)
            result, sink = await turn(runner, lc, "crash it")
            assert result.text == "it crashed"
            assert sink.tools[-1] == ("fx_crash", "failed")
            seen = tool_message(fake, 3)
            assert "MCP server 'fx' failed during crash" in seen
            _, crashed = tool_events(manager, lc)[-1]
            assert crashed["is_error"] and crashed["name"] == "fx_crash"
            await turn(runner, lc, "pid again")
            assert tool_message(fake, 5) not in (first, seen)  # a new process answered
        finally:
            await runner.aclose()


async def test_a_server_that_hangs_is_given_up_after_its_timeout(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    with FakeOpenAI([call("slow_hang"), "gave up", call("slow_echo", text="x"), "ok"]) as fake:
        runner = ChatRunner(ModelConfig(name="m", base_url=fake.base_url, api_key="k"))
        runner.mcp = McpServers([fixture_spec("slow", timeout=1.0)])
        try:
            result, sink = await turn(runner, lc, "hang")
            assert result.text == "gave up"
            assert "MCP server 'slow' did not answer hang within 1 s" in tool_message(fake, 1)
            assert sink.tools[-1] == ("slow_hang", "failed")
            await turn(runner, lc, "echo")  # the server still answers other calls
            assert tool_message(fake, 3) == "echo: x"
        finally:
            await runner.aclose()


async def test_a_server_that_cannot_start_costs_its_tools_only(
    manager: SessionManager, caplog: pytest.LogCaptureFixture
) -> None:
    lc = make_lifecycle(manager)
    (lc.workspace_root / "notes.txt").write_text("n\n")
    broken = McpServerSpec(name="broken", command=str(REPO / "no-such-mcp-server"))
    with FakeOpenAI([call("list_files"), "listed", "plain"]) as fake:
        runner = ChatRunner(ModelConfig(name="m", base_url=fake.base_url, api_key="k"))
        runner.mcp = McpServers([broken, fixture_spec()])
        try:
            with caplog.at_level(logging.WARNING, "engine.model.mcp_toolset"):
                result, _ = await turn(runner, lc, "list")
                await turn(runner, lc, "again")
            assert result.text == "listed"
            assert "notes.txt" in tool_message(fake, 1)  # ours work
            names = tool_names(fake, 0)
            assert "fx_echo" in names and not [n for n in names if n.startswith("broken")]
            warned = [r for r in caplog.records if "'broken' did not start" in r.getMessage()]
            assert len(warned) == 1  # once, not every turn
        finally:
            await runner.aclose()


async def test_a_tool_marked_to_confirm_runs_only_after_a_yes(
    manager: SessionManager, tmp_path: Path
) -> None:
    lc = make_lifecycle(manager)
    notes = tmp_path / "ran.txt"
    spec = fixture_spec(env={"MCP_FIXTURE_NOTES": str(notes)}, confirm_tools=frozenset({"echo"}))
    script = [call("fx_echo", text="no"), "refused", call("fx_echo", text="yes"), "ran"]
    with FakeOpenAI([*script, call("fx_pid"), "unasked"]) as fake:
        runner = ChatRunner(ModelConfig(name="m", base_url=fake.base_url, api_key="k"))
        runner.mcp = McpServers([spec])
        try:
            refusing = Editor(allow=False)
            result, _ = await turn(runner, lc, "echo", refusing)
            assert result.text == "refused"
            assert refusing.asked == [("fx", "echo", {"text": "no"})]
            assert "The user did not allow echo of MCP server 'fx'" in tool_message(fake, 1)
            assert tool_events(manager, lc)[-1][1]["is_error"]
            assert not notes.exists()  # it never ran
            await turn(runner, lc, "echo", Editor(allow=True))
            assert notes.read_text() == "echo yes\n"
            other = Editor(allow=False)
            await turn(runner, lc, "pid", other)
            assert other.asked == [] and tool_message(fake, 5).isdigit()
        finally:
            await runner.aclose()


def test_specs_are_checked_with_messages_that_say_what() -> None:
    with pytest.raises(ValueError, match="needs a name"):
        McpServerSpec(name=" ", command="x")
    with pytest.raises(ValueError, match="'s': a stdio server needs a command"):
        McpServerSpec(name="s")
    with pytest.raises(ValueError, match=r"url 'ftp://h' must start with http:// or https://"):
        McpServerSpec(name="s", transport="http", url="ftp://h")
    with pytest.raises(ValueError, match="two MCP servers are named 'a'"):
        McpServers([McpServerSpec(name="a", command="x"), McpServerSpec(name="a", command="y")])
    with pytest.raises(ValueError, match="'my server' and 'my_server' would name their tools"):
        parse_mcp_servers(
            [{"name": "my server", "command": "x"}, {"name": "my_server", "command": "y"}]
        )
    assert McpServerSpec(name="my server", command="./run.sh").prefix == "my_server"


def test_acp_shaped_servers_are_read() -> None:
    pair = [{"name": "K", "value": "v"}]
    stdio, http, sse = parse_mcp_servers(
        [
            {"name": "fs", "command": "npx", "args": ["-y", "fs"], "env": pair},
            {"type": "http", "name": "web", "url": "https://h/mcp", "headers": pair, "timeout": 5},
            {"type": "sse", "name": "ev", "url": "http://h/sse", "headers": [], "confirm": ["run"]},
        ]
    )
    assert (stdio.transport, stdio.command, stdio.args, dict(stdio.env)) == (
        "stdio",
        "npx",
        ("-y", "fs"),
        {"K": "v"},
    )
    assert (http.transport, http.url, dict(http.headers)) == ("http", "https://h/mcp", {"K": "v"})
    assert (http.timeout, http.start_timeout, stdio.timeout) == (5.0, 60.0, 60.0)
    assert sse.transport == "sse" and sse.needs_confirm("run") and not sse.needs_confirm("read")
    with pytest.raises(ValueError, match="'fs': a timeout must be a number of seconds"):
        parse_mcp_servers([{"name": "fs", "command": "x", "startTimeout": "soon"}])
    with pytest.raises(ValueError, match="'fs': env must be a list of"):
        parse_mcp_servers([{"name": "fs", "command": "x", "env": "K=v"}])


def test_the_mcp_module_does_not_import_pydantic_ai() -> None:
    code = "import sys, engine.model.mcp, engine.model.runner; print('pydantic_ai' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.strip().lower()) is False


class Host:
    """The engine's `Host`: background work kept to be awaited."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[Any]] = []

    @property
    def edits(self) -> Editor:
        return Editor()

    def show(self, message: str) -> None:
        pass

    def spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        self.tasks.append(asyncio.ensure_future(coro))
        return self.tasks[-1]


async def test_the_engine_gives_its_servers_to_every_runner_and_stops_them_on_close(
    workspace: Path, home: Path
) -> None:
    from engine.config import ServerConfig
    from engine.core import Engine

    host = Host()
    engine = Engine(host, ServerConfig(), workspace)  # type: ignore[arg-type]
    engine.configure(ServerConfig(), workspace)
    engine.use_mcp_servers([fixture_spec()])
    assert engine.runner is not None and engine.runner.mcp is engine.mcp
    assert engine.mcp.specs[0].cwd == str(workspace)  # a stdio server runs in the project
    engine.runner = ChatRunner(ModelConfig(name="m"))  # new settings: the same servers
    assert engine.runner.mcp is engine.mcp
    (toolset,) = engine.mcp.toolsets()
    async with toolset:  # as a run enters it: started, and kept running after
        pass
    pid = int(await toolset.wrapped.server.direct_call_tool("pid", {}))  # type: ignore[attr-defined]
    assert pid_alive(pid)
    engine.close("the test ends")
    await asyncio.gather(*host.tasks)
    assert not pid_alive(pid) and not engine.mcp and engine.runner.mcp is engine.mcp
    with pytest.raises(ValueError, match="two MCP servers are named 'fx'"):
        engine.use_mcp_servers([fixture_spec(), fixture_spec()])


def test_the_editors_question_names_the_server_and_the_tool_and_cuts_long_arguments() -> None:
    from lsp_server.edits import SHOWN_ARGS, tool_question

    short = tool_question("fx", "echo", {"text": "hi"})
    assert short == (
        "Agent Assist: the model wants to call echo of MCP server 'fx' with "
        '{"text": "hi"}. Allow this call?'
    )
    long = tool_question("fx", "echo", {"text": "x" * 5000})
    assert len(long) < SHOWN_ARGS + 120 and "…. Allow this call?" in long


async def test_tools_named_like_ours_or_unlike_any_tool_name_are_not_offered(
    manager: SessionManager, caplog: pytest.LogCaptureFixture
) -> None:
    lc = make_lifecycle(manager)
    with FakeOpenAI(["one", "two"]) as fake:
        runner = ChatRunner(ModelConfig(name="m", base_url=fake.base_url, api_key="k"))
        runner.mcp = McpServers([fixture_spec("read")])
        try:
            with caplog.at_level(logging.WARNING, "engine.model.mcp_toolset"):
                await turn(runner, lc, "hello")
                await turn(runner, lc, "again")
        finally:
            await runner.aclose()
    names = tool_names(fake, 0)
    assert "read_echo" in names and names.count("read_file") == 1  # ours
    assert not [n for n in names if "dotted" in n]
    warned = sorted(r.getMessage() for r in caplog.records if "is not offered" in r.getMessage())
    assert warned == [
        "MCP server 'read': its tool 'dotted.name' is not offered: read_dotted.name is no name "
        "the model's API takes",
        "MCP server 'read': its tool 'file' is not offered: read_file is one of ours",
    ]


@pytest.fixture(params=[("http", "streamable-http", "/mcp"), ("sse", "sse", "/sse")])
def http_server(request: pytest.FixtureRequest) -> Iterator[McpServerSpec]:
    """The fixture server over HTTP, listening: its spec."""
    transport, how, path = request.param
    port = free_port()
    command = [sys.executable, SERVER, how, str(port)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        for line in process.stderr:  # uvicorn says when it listens (or it exits: EOF)
            if "Uvicorn running on" in line:
                break
        else:
            raise AssertionError("the MCP server over HTTP did not start")
        threading.Thread(target=process.stderr.read, daemon=True).start()  # never blocks it
        yield McpServerSpec(
            name="web", transport=transport, url=f"http://127.0.0.1:{port}{path}",
            headers={"Authorization": "Bearer t"},
        )  # fmt: skip
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_a_server_over_http_or_sse_offers_its_tools(
    manager: SessionManager, http_server: McpServerSpec
) -> None:
    lc = make_lifecycle(manager)
    with FakeOpenAI([call("web_echo", text="over the wire"), "done"]) as fake:
        runner = ChatRunner(ModelConfig(name="m", base_url=fake.base_url, api_key="k"))
        runner.mcp = McpServers([http_server])
        try:
            result, _ = await turn(runner, lc, "echo")
        finally:
            await runner.aclose()
    assert result.text == "done"
    assert tool_message(fake, 1) == "echo: over the wire"
