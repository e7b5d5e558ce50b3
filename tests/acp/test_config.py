"""The model as a session config option (offered, listed, set), and `authenticate`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import ReadTextFileResponse

from acp_edge import hello
from acp_edge.model_option import model_values
from engine.config import parse_initialization_options
from engine.model.server_facts import model_ids
from engine.options import env_vars
from lsp_server.fake_model import FakeOpenAI
from lsp_server.fake_model.replies import is_summary_request
from tests.acp.harness import Recorder, Running

Start = Callable[..., AbstractAsyncContextManager[Running]]
CONFIGURED = "test-model"  # the conftest's --model; the fake server lists its own id


def model_of(options: list[Any]) -> tuple[str, list[str]]:
    """Return the model option's current value and its values."""
    [option] = options
    assert (option.id, option.category, option.type) == ("model", "model", "select")
    return option.current_value, [o.value for o in option.options]


def asked_model(fake: FakeOpenAI) -> str:
    """Return the model the last turn's request named (not a background summary's)."""
    return [r for r in fake.requests if not is_summary_request(r.body)][-1].body["model"]


async def listed(agent: Running, sid: str) -> list[Any]:
    """Wait for the `config_option_update` with the models the server listed; return it."""

    def update(client: Any) -> Any:
        found = [u for u in client.of(sid) if u.session_update == "config_option_update"]
        return found[-1] if found else None

    await agent.client.until(update)
    return update(agent.client).config_options


