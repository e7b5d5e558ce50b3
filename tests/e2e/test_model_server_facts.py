"""What a model server says of itself: its window (`/props`, `/v1/models`) and its tools.

Asked once per model and base URL, in the background after `initialize`; the first turn
waits for it a few seconds at most. llama-cpp-python with the model's own chat template
(its default) drops the tools without an error: a one-token request that forces a tool call
tells it from its function-calling formats, which refuse it (HTTP 500).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI
from lsp_server.fake_model.script import LLAMA_CPP_PYTHON_ENTRY

from .harness import Editor, shown

pytestmark = pytest.mark.parametrize("client_name", ["vscode"])


def no_tool_warnings(editor: Editor) -> list[str]:
    return [m for m in shown(editor) if "llama-cpp-python gives this model no tools" in m]


async def status_when(editor: Editor, wanted: Any) -> dict[str, Any]:
    """Poll `agentAssist/status` until `wanted(status)` (learned in the background)."""

    async def poll() -> dict[str, Any]:
        while not wanted(status := await editor.request("agentAssist/status")):
            await asyncio.sleep(0.02)
        return status

    return await asyncio.wait_for(poll(), 20)


async def test_llama_cpp_pythons_own_template_drops_the_tools_and_is_said_once(
    make_editor, fake: FakeOpenAI
) -> None:
    fake.models_entry = dict(LLAMA_CPP_PYTHON_ENTRY)
    fake.add("I have no file tools.", "answer 2")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "Read agent_spec.md"})
    assert reply["text"] == "I have no file tools."
    (warning,) = no_tool_warnings(editor)  # said before the first reply: the turn waited
    assert "--chat_format chatml-function-calling" in warning
    assert "cannot read or write workspace files" in warning
    await editor.request("agentAssist/chat", {"text": "question 2"})
    assert [bool(r.body.get("tools")) for r in fake.requests] == [False, False]
    assert len(fake.probes) == 1 and len(no_tool_warnings(editor)) == 1  # asked once, said once
    probe = fake.probes[0]
    assert probe["max_tokens"] == 1 and probe["tool_choice"] == "required" and probe["tools"]
    await editor.stop()


async def test_llama_cpp_python_with_function_calling_keeps_the_tools(
    make_editor, fake: FakeOpenAI
) -> None:
    fake.models_entry = dict(LLAMA_CPP_PYTHON_ENTRY)
    fake.tool_streams = False  # chatml-function-calling: its assertion refuses the probe
    fake.add("answer 1")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "question 1"})
    assert len(fake.probes) == 1 and bool(fake.requests[0].body.get("tools"))
    assert not no_tool_warnings(editor)
    await editor.stop()


async def test_another_server_is_never_probed(make_editor, fake: FakeOpenAI) -> None:
    fake.add("answer 1")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "question 1"})
    assert fake.probes == [] and bool(fake.requests[0].body.get("tools"))
    status = await editor.request("agentAssist/status")
    assert (status["contextWindow"], status["contextWindowSource"]) == (128_000, "default")
    await editor.stop()


@pytest.mark.parametrize(
    "entry",
    [{"max_model_len": 4096}, {"context_length": 4096}, {"meta": {"n_ctx_train": 4096}}],
)
async def test_the_window_a_models_entry_states_is_shown_before_any_turn(
    make_editor, fake: FakeOpenAI, entry: dict[str, Any]
) -> None:
    fake.models_entry = entry
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    status = await status_when(editor, lambda s: s["contextWindow"] != 128_000)
    assert (status["contextWindow"], status["contextWindowSource"]) == (4096, "/v1/models")
    assert fake.requests == []  # learned without a turn
    await editor.stop()


async def test_a_window_the_user_set_wins_over_the_servers(make_editor, fake: FakeOpenAI) -> None:
    fake.models_entry = {"max_model_len": 4096}
    fake.add("answer 1")
    editor: Editor = make_editor(options={"instanceId": "w", "contextWindow": 8000})
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "question 1"})  # waited for the answer
    status = await editor.request("agentAssist/status")
    assert (status["contextWindow"], status["contextWindowSource"]) == (8000, "setting")
    await editor.stop()


async def test_max_output_tokens_is_sent_with_every_chat_request(
    make_editor, fake: FakeOpenAI
) -> None:
    fake.add("answer 1")
    options = {"instanceId": "w", "model": None}
    editor: Editor = make_editor(options=options)
    options["model"] = {"name": "m", "baseUrl": fake.base_url, "maxOutputTokens": 300}
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "question 1"})
    body = fake.requests[0].body
    assert body.get("max_tokens") == 300 and "max_completion_tokens" not in body, body.keys()
    await editor.stop()


async def test_another_model_server_forgets_the_window_the_first_one_stated(
    make_editor, fake: FakeOpenAI
) -> None:
    from lsprotocol import types

    fake.models_entry = {"max_model_len": 4096}
    fake.add("answer 1")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "question 1"})
    status = await editor.request("agentAssist/status")
    assert (status["contextWindow"], status["contextWindowSource"]) == (4096, "/v1/models")
    with FakeOpenAI(label="second") as second:
        second.add("answer 2")
        changes = {"model": {"name": second.model_id, "baseUrl": second.base_url}}
        editor.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"agentAssist": changes})
        )
        await status_when(editor, lambda s: s["model"] == second.model_id)
        await editor.request("agentAssist/chat", {"text": "question 2"})  # asks it first
        status = await editor.request("agentAssist/status")
        # it states none: the default again, not the first server's 4096
        assert (status["contextWindow"], status["contextWindowSource"]) == (128_000, "default")
        assert len(second.requests) == 1
    await editor.stop()
