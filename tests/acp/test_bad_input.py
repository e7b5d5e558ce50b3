"""Bad input gets a JSON-RPC error and the agent keeps serving (raw lines on its stdin)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.acp.harness import agent_env


class Raw:
    """The agent spoken to line by line, with no client library in between."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        await self.process.stdin.drain()

    async def read(self) -> dict[str, Any]:
        """Return the next message that is not a notification."""
        assert self.process.stdout is not None
        while True:
            line = await asyncio.wait_for(self.process.stdout.readline(), 30)
            assert line, "the agent closed its output"
            message: dict[str, Any] = json.loads(line)
            if "method" not in message:
                return message

    async def call(self, request_id: int, method: str, params: Any) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        await self.send(json.dumps(body).encode())
        answer = await self.read()
        assert answer["id"] == request_id
        return answer


@pytest.fixture
async def raw(workspace: Path, home: Path) -> AsyncIterator[Raw]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lsp_server.cli",
        "acp",
        cwd=workspace,
        env=agent_env(home),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    talk = Raw(process)
    answer = await talk.call(0, "initialize", {"protocolVersion": 1})
    assert answer["result"]["protocolVersion"] == 1
    yield talk
    assert process.stdin is not None
    process.stdin.close()
    await asyncio.wait_for(process.wait(), 10)


async def test_a_line_that_is_not_json_is_a_parse_error(raw: Raw, workspace: Path) -> None:
    await raw.send(b'{"jsonrpc": "2.0", "id": 5, "method": ')
    answer = await raw.read()
    assert (answer["id"], answer["error"]["code"]) == (None, -32700)
    listed = await raw.call(6, "session/list", {"cwd": str(workspace)})
    assert listed["result"]["sessions"] == []


@pytest.mark.parametrize(
    "line",
    [b"[1, 2]", b'"text"', b'{"jsonrpc": "2.0", "id": 7, "method": 42}', b'{"jsonrpc": "2.0"}'],
)
async def test_json_that_is_not_a_message_is_an_invalid_request(
    raw: Raw, workspace: Path, line: bytes
) -> None:
    await raw.send(line)
    answer = await raw.read()
    assert answer["error"]["code"] == -32600
    assert (await raw.call(8, "session/list", {"cwd": str(workspace)}))["result"] is not None


async def test_an_unknown_method_is_method_not_found(raw: Raw, workspace: Path) -> None:
    answer = await raw.call(1, "session/frobnicate", {})
    assert answer["error"]["code"] == -32601
    answer = await raw.call(2, "_agent-assist/nothing", {})
    assert answer["error"]["code"] == -32601
    assert (await raw.call(3, "session/list", {"cwd": str(workspace)}))["result"] is not None


@pytest.mark.parametrize(
    ("method", "params", "says"),
    [
        (
            "session/load",
            {"sessionId": "../../etc", "cwd": "WORKSPACE", "mcpServers": []},
            "not an agent-assist",
        ),
        (
            "session/resume",
            {"sessionId": "0123456789ab", "cwd": "WORKSPACE", "mcpServers": []},
            "no session",
        ),
        ("session/prompt", {"sessionId": "0123456789ab", "prompt": []}, "not open"),
        ("session/close", {"sessionId": "nope"}, "not an agent-assist"),
        ("session/delete", {"sessionId": "0123456789ab"}, "no session"),
        ("session/new", {"cwd": "relative/dir", "mcpServers": []}, "not an absolute path"),
        ("session/new", {"cwd": "/no/such/directory", "mcpServers": []}, "not a directory"),
        ("session/list", {"cwd": "WORKSPACE", "cursor": "zzz"}, "cursor"),
        ("session/new", {"mcpServers": []}, "Invalid params"),
    ],
)
async def test_bad_params_are_invalid_params_that_say_what(
    raw: Raw, workspace: Path, method: str, params: dict[str, Any], says: str
) -> None:
    params = {k: str(workspace) if v == "WORKSPACE" else v for k, v in params.items()}
    answer = await raw.call(1, method, params)
    assert answer["error"]["code"] == -32602, answer
    assert says in answer["error"]["message"]
    made = await raw.call(2, "session/new", {"cwd": str(workspace), "mcpServers": []})
    assert len(made["result"]["sessionId"]) == 12
