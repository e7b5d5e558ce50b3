"""What real model servers do differently, through the real server and the real OpenAI client.

A server that takes no tools for the model: Ollama answers a request with tools for a
model whose template has none with HTTP 400 ("... does not support tools"), llama-server
started without `--jinja` with HTTP 500, vLLM without `--enable-auto-tool-choice` with
HTTP 400; the chat carries on without them. A reasoning model streams its thinking in a
field of its own before the answer (`reasoning_content`: vLLM, llama-server, DeepSeek;
`reasoning`: Ollama). A tool call without text, sent back as `content: null` (as the OpenAI
API has it), is refused by llama-cpp-python and older llama-server builds; it is sent as
an empty string from then on. llama-cpp-python's function calling cannot stream a tool
call (an empty stream): the rest of the turn is asked in one piece.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor, shown, stored
from .test_chat import assert_requests_rebuildable
from .test_summary import wait_summaries

pytestmark = pytest.mark.parametrize("client_name", ["vscode"])


def refusal_warnings(editor: Editor) -> list[str]:
    return [m for m in shown(editor) if "takes no tools for this model" in m]


def system_text(messages: list[dict[str, Any]]) -> str:
    return " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")


@pytest.mark.parametrize("style", ["ollama", "llama-server", "vllm"])
async def test_a_model_without_tools_is_chatted_with_without_them(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path, style: str
) -> None:
    fake.no_tools = style
    fake.add("answer 1", "answer 2")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "question 1"})
    assert reply["text"] == "answer 1" and reply["endReason"] == "completed"
    (warning,) = refusal_warnings(editor)
    assert "cannot read or write workspace files" in warning
    first, second = fake.requests[0].body, fake.requests[1].body
    assert first.get("tools") and not second.get("tools")  # refused, then asked without
    assert "you have no tools" in system_text(second["messages"])
    assert "Use the tools" not in system_text(second["messages"])
    events = stored(workspace, home).read_events(reply["sessionId"]).events
    assert [e.data.kind for e in events if e.type == "step/retry"] == ["no-tools"]
    again = await editor.request("agentAssist/chat", {"text": "question 2"})
    assert again["text"] == "answer 2" and len(fake.requests) == 3  # no refusal this time
    assert not fake.requests[2].body.get("tools") and len(refusal_warnings(editor)) == 1
    await editor.stop()


def template_warnings(editor: Editor) -> list[str]:
    return [m for m in shown(editor) if "the model's chat template has none" in m]


async def shown_soon(editor: Editor, which: Callable[[Editor], list[str]]) -> list[str]:
    """Wait for a message shown after a turn (asked in the background once it is answered)."""
    while not which(editor):
        await asyncio.sleep(0.02)
    return which(editor)


async def test_llama_server_whose_template_drops_the_tools_is_chatted_with_without_them(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    """llama-server drops the tools of a template without them, with no error: its /props say.

    Asked before the first turn is sent (the turn waits for the answer): the model is told
    from the first request that it has no tools, and the user is told once.
    """
    fake.template_tools = False
    fake.add("I cannot read files.", "answer 2", "answer 3")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "read agent_spec.md"})
    assert reply["text"] == "I cannot read files." and reply["endReason"] == "completed"
    (warning,) = await asyncio.wait_for(shown_soon(editor, template_warnings), 20)
    assert "cannot read or write workspace files" in warning and "--chat-template-file" in warning
    again = await editor.request("agentAssist/chat", {"text": "question 2"})
    assert again["text"] == "answer 2"
    await editor.request("agentAssist/chat", {"text": "question 3"})
    assert [bool(r.body.get("tools")) for r in fake.requests] == [False, False, False]
    assert "you have no tools" in system_text(fake.requests[0].body["messages"])
    assert len(template_warnings(editor)) == 1  # asked once, said once
    await editor.stop()


@pytest.mark.parametrize("takes", [True, None])
async def test_a_server_whose_template_takes_tools_or_that_is_not_llama_server_keeps_them(
    make_editor, fake: FakeOpenAI, takes: bool | None
) -> None:
    """/props saying supports_tools: true, or a server that is not llama-server (no /props)."""
    fake.template_tools = takes
    fake.add("answer 1", "answer 2")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "question 1"})
    await editor.request("agentAssist/chat", {"text": "question 2"})
    assert [bool(r.body.get("tools")) for r in fake.requests] == [True, True]
    assert not template_warnings(editor)
    await editor.stop()


async def test_llama_servers_window_is_taken_from_its_props_before_any_prompt_overflows(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    """/props give a slot's n_ctx: the session is compacted in time, never refused."""
    fake.template_tools = True
    fake.context_window, fake.overflow = 2048, "llama-server"
    fake.add(*["OK"] * 8)
    editor: Editor = make_editor()
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    filler = "The agent answers questions about orders and refunds, politely. " * 12  # ~200
    await editor.request("agentAssist/chat", {"text": f"Turn 1. {filler}"})

    async def window() -> int:
        while (status := await editor.request("agentAssist/status"))["contextWindow"] > 2048:
            await asyncio.sleep(0.02)
        return int(status["contextWindow"])

    assert await asyncio.wait_for(window(), 20) == 2048  # read before the first turn was sent
    status = await editor.request("agentAssist/status")
    assert status["contextWindowSource"] == "/props"
    for n in range(2, 9):
        reply = await editor.request("agentAssist/chat", {"text": f"Turn {n}. {filler}"})
        assert reply["endReason"] == "completed" and reply["attempts"] == 1
    events = stored(workspace, home).read_events(session_id).events
    assert not [e for e in events if e.type == "step/retry"]  # no prompt was ever refused
    assert any(e.type == "session/compact" for e in events)  # compacted to fit, in time
    await editor.stop()


