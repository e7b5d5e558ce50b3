"""What a model server's `/v1/models` says: which server it is, and the model's window."""

from __future__ import annotations

from typing import Any

import pytest

from engine.model.server_facts import (
    ServerFacts,
    entry_window,
    learn_server,
    model_entry,
    models_url,
    server_kind,
)
from lsp_server.fake_model import FakeOpenAI
from lsp_server.fake_model.script import LLAMA_CPP_PYTHON_ENTRY
from tests.fixtures import free_port


@pytest.mark.parametrize(
    ("entry", "window"),
    [
        ({"max_model_len": 32768}, 32768),  # vLLM
        ({"context_length": 200_000}, 200_000),  # OpenRouter, gateways
        ({"max_context_length": 8192}, 8192),  # LM Studio
        ({"context_window": 131_072}, 131_072),  # Groq
        ({"meta": {"n_ctx_train": 8192, "n_vocab": 49152}}, 8192),  # llama-server
        ({"max_model_len": 4096, "meta": {"n_ctx_train": 8192}}, 4096),
        ({"max_model_len": True}, None),
        ({"context_length": "4096"}, None),
        ({"context_length": 0}, None),
        ({"owned_by": "openai"}, None),
    ],
)
def test_the_window_an_entry_states(entry: dict[str, Any], window: int | None) -> None:
    assert entry_window(entry) == window


def test_the_entry_of_the_model_or_the_only_one() -> None:
    body = {"data": [{"id": "a"}, {"id": "b", "max_model_len": 1}]}
    assert model_entry(body, "b") == {"id": "b", "max_model_len": 1}
    assert model_entry(body, "c") is None  # several, none of them ours
    assert model_entry({"data": [{"id": "alias"}]}, "c") == {"id": "alias"}
    assert model_entry({"error": "no"}, "a") is None and model_entry([], "a") is None


def test_which_server_answered() -> None:
    assert server_kind("llama.cpp", None) == "llama-server"
    assert server_kind("uvicorn", {"id": "m", **LLAMA_CPP_PYTHON_ENTRY}) == "llama-cpp-python"
    assert server_kind("uvicorn", {"id": "m", "owned_by": "vllm"}) == "vllm"
    assert server_kind("uvicorn", {"id": "m", "owned_by": "me"}) == ""  # no `permissions`
    assert models_url("http://h:8080/v1/") == "http://h:8080/v1/models"


async def test_a_server_that_cannot_be_asked_says_nothing() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    assert await learn_server(url, None, "m", probe_tools=True) == ServerFacts()


async def test_llama_cpp_python_is_probed_only_when_tools_are_still_offered() -> None:
    with FakeOpenAI() as fake:
        fake.models_entry = dict(LLAMA_CPP_PYTHON_ENTRY)
        facts = await learn_server(fake.base_url, "k", fake.model_id, probe_tools=False)
        listed = (fake.model_id,)
        assert facts == ServerFacts("llama-cpp-python", models=listed) and fake.probes == []
        facts = await learn_server(fake.base_url, "k", fake.model_id, probe_tools=True)
        assert facts.takes_tools is False and len(fake.probes) == 1
        fake.tool_streams = False
        facts = await learn_server(fake.base_url, "k", fake.model_id, probe_tools=True)
        assert facts.takes_tools is True and fake.requests == []


async def test_llama_servers_props_window_wins_over_the_trained_one() -> None:
    with FakeOpenAI(template_tools=True, context_window=2048) as fake:
        fake.models_entry = {"meta": {"n_ctx_train": 8192}}
        facts = await learn_server(fake.base_url, None, fake.model_id, probe_tools=True)
    assert facts == ServerFacts("llama-server", 2048, "/props", True, (fake.model_id,))


async def test_a_probe_refused_with_a_reason_says_nothing_of_the_tools() -> None:
    """A template that raises on tools, a crash: not the function-calling handler's assertion."""
    with FakeOpenAI() as fake:
        fake.models_entry = dict(LLAMA_CPP_PYTHON_ENTRY)
        fake.probe_answer = lambda body: None  # type: ignore[method-assign]
        fake.add({"error": 500, "message": "jinja2: tools are not supported"})
        facts = await learn_server(fake.base_url, "k", fake.model_id, probe_tools=True)
    assert facts == ServerFacts("llama-cpp-python", takes_tools=None, models=(fake.model_id,))
