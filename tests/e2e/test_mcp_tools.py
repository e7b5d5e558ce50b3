"""MCP servers for our agent over LSP: `initializationOptions.mcpServers`, status, failures.

One real stdio MCP server (`tests/unit/mcp_fixture_server.py`, the `mcp` SDK's) serves
several turns; a second one that answers garbage never starts.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor, shown, stored

SERVER = str(Path(__file__).resolve().parents[1] / "unit" / "mcp_fixture_server.py")
WITH_GARBAGE = str(Path(__file__).with_name("mcp_garbage_server.py"))  # SERVER + `garbage`
GARBAGE = "import sys; print('this is no JSON-RPC'); sys.stdout.flush(); sys.stdin.read()"


@pytest.fixture
def client_name() -> str:
    """One client is enough here: MCP does not depend on the client's capabilities."""
    return "vscode"


def tool_results(fake: FakeOpenAI) -> list[str]:
    return [str(m["content"]) for m in fake.messages() if m["role"] == "tool"]


def answer(params: types.ShowMessageRequestParams) -> str | None:
    """Allow an echo of "yes" only."""
    return "Allow call" if '"text": "yes"' in params.message else "Refuse"


async def status_of(editor: Editor, name: str) -> dict[str, Any]:
    servers = (await editor.request("agentAssist/status"))["mcpServers"]
    return next(s for s in servers if s["name"] == name)


async def until_started(editor: Editor, name: str) -> dict[str, Any]:
    """Wait until the server's start (at session start, in the background) has ended."""

    async def poll() -> dict[str, Any]:
        while (state := await status_of(editor, name))["state"] == "not started":
            await asyncio.sleep(0.05)
        return state

    return await asyncio.wait_for(poll(), 30)