async def test_the_summary_of_a_model_without_tools_is_asked_for_as_json_text(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.no_tools = "ollama"
    editor: Editor = make_editor(env={"AGENT_ASSIST_SUMMARY_DELAY": "0.05"})
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "plan the storage layer"})
    (summary,) = await wait_summaries(workspace, home, session_id, count=1)
    # The model's own summary (the fake's default: the user's requests), not the fallback.
    assert summary.data.summary.startswith("Running summary: the user asked")
    # The chat found the tools refused first: the summary is asked without them at once.
    assert [bool(r.body.get("tools")) for r in fake.summary_requests] == [False]
    await editor.stop()


async def test_a_summary_the_server_cannot_force_a_tool_for_is_asked_as_json_text(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    """llama-cpp-python's function calling fails a forced tool choice (structured output)."""
    fake.tool_streams = False
    editor: Editor = make_editor(env={"AGENT_ASSIST_SUMMARY_DELAY": "0.05"})
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "plan the storage layer"})
    (summary,) = await wait_summaries(workspace, home, session_id, count=1)
    assert summary.data.summary.startswith("Running summary: the user asked")  # the model's
    forced = [r.body.get("tool_choice") for r in fake.summary_requests]
    assert forced == ["required", None]  # then the schema in the prompt, the JSON as text
    await editor.stop()


@pytest.mark.parametrize("style", ["llama-cpp", "llama-server"])
async def test_a_server_that_refuses_a_tool_call_without_text_gets_an_empty_one(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path, style: str
) -> None:
    """llama-cpp-python and older llama-server refuse `content: null`: every later turn failed."""
    fake.null_content = style
    (workspace / "notes.md").write_text("the notes\n")
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]}
    fake.add(read, "The notes say: the notes.", "answer 2")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "what do the notes say?"})
    assert reply["text"] == "The notes say: the notes." and reply["attempts"] == 2
    assistant = [m for m in fake.requests[-1].body["messages"] if m.get("role") == "assistant"]
    assert [m.get("content") for m in assistant] == [""] and assistant[0]["tool_calls"]
    events = stored(workspace, home).read_events(reply["sessionId"]).events
    assert [e.data.kind for e in events if e.type == "step/retry"] == ["null-content"]
    asked = len(fake.requests)
    again = await editor.request("agentAssist/chat", {"text": "and then?"})
    assert again["text"] == "answer 2" and again["attempts"] == 1  # remembered: no refusal
    assert len(fake.requests) == asked + 1
    await editor.stop()


