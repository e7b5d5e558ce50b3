"""The SDK's own client side driving `agent-assist acp` over stdio, with a private store."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

AGENT = (sys.executable, "-m", "lsp_server.cli", "acp")


def agent_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for the agent: our store, no real model credentials."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_ASSIST_"))}
    env.update(
        {
            "AGENT_ASSIST_HOME": str(home),
            "AGENT_ASSIST_SEED_HOME": str(home.parent / "no-seed-store"),
            "PYDANTIC_AI_NO_BANNER": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra or {})
    return env


@dataclass
class Recorder:
    """The client: records every update; answers permission requests as told."""

    updates: list[tuple[str, Any]] = field(default_factory=list)
    asked: list[Any] = field(default_factory=list)
    answer: str | None = "allow"  # the option chosen (None: the question dismissed)
    writes: list[tuple[str, str]] = field(default_factory=list)  # fs/write_text_file
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.arrived.set()

    async def request_permission(
        self, options: Any, session_id: str, tool_call: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        if self.answer is not None:
            return RequestPermissionResponse(
                outcome=AllowedOutcome(outcome="selected", option_id=self.answer)
            )
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append((path, content))
        return WriteTextFileResponse()

    def on_connect(self, conn: Any) -> None:
        pass

    def of(self, session_id: str) -> list[Any]:
        """Return the updates of one session, in order."""
        return [u for sid, u in self.updates if sid == session_id]

    def clear(self) -> None:
        self.updates.clear()

    async def until(self, predicate: Any, timeout: float = 30) -> None:
        """Wait until `predicate(self)` holds (woken by each update)."""

        async def wait() -> None:
            while not predicate(self):
                self.arrived.clear()
                await self.arrived.wait()

        await asyncio.wait_for(wait(), timeout)


def texts(updates: list[Any], kind: str) -> list[str]:
    """Return the texts of the updates of `kind` (`user_message_chunk`…)."""
    return [u.content.text for u in updates if u.session_update == kind]


@dataclass
class Running:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: Recorder
    stderr: Path

    async def initialize(self, name: str = "acp-test", *, writes: bool = False) -> Any:
        return await self.conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=writes, write_text_file=writes)
            ),
            client_info=Implementation(name=name, version="1.0"),
        )

    async def raw(self, method: str, params: Any) -> Any:
        """Send a request the SDK's client has no method for (`session/delete`)."""
        return await self.conn._conn.send_request(method, params)  # noqa: SLF001

    async def write(self, data: bytes) -> None:
        """Write bytes to the agent's stdin as they are (malformed input)."""
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()


@contextlib.asynccontextmanager
async def running_agent(
    workspace: Path,
    home: Path,
    *args: str,
    env: dict[str, str] | None = None,
    client: Recorder | None = None,
) -> AsyncIterator[Running]:
    """Start `agent-assist acp`; yield it; close its stdin and wait for it at the end."""
    recorder = client or Recorder()
    log = home.parent / f"agent-stderr-{os.urandom(3).hex()}.log"
    with log.open("wb") as stderr:
        async with spawn_agent_process(
            recorder,  # type: ignore[arg-type]
            *AGENT,
            *args,
            env=agent_env(home, env),
            cwd=workspace,
            transport_kwargs={"stderr": stderr},
            use_unstable_protocol=True,
        ) as (conn, process):
            yield Running(conn, process, recorder, log)
