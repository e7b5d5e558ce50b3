"""Opt-in: the real server against llama.cpp's own `llama-server` (SmolLM2-135M).

Not run by default: llama-server is built from source (cmake, ~10 min on 2 cores). Set
`AGENT_ASSIST_LLAMA_SERVER` to the binary and `AGENT_ASSIST_LLAMA_MODEL` to a GGUF file;
`AGENT_ASSIST_LLAMA_TEMPLATES` to llama.cpp's `models/templates` adds the test with a
template that takes tools, and `AGENT_ASSIST_LITELLM` to LiteLLM's `litellm` command
(`pip install 'litellm[proxy]'`) the tests through its proxy in front of it. The llama.cpp
that llama-cpp-python vendors builds it::

    pip download --no-deps --no-binary :all: llama-cpp-python -d /tmp/src
    cd /tmp/src && tar xzf llama_cpp_python-*.tar.gz && cd llama_cpp_python-*/vendor/llama.cpp
    cmake -B build -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \\
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF
    cmake --build build --target llama-server -j2   # build/bin/llama-server

What differs from llama-cpp-python: the stream carries usage (the cut check judges real
counts), a prompt over the window is HTTP 400 `exceed_context_size_error` with `n_ctx`,
`GET /props` gives a slot's window, and a model whose chat template has no tools
(SmolLM2's) gets none, without an error: only `/props` says so
(`chat_template_caps.supports_tools`). LiteLLM's proxy passes the
overflow on in words of its own around llama-server's message (no `n_ctx`), and asks for
an API key (its master key).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import Editor, shown
from tests.fixtures import free_port

from .common import (
    N_CTX,
    editor_for,
    events_of,
    exit_while_streaming,
    fill_the_window,
    retry_kinds,
)
from .common import serve as serve_server

LLAMA_SERVER = os.environ.get("AGENT_ASSIST_LLAMA_SERVER")
MODEL = os.environ.get("AGENT_ASSIST_LLAMA_MODEL")
TEMPLATES = os.environ.get("AGENT_ASSIST_LLAMA_TEMPLATES")
LITELLM = os.environ.get("AGENT_ASSIST_LITELLM")
LITELLM_KEY = "sk-agent-assist-test-0123456789"
pytestmark = pytest.mark.skipif(
    not (LLAMA_SERVER and MODEL),
    reason="set AGENT_ASSIST_LLAMA_SERVER and AGENT_ASSIST_LLAMA_MODEL to run against llama-server",
)
NO_TOOLS = "the model's chat template has none"


def serve(*extra: str) -> Iterator[str]:
    assert LLAMA_SERVER is not None and MODEL is not None
    port = free_port()
    yield from serve_server(
        [LLAMA_SERVER, "-m", MODEL, "--host", "127.0.0.1", "--port", str(port)]
        + ["-c", str(N_CTX), "-np", "1", "--alias", "smollm2", "--no-webui", *extra],
        port,
        "llama-server",
    )


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    yield from serve()


@pytest.fixture(scope="module")
def litellm(llama_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """LiteLLM's proxy in front of llama-server, as a gateway of many models would be."""
    if not LITELLM:
        pytest.skip("set AGENT_ASSIST_LITELLM to LiteLLM's `litellm` command")
    config = tmp_path_factory.mktemp("litellm") / "config.yaml"
    config.write_text(
        "model_list:\n  - model_name: smollm2\n    litellm_params:\n"
        f"      model: openai/smollm2\n      api_base: {llama_server}\n      api_key: none\n"
    )
    env = dict(os.environ, LITELLM_MASTER_KEY=LITELLM_KEY, LITELLM_LOCAL_MODEL_COST_MAP="True")
    port = free_port()
    argv = [LITELLM, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    yield from serve_server(argv, port, "LiteLLM", env)


async def warnings_shown(editor: Editor) -> list[str]:
    """Wait for the template warning (asked in the background once a turn is answered)."""
    while not [m for m in shown(editor) if NO_TOOLS in m]:
        await asyncio.sleep(0.05)
    return [m for m in shown(editor) if NO_TOOLS in m]


def instructions_sent(editor: Editor, session_id: str) -> list[str]:
    """The system prompt of each request (a header has its text when it changed)."""
    headers = [e.data for e in events_of(editor, session_id) if e.type == "request/header"]
    texts = {h.system_prompt_sha256: h.system_prompt for h in headers if h.system_prompt}
    return [texts[h.system_prompt_sha256] or "" for h in headers]


async def test_a_template_without_tools_is_said_and_the_chat_goes_on_without_them(
    tmp_path: Path, llama_server: str
) -> None:
    editor = editor_for(tmp_path, llama_server)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    first = await editor.request("agentAssist/chat", {"text": "Say hello in one line."})
    assert first["endReason"] == "completed"
    (warning,) = await asyncio.wait_for(warnings_shown(editor), 20)
    assert "supports_tools: false" in warning and "--chat-template-file" in warning
    second = await editor.request("agentAssist/chat", {"text": "Say goodbye in one line."})
    assert second["endReason"] == "completed"
    first_sent, second_sent = instructions_sent(editor, session_id)
    assert "Use the tools" in first_sent and "you have no tools" in second_sent
    await editor.stop()


@pytest.mark.skipif(not TEMPLATES, reason="set AGENT_ASSIST_LLAMA_TEMPLATES (models/templates)")
async def test_a_template_that_takes_tools_keeps_them(tmp_path: Path) -> None:
    assert TEMPLATES is not None
    template = Path(TEMPLATES) / "Qwen-Qwen2.5-7B-Instruct.jinja"  # ChatML, as SmolLM2's
    for url in serve("--chat-template-file", str(template)):
        editor = editor_for(tmp_path, url)
        await editor.start()
        session_id = (await editor.ready())["sessionId"]
        for text in ("Say hello in one line.", "Say goodbye in one line."):
            await editor.request("agentAssist/chat", {"text": text})
        await asyncio.sleep(1)  # the background check has had its answer
        assert not [m for m in shown(editor) if NO_TOOLS in m]
        assert all("Use the tools" in sent for sent in instructions_sent(editor, session_id))
        await editor.stop()


async def test_without_jinja_it_refuses_the_tools_and_the_chat_goes_on_without_them(
    tmp_path: Path,
) -> None:
    """`--no-jinja`: HTTP 500 "tools param requires --jinja flag" for any request with tools."""
    for url in serve("--no-jinja"):
        editor = editor_for(tmp_path, url)
        await editor.start()
        session_id = (await editor.ready())["sessionId"]
        first = await editor.request("agentAssist/chat", {"text": "Say hello in one line."})
        second = await editor.request("agentAssist/chat", {"text": "Say goodbye in one line."})
        assert (first["attempts"], second["attempts"]) == (2, 1)  # refused once, then without
        assert retry_kinds(editor, session_id) == ["no-tools"]
        (warning,) = [m for m in shown(editor) if "takes no tools for this model" in m]
        assert "tools param requires --jinja flag" in warning
        await editor.stop()


async def test_its_window_is_read_from_its_props_after_the_first_answer(
    tmp_path: Path, llama_server: str
) -> None:
    editor = editor_for(tmp_path, llama_server)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "Say hello in one line."})

    async def window() -> int:
        while (status := await editor.request("agentAssist/status"))["contextWindow"] > N_CTX:
            await asyncio.sleep(0.05)
        return int(status["contextWindow"])

    assert await asyncio.wait_for(window(), 20) == N_CTX  # -c 2048 -np 1: one slot's n_ctx
    assert retry_kinds(editor, session_id) == []  # known without a refused prompt
    await editor.stop()