async def test_a_server_that_cannot_stream_a_tool_call_is_asked_in_one_piece_all_turn(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    """llama-cpp-python's chatml-function-calling sends an empty stream for a tool call."""
    fake.tool_streams = False
    (workspace / "a.md").write_text("first\n")
    (workspace / "b.md").write_text("second\n")
    fake.add(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.md"}}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "b.md"}}]},
        "Both read.",
        "Plain text streams.",
    )
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "read a.md, then b.md"})
    assert reply["text"] == "Both read." and reply["endReason"] == "completed"
    streamed = [bool(r.body.get("stream")) for r in fake.requests]
    assert streamed == [True, False, False, False]  # after the empty stream: all in one piece
    events = stored(workspace, home).read_events(reply["sessionId"]).events
    assert [e.data.kind for e in events if e.type == "step/retry"] == ["empty"]
    assert [e.data.name for e in events if e.type == "tool/call"] == ["read_file"] * 2
    again = await editor.request("agentAssist/chat", {"text": "say something"})
    assert again["text"] == "Plain text streams." and fake.requests[-1].body.get("stream")
    await editor.stop()


async def test_a_request_asked_in_one_piece_that_fails_is_in_the_log(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    """The log says what was sent even when no answer came: every request rebuilds from it."""
    fake.tool_streams = False
    (workspace / "a.md").write_text("first\n")
    fake.add(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.md"}}]},
        {"error": 503, "message": "overloaded"},
        "Read it.",
    )
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "read a.md"})
    assert reply["text"] == "Read it." and reply["endReason"] == "completed"
    events = stored(workspace, home).read_events(reply["sessionId"]).events
    assert [e.data.kind for e in events if e.type == "step/retry"] == ["empty", "server"]
    steps = [e.type for e in events if e.type.startswith("step/")]
    assert steps.count("step/start") == len(fake.requests) == 4  # the failed one too
    await editor.stop()
    assert_requests_rebuildable(fake, workspace, home, reply["sessionId"])


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_a_reasoning_models_thinking_is_kept_but_never_shown_as_the_answer(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path, field: str
) -> None:
    thinking = "The user wants a sum. Two and two make four. "
    think = {"reasoning": thinking * 4, "reasoning_field": field, "delay": 0.05}
    fake.add({"text": "It is 4.", **think}, "Six.")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "what is 2+2?"})
    assert reply["text"] == "It is 4." and editor.deltas() == "It is 4."
    # While it thought, the editor showed progress (no text: the answer had not begun).
    (reports,) = editor.client.progress_reports.values()
    assert [r.kind for r in reports] == ["begin", "end"]
    assert reports[0].title == "The model is thinking" and reports[1].message.startswith(
        "thought for "
    )
    events = stored(workspace, home).read_events(reply["sessionId"]).events
    (message,) = [e.data.message for e in events if e.type == "assistant/message"]
    kinds = [part["part_kind"] for part in message["parts"]]
    assert kinds == ["thinking", "text"] and message["parts"][0]["content"] == thinking * 4
    transcript = await editor.request("agentAssist/history", {"sessionId": reply["sessionId"]})
    assert "Two and two" not in str(transcript)  # the transcript shows the answer only
    await editor.request("agentAssist/chat", {"text": "and 3+3?"})
    (answered,) = [m for m in fake.messages(-1) if m.get("role") == "assistant"]
    assert answered["content"] == "It is 4."  # the thinking goes back in its own field
    assert answered.get(field) == thinking * 4
    await editor.stop()
