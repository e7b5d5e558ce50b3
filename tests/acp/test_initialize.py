"""initialize: the version, the capabilities, the agent's name; nothing heavy imported for it."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import acp_edge
from tests.acp.harness import Running

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_pyprojects() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert acp_edge.__version__ == project["version"]


async def test_initialize_says_what_the_agent_can_do(start) -> None:
    async with start() as agent:
        answer = await agent.conn.initialize(protocol_version=7)
    assert answer.protocol_version == 1  # the one we speak, for a client that asked a later one
    caps = answer.agent_capabilities
    assert caps.load_session is True
    sessions = caps.session_capabilities
    for name in ("list", "resume", "close", "delete", "fork"):
        assert getattr(sessions, name) is not None, name
    assert caps.prompt_capabilities.embedded_context is True
    assert (answer.agent_info.name, answer.agent_info.version) == ("agent-assist", "0.1.0")
    assert answer.auth_methods == []


async def test_the_agent_serves_initialize_first_and_every_method(agent: Running) -> None:
    listed = await agent.conn.list_sessions()
    assert listed.sessions == []  # the process's directory: the test's project, no session yet


PROBE = """
import asyncio, json, sys
from lsp_server.cli import build_parser
args = build_parser().parse_args(["acp"])
from acp_edge.agent import AcpAgent
from acp_edge.connection import route
from acp_edge.sessions import Sessions
agent = AcpAgent(Sessions({}, {}))
route(agent)
asyncio.run(agent.initialize(protocol_version=1))
heavy = ("pygls", "lsprotocol", "pydantic_ai", "openai", "httpx")
heavy += ("engine.core", "lsp_server.server")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m in heavy)))
"""


FIRST = """
import json, sys
from lsp_server.cli import build_parser
build_parser().parse_args(["acp"])
from acp_edge import hello, process
hello.initialize_result()
heavy = ("acp", "pydantic", "engine")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


def test_the_first_initialize_is_answered_without_the_sdk() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FIRST], cwd=ROOT, capture_output=True, check=True, text=True
    )
    assert json.loads(done.stdout) == []


def test_the_answer_is_acps_initialize_response() -> None:
    from acp.schema import InitializeResponse

    from acp_edge.hello import initialize_result

    result = initialize_result()
    parsed = InitializeResponse.model_validate(result)
    assert parsed.model_dump(mode="json", by_alias=True, exclude_unset=True) == result


def test_initialize_imports_neither_the_lsp_side_nor_the_model_side() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, check=True, text=True
    )
    assert json.loads(done.stdout) == []