async def test_a_full_window_heals_and_every_turn_completes(
    tmp_path: Path, llama_server: str
) -> None:
    editor = editor_for(tmp_path, llama_server)
    await editor.start()
    await editor.ready()
    # The window is read from /props after the first answer: compacted in time, a prompt
    # may still be refused where our estimate of its tokens fell short.
    _, events = await fill_the_window(editor, overflow=None)
    # The stream carries the server's counts: judged by the cut check, and let pass.
    usages = [e.data.usage for e in events if e.type == "step/end"]
    assert usages and not any(u.get("estimated") for u in usages)
    assert "truncated" not in [e.data.kind for e in events if e.type == "step/retry"]
    await editor.stop()


async def test_exit_while_a_real_model_streams_is_prompt(tmp_path: Path, llama_server: str) -> None:
    await exit_while_streaming(editor_for(tmp_path, llama_server))


async def test_a_full_window_behind_litellm_heals_with_the_window_in_its_words(
    tmp_path: Path, litellm: str
) -> None:
    """The window comes from llama-server's message inside LiteLLM's (no `n_ctx` field)."""
    editor = editor_for(tmp_path, litellm, api_key=LITELLM_KEY)
    await editor.start()
    await editor.ready()
    _, events = await fill_the_window(editor)  # asserts the window learned: 2,048
    usages = [e.data.usage for e in events if e.type == "step/end"]
    assert usages and not any(u.get("estimated") for u in usages)  # passed on in the stream
    await editor.stop()