async def test_the_model_is_offered_with_the_models_the_server_lists(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    new = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    current, values = model_of(new.config_options)
    assert current == CONFIGURED and values[0] == CONFIGURED
    options = await listed(agent, new.session_id)
    assert model_of(options) == (CONFIGURED, [CONFIGURED, fake.model_id])


async def test_load_and_resume_offer_the_model(start: Start, workspace: Path) -> None:
    async with start() as agent:
        await agent.initialize()
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await agent.conn.prompt(session_id=sid, prompt=[text_block("hello")])
    async with start() as agent:
        await agent.initialize()
        loaded = await agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        assert model_of(loaded.config_options)[0] == CONFIGURED
        await agent.conn.close_session(session_id=sid)
        resumed = await agent.conn.resume_session(
            cwd=str(workspace), session_id=sid, mcp_servers=[]
        )
        assert model_of(resumed.config_options)[0] == CONFIGURED


async def test_the_chosen_model_is_asked_from_the_next_turn_on(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    await agent.conn.prompt(session_id=sid, prompt=[text_block("first")])
    assert asked_model(fake) == CONFIGURED
    await listed(agent, sid)
    answer = await agent.conn.set_config_option(
        config_id="model", session_id=sid, value=fake.model_id
    )
    assert model_of(answer.config_options) == (fake.model_id, [CONFIGURED, fake.model_id])
    await agent.conn.prompt(session_id=sid, prompt=[text_block("second")])
    assert asked_model(fake) == fake.model_id
    back = await agent.conn.set_config_option(config_id="model", session_id=sid, value=CONFIGURED)
    assert model_of(back.config_options)[0] == CONFIGURED


@pytest.mark.parametrize(
    ("config_id", "value"), [("model", "no-such-model"), ("temperature", "hot")]
)
async def test_a_value_not_offered_is_invalid_params(
    agent: Running, workspace: Path, fake: FakeOpenAI, config_id: str, value: str
) -> None:
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    with pytest.raises(RequestError) as raised:
        await agent.conn.set_config_option(config_id=config_id, session_id=sid, value=value)
    assert raised.value.code == -32602
    assert value in str(raised.value) or config_id in str(raised.value)
    await agent.conn.prompt(session_id=sid, prompt=[text_block("still")])
    assert asked_model(fake) == CONFIGURED


async def test_no_auth_method_with_a_key_or_a_local_server(start: Start, fake: FakeOpenAI) -> None:
    async with start() as agent:  # a key in the environment
        assert (await agent.initialize()).auth_methods == []
    local = ("--model", "m", "--base-url", fake.base_url)  # 127.0.0.1, no key
    async with start(*local, env={"AGENT_ASSIST_LLM_API_KEY": ""}) as agent:
        assert (await agent.initialize()).auth_methods == []


async def test_a_remote_server_without_a_key_says_where_the_key_goes(start: Start) -> None:
    remote = ("--model", "m", "--base-url", "https://models.example.invalid/v1")
    async with start(*remote, env={"AGENT_ASSIST_LLM_API_KEY": ""}) as agent:
        [method] = (await agent.initialize()).auth_methods
        assert method.id == hello.API_KEY_METHOD
        assert "AGENT_ASSIST_LLM_API_KEY" in (method.description or "")
        with pytest.raises(RequestError) as raised:
            await agent.conn.authenticate(method_id=method.id)
        assert raised.value.code == -32603
        assert "AGENT_ASSIST_LLM_API_KEY" in str(raised.value)
        with pytest.raises(RequestError) as unknown:
            await agent.conn.authenticate(method_id="oauth")
        assert unknown.value.code == -32602


@pytest.mark.parametrize(
    ("options", "env", "needed"),
    [
        ({}, {}, True),  # OpenAI itself, no key
        ({}, {"OPENAI_API_KEY": "sk-1"}, False),
        ({}, {"AGENT_ASSIST_LLM_API_KEY": " "}, True),  # blank is unset
        ({"model": {"baseUrl": "http://localhost:8080/v1"}}, {}, False),
        ({"model": {"baseUrl": "http://[::1]:8080/v1"}}, {}, False),
        ({}, {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, False),
        ({}, {"AGENT_ASSIST_LLM_BASE_URL": "https://api.example.com/v1"}, True),
        ({"model": {"baseUrl": "https://h/v1"}}, {"AGENT_ASSIST_LLM_API_KEY": "k"}, False),
    ],
)
def test_the_key_is_needed_as_the_engine_reads_it(
    options: dict[str, Any], env: dict[str, str], needed: bool
) -> None:
    assert hello.needs_key(options, env) is needed
    config, _ = parse_initialization_options(options, "acp-test", env, 1)
    model = config.model
    assert (model.api_key is None and not hello.is_local(model.base_url)) is needed


def test_the_hello_reads_the_variables_the_options_declare() -> None:
    assert hello.KEY_NAMES == env_vars()["model.apiKey"]
    assert hello.BASE_URL_NAMES == env_vars()["model.baseUrl"]


class HeldRead(Recorder):
    """A client whose `fs/read_text_file` waits until the test lets it answer."""

    def __init__(self) -> None:
        super().__init__()
        self.reading = asyncio.Event()
        self.answer_now = asyncio.Event()

    async def read_text_file(
        self, path: str, session_id: str, **kwargs: Any
    ) -> ReadTextFileResponse:
        self.reading.set()
        await self.answer_now.wait()
        return ReadTextFileResponse(content="buffer\n")


async def test_a_turn_in_flight_keeps_its_model(
    start: Start, workspace: Path, fake: FakeOpenAI
) -> None:
    client = HeldRead()
    async with start(client=client) as agent:
        await agent.initialize(writes=True)  # the client reads files
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await listed(agent, sid)
        read = {"name": "read_file", "arguments": {"path": "notes.md"}, "id": "r1"}
        fake.add({"tool_calls": [read]}, "read", "next turn")
        turn = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=[text_block("read notes")])
        )
        await asyncio.wait_for(client.reading.wait(), 30)  # between the turn's two requests
        await agent.conn.set_config_option(config_id="model", session_id=sid, value=fake.model_id)
        client.answer_now.set()
        assert (await turn).stop_reason == "end_turn"
        assert asked_model(fake) == CONFIGURED  # the turn's second request
        await agent.conn.prompt(session_id=sid, prompt=[text_block("again")])
        assert asked_model(fake) == fake.model_id


def test_the_listed_models_and_the_values_offered() -> None:
    body = {"data": [{"id": "b"}, {"id": "a"}, {"id": "b"}, {"id": " "}, {"x": 1}, "c"]}
    assert model_ids(body) == ("b", "a")
    assert model_ids({"error": "no"}) == () == model_ids(None)
    assert model_values("conf", "conf", ("x", "conf")) == ["conf", "x"]
    assert model_values("conf", "x", ()) == ["conf", "x"]  # the current one, even unlisted
    assert model_values(None, "x", ("y",)) == ["x", "y"]