async def test_an_mcp_servers_tools_are_called_confirmed_recorded_and_fail_alone(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    notes = workspace.parent / "notes.txt"
    options = {
        "instanceId": "test-window",
        "mcpServers": {
            "fx": {
                "command": sys.executable,
                "args": [WITH_GARBAGE],
                "env": {"MCP_FIXTURE_NOTES": str(notes)},
                "timeout": 3,
                "confirm": ["echo"],
            },
            "junk": {"command": sys.executable, "args": ["-c", GARBAGE], "startTimeout": 2},
        },
    }
    editor: Editor = make_editor(options=options, answers=answer)
    await editor.start()
    await editor.ready()

    # Started with the session: status lists the servers and their tools.
    fx = await until_started(editor, "fx")
    assert (fx["kind"], fx["source"], fx["state"]) == ("stdio", "settings", "connected")
    assert {"echo", "pid", "crash", "hang"} <= set(fx["tools"]) and "dotted.name" not in fx["tools"]
    junk = await until_started(editor, "junk")
    assert junk["state"] == "failed" and junk["reason"]

    # A confirmed call runs and is recorded; the model sees it as fx_echo.
    fake.add({"tool_calls": [{"name": "fx_echo", "arguments": {"text": "yes"}}]}, "it echoed")
    reply = await editor.request("agentAssist/chat", {"text": "echo yes"})
    assert reply["text"] == "it echoed"
    offered = [t["function"]["name"] for t in fake.requests[-2].body.get("tools", [])]
    assert "fx_echo" in offered and not any(name.startswith("junk_") for name in offered)
    assert "echo: yes" in tool_results(fake)[-1]
    calls = editor.notifications["agentAssist/toolCall"]
    assert [(c["tool"], c["status"]) for c in calls[-2:]] == [
        ("fx_echo", "started"),
        ("fx_echo", "done"),
    ]
    hits = (await editor.request("agentAssist/search", {"query": "echo: yes"}))["results"]
    assert hits and hits[0]["sessionId"] == reply["sessionId"]

    # A "no" to the question: nothing runs, the model is told.
    fake.add({"tool_calls": [{"name": "fx_echo", "arguments": {"text": "no"}}]}, "refused")
    assert (await editor.request("agentAssist/chat", {"text": "echo no"}))["text"] == "refused"
    assert "did not allow" in tool_results(fake)[-1]
    asked = [q.message for q in editor.questions if "MCP server 'fx'" in q.message]
    assert len(asked) == 2 and '"text": "no"' in asked[-1]
    assert notes.read_text(encoding="utf-8").splitlines() == ["echo yes"]

    # A server that hangs mid-call: the call is given up, the turn goes on.
    fake.add({"tool_calls": [{"name": "fx_hang", "arguments": {}}]}, "it hung")
    assert (await editor.request("agentAssist/chat", {"text": "hang"}))["text"] == "it hung"
    assert "did not answer hang within 3 s" in tool_results(fake)[-1]
    assert (await status_of(editor, "fx"))["state"] == "connected"

    # Garbage on the server's stdout mid-call: the call still ends, the turn goes on.
    fake.add({"tool_calls": [{"name": "fx_garbage", "arguments": {}}]}, "it garbled")
    assert (await editor.request("agentAssist/chat", {"text": "garbage"}))["text"] == "it garbled"
    assert "answered after the garbage" in tool_results(fake)[-1]
    assert (await status_of(editor, "fx"))["state"] == "connected"

    # A server that crashes mid-call: a tool error; it is started again at the next step.
    fake.add({"tool_calls": [{"name": "fx_crash", "arguments": {}}]}, "it crashed")
    assert (await editor.request("agentAssist/chat", {"text": "crash"}))["text"] == "it crashed"
    assert "failed during crash" in tool_results(fake)[-1]
    assert (await status_of(editor, "fx"))["state"] == "connected"
    fake.add({"tool_calls": [{"name": "fx_pid", "arguments": {}}]}, "back")
    assert (await editor.request("agentAssist/chat", {"text": "pid"}))["text"] == "back"
    pid = int(tool_results(fake)[-1].strip().strip('"'))
    assert (await status_of(editor, "fx"))["state"] == "connected"

    # Shutdown ends the server's process too.
    await editor.stop()
    await asyncio.wait_for(_gone(pid), 20)
    events = stored(workspace, home).read_events(reply["sessionId"]).events
    recorded = [e for e in events if e.type == "tool/call"]
    assert [e.data.name for e in recorded] == [
        "fx_echo",
        "fx_echo",
        "fx_hang",
        "fx_garbage",
        "fx_crash",
        "fx_pid",
    ]


async def _gone(pid: int) -> None:
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        await asyncio.sleep(0.05)


async def test_a_bad_mcp_server_setting_is_shown_and_the_rest_are_used(
    make_editor, workspace: Path
) -> None:
    options = {
        "instanceId": "test-window",
        "mcpServers": {
            "nothing": {"args": ["x"], "type": "stdio"},
            "fx": {"command": sys.executable, "args": [SERVER]},
            "web": {"url": "ftp://example.invalid"},
        },
    }
    # A trusted project server whose tools would be named like the settings' fx: left out.
    (workspace / ".agent-assist").mkdir()
    clash = {"mcpServers": {"FX": {"command": sys.executable, "args": [SERVER]}}}
    (workspace / ".agent-assist" / "mcp.json").write_text(json.dumps(clash))
    trusting = {"AGENT_ASSIST_TRUST_PROJECT_MCP": "1"}
    editor: Editor = make_editor(options=options, env=trusting)
    await editor.start()
    await editor.ready()
    servers = (await editor.request("agentAssist/status"))["mcpServers"]
    assert [s["name"] for s in servers] == ["fx"]
    messages = shown(editor)
    assert any("'nothing'" in m and "needs a command" in m for m in messages)
    assert any("'web'" in m and "http://" in m for m in messages)
    assert any("mcp.json" in m and "'FX'" in m and "left out" in m for m in messages)
    await until_started(editor, "fx")
    await editor.stop()
