"""Chat over LSP: streaming, tools, errors, cancel, and model-visible ⟺ recorded."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor, shown, stored


async def test_fresh_chat_streams_and_records(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add({"text": "Hello from the model, streamed in pieces.", "chunk": 6})
    editor: Editor = make_editor()
    result = await editor.start()
    assert "agentAssist.chat" in result.capabilities.execute_command_provider.commands
    changed = await editor.ready()
    assert changed["reason"] == "new"
    reply = await editor.request("agentAssist/chat", {"text": "hi"})
    assert reply["text"] == "Hello from the model, streamed in pieces."
    assert reply["endReason"] == "completed" and reply["turn"] == 1
    assert editor.deltas() == reply["text"]
    assert len(editor.notifications["agentAssist/chatDelta"]) > 3
    started = editor.notifications["agentAssist/turnStarted"]
    assert started == [{"sessionId": reply["sessionId"], "turn": 1, "text": "hi"}]
    assert editor.questions == []  # nothing to resume on a fresh launch
    await editor.stop()
    manager = stored(workspace, home)
    events = manager.read_events(reply["sessionId"]).events
    assert [e.type for e in events][:3] == ["session/start", "turn/start", "step/start"]
    assert events[-1].type == "turn/end"
    started_by = events[1].data
    assert (started_by.edge, started_by.client) == ("lsp", "Test Editor")  # who sent it


async def test_tool_calls_are_streamed_recorded_and_rebuildable(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "agent_spec.md"}}]},
        {"text": "It describes a support agent."},
    )
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "what is in the spec?"})
    assert reply["text"] == "It describes a support agent."
    calls = editor.notifications["agentAssist/toolCall"]
    assert [(n["tool"], n["status"]) for n in calls] == [
        ("read_file", "started"),
        ("read_file", "done"),
    ]
    assert calls[0]["callId"] and calls[0]["callId"] == calls[1]["callId"]  # one call, start to end
    assert "three tools" in json.dumps(fake.messages(1))
    await editor.stop()
    assert_requests_rebuildable(fake, workspace, home, reply["sessionId"])
    events = stored(workspace, home).read_events(reply["sessionId"]).events
    order = [e.type for e in events if e.type.startswith(("step/", "tool/"))]
    # A step brackets its tools: step/end comes after the step's calls and results.
    assert order == ["step/start", "tool/call", "tool/result", "step/end", "step/start", "step/end"]


def assert_requests_rebuildable(
    fake: FakeOpenAI, workspace: Path, home: Path, session_id: str
) -> None:
    """Every request the model received can be rebuilt from the log alone."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    from session.derive.history import HistoryBuilder
    from session.derive.messages import cut_tool_results
    from session.events import RequestHeaderEvent, StepStartEvent, TurnStartEvent

    events = stored(workspace, home).read_events(session_id).events
    prompts: dict[str, str] = {}
    builder = HistoryBuilder()
    rebuilt: list[list[dict]] = []
    pending: list[dict] | None = None
    for event in events:
        if isinstance(event, StepStartEvent):
            pending = builder.request_messages(event.data.messages)
        builder.apply(event)
        if isinstance(event, RequestHeaderEvent):
            if event.data.system_prompt is not None:
                prompts[event.data.system_prompt_sha256] = event.data.system_prompt
            system = prompts[event.data.system_prompt_sha256]
            assert pending is not None
            cut_to = event.data.settings.get("tool_results_cut_to")
            if cut_to is not None:  # earlier results, cut to a window found smaller
                pending = cut_tool_results(pending, cut_to)[0]
            rebuilt.append(openai_messages(system, pending))
            pending = None
        if isinstance(event, TurnStartEvent):
            pass
    sent = [strip(r.body["messages"]) for r in fake.requests]
    assert len(rebuilt) == len(sent)
    for mine, theirs in zip(rebuilt, sent, strict=True):
        assert mine == theirs
    ModelMessagesTypeAdapter.validate_python(builder.messages())


def strip(messages: list[dict]) -> list[dict]:
    """Normalise the fields that matter for equality."""
    out = []
    for m in messages:
        item = {"role": m["role"], "content": m.get("content")}
        if m.get("tool_calls"):
            item["tool_calls"] = [
                (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in m["tool_calls"]
            ]
        if m.get("tool_call_id"):
            item["tool_call_id"] = m["tool_call_id"]
        out.append(item)
    return out


def openai_messages(system: str, messages: list[dict]) -> list[dict]:
    """Map derived pydantic-ai messages to the OpenAI chat format (the subset we use)."""
    out: list[dict] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if message["kind"] == "request":
            for part in message["parts"]:
                kind = part["part_kind"]
                if kind == "system-prompt":
                    out.append({"role": "system", "content": part["content"]})
                elif kind == "user-prompt":
                    content = part["content"]
                    if isinstance(content, list):
                        content = [{"type": "text", "text": c} for c in content]
                    out.append({"role": "user", "content": content})
                elif kind == "tool-return":
                    content = part["content"]
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": part["tool_call_id"],
                            "content": content
                            if isinstance(content, str)
                            else json.dumps(content, separators=(",", ":"), ensure_ascii=False),
                        }
                    )
        else:
            texts = [p["content"] for p in message["parts"] if p["part_kind"] == "text"]
            calls = [p for p in message["parts"] if p["part_kind"] == "tool-call"]
            item: dict = {"role": "assistant", "content": "\n\n".join(texts) if texts else None}
            if calls:
                item["tool_calls"] = [
                    (
                        c["tool_call_id"],
                        c["tool_name"],
                        c["args"] if isinstance(c["args"], dict) else json.loads(c["args"] or "{}"),
                    )
                    for c in calls
                ]
            out.append(item)
    return out


async def test_model_error_is_recorded_and_readable(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add(*[{"error": 500, "message": "upstream exploded"}] * 3)  # 1 + maxRetries (2)
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/chat", {"text": "hi"})
    assert info.value.code == -32803
    assert "HTTP 500" in info.value.message and "upstream exploded" in info.value.message
    assert "after 3 attempts" in info.value.message and len(fake.requests) == 3
    status = await editor.request("agentAssist/status")
    assert status["state"] == "idle"
    events = stored(workspace, home).read_events(status["sessionId"]).events
    assert events[-1].type == "turn/end" and events[-1].data.reason == "error"
    # the server keeps going
    fake.add("recovered")
    assert (await editor.request("agentAssist/chat", {"text": "again"}))["text"] == "recovered"


async def test_no_model_configured_says_how_to_configure(make_editor) -> None:
    editor: Editor = make_editor(options={"instanceId": "w", "model": None})
    await editor.start()
    await editor.ready()
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/chat", {"text": "hi"})
    assert info.value.code == -32803
    # Each client's own words: VS Code's settings and command, Neovim's setup, the rest.
    for how in (
        "agentAssist.model.name",
        "Agent Assist: Set API Key",
        "setup({ model = { name = ..., base_url = ... } })",
        "initializationOptions.model",
        "AGENT_ASSIST_LLM_MODEL_NAME",
    ):
        assert how in info.value.message


async def test_cancel_aborts_the_turn_and_keeps_the_session(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add(
        {"text": "this reply is very slow and will be cancelled " * 5, "chunk": 4, "delay": 0.05}
    )
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    msg_id, pending = editor.start_request("agentAssist/chat", {"text": "tell me a long story"})
    await editor.wait_for("agentAssist/chatDelta", count=3)
    editor.cancel(msg_id)
    with pytest.raises(JsonRpcException) as info:
        await pending
    assert info.value.code == -32800
    for _ in range(400):  # the server records `aborted` once the stream has stopped
        status = await editor.request("agentAssist/status")
        if status["state"] == "idle":
            break
        await asyncio.sleep(0.05)
    events = stored(workspace, home).read_events(status["sessionId"]).events
    ends = [e for e in events if e.type == "turn/end"]
    assert ends and ends[-1].data.reason == "aborted"
    fake.add("after cancel")
    reply = await editor.request("agentAssist/chat", {"text": "next"})
    assert reply["text"] == "after cancel" and reply["turn"] == 2


async def test_malformed_params_get_invalid_params(make_editor) -> None:
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    for params in ({}, {"text": 5}, {"text": ""}):
        with pytest.raises(JsonRpcException) as info:
            await editor.request("agentAssist/chat", params)
        assert info.value.code == -32602 and "text" in info.value.message
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/open", {"sessionId": "../../etc"})
    assert info.value.code == -32602 and "sessionId" in info.value.message
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/nope", {})
    assert info.value.code == -32601
    assert (await editor.request("agentAssist/status"))["state"] == "idle"  # still alive


async def test_execute_command_reaches_every_request(make_editor, fake: FakeOpenAI) -> None:
    fake.add("via command")
    editor: Editor = make_editor()
    result = await editor.start()
    commands = set(result.capabilities.execute_command_provider.commands)
    assert {
        "agentAssist.chat",
        "agentAssist.save",
        "agentAssist.reset",
        "agentAssist.resume",
        "agentAssist.status",
        "agentAssist.history",
    } <= commands
    await editor.ready()
    reply = await editor.command("agentAssist.chat", {"text": "hello"})
    assert reply["text"] == "via command"
    saved = await editor.command("agentAssist.save")
    assert saved["checkpoint"] == 1


@pytest.mark.local_store
async def test_api_key_never_reaches_disk(make_editor, fake: FakeOpenAI, home: Path) -> None:
    fake.add("ok")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "my key is sk-test-KEY-0123456789abcdef"})
    await editor.request("agentAssist/save")
    await editor.stop()
    assert fake.last_request().headers["authorization"] == "Bearer sk-test-KEY-0123456789abcdef"
    for path in home.rglob("*"):
        if path.is_file():
            assert b"sk-test-KEY-0123456789abcdef" not in path.read_bytes(), path


async def test_chats_wait_their_turn_in_order(make_editor, fake: FakeOpenAI) -> None:
    fake.add({"text": "first reply, slowly " * 4, "chunk": 4, "delay": 0.03}, "second reply")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    _, first = editor.start_request("agentAssist/chat", {"text": "one"})
    await editor.wait_for("agentAssist/chatDelta")
    _, second = editor.start_request("agentAssist/chat", {"text": "two"})
    for _ in range(100):
        status = await editor.request("agentAssist/status")
        if status["waiting"] == 1:
            break
        await asyncio.sleep(0.02)
    assert status["state"] == "running" and status["waiting"] == 1
    one, two = await first, await second
    assert (one["turn"], two["turn"]) == (1, 2)
    assert two["text"] == "second reply"
    assert (await editor.request("agentAssist/status"))["state"] == "idle"


async def test_empty_and_cut_responses_are_recorded(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add({"empty": True}, "after empty")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "say nothing"})
    assert reply["text"] == "after empty"
    assert not [m for m in shown(editor) if "stopped" in m]
    fake.add({"length": "cut off mid"})
    cut = await editor.request("agentAssist/chat", {"text": "long answer please"})
    assert cut["text"] == "cut off mid"  # kept as it came, and the user is told
    (told,) = [m for m in shown(editor) if "stopped" in m]
    assert "limit on an answer's length" in told and "ask it to go on" in told
    await editor.stop()
    events = stored(workspace, home).read_events(reply["sessionId"]).events
    messages = [e.data.message for e in events if e.type == "assistant/message"]
    assert any(not [p for p in m["parts"] if p.get("content")] for m in messages)  # the empty one
    assert any(m.get("finish_reason") == "length" for m in messages)


async def test_files_the_agent_reads_join_the_manifest(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("print('hi')\n")
    fake.add(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "src/main.py"}}]}, "read it"
    )
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "read main"})
    saved = await editor.request("agentAssist/save")
    snapshot, _ = stored(workspace, home).read_snapshot(saved["sessionId"])
    assert snapshot is not None
    manifest = snapshot.file_manifest
    assert set(manifest) == {"agent_spec.md", "templates/reply.txt", "src/main.py"}


async def test_write_file_goes_through_the_editor(
    make_editor, fake: FakeOpenAI, workspace: Path
) -> None:
    fake.add(
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "notes/plan.md", "content": "# Plan\n"},
                }
            ]
        },
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "../escape.txt", "content": "x"}}
            ]
        },
        "done",
    )
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "write a plan"})
    assert (workspace / "notes" / "plan.md").read_text() == "# Plan\n"
    assert not (workspace.parent / "escape.txt").exists()
    if editor.client_name == "vscode":  # can create files through workspace/applyEdit
        assert len(editor.edits) == 1 and "notes/plan.md" in editor.edits[0].label
    else:  # no documentChanges declared: the server writes the new file itself
        assert editor.edits == []
    statuses = [n["status"] for n in editor.notifications["agentAssist/toolCall"]]
    assert statuses == ["started", "done", "started", "failed"]


async def test_a_file_content_with_raw_newlines_in_the_arguments_is_written(
    make_editor, fake: FakeOpenAI, workspace: Path
) -> None:
    """Small local models write a file's lines into the JSON string as they are, not as
    `\\n`; a server that passes their text through (llama-cpp-python) sends it so."""
    raw = '{"path": "notes/plan.md", "content": "# Plan\n\t- step one\n"}'
    fake.add({"tool_calls": [{"name": "write_file", "arguments": raw}]}, "written")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    reply = await editor.request("agentAssist/chat", {"text": "write the plan"})
    assert reply["endReason"] == "completed" and reply["text"] == "written"
    assert (workspace / "notes" / "plan.md").read_text() == "# Plan\n\t- step one\n"
    statuses = [n["status"] for n in editor.notifications["agentAssist/toolCall"]]
    assert statuses == ["started", "done"]
    # The model gets its call back as valid JSON, the same values.
    calls = [m for m in fake.messages(1) if m.get("tool_calls")]
    sent = calls[0]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(sent) == {"path": "notes/plan.md", "content": "# Plan\n\t- step one\n"}


async def test_phase_is_refused_unless_design_code_or_deploy(make_editor, fake: FakeOpenAI) -> None:
    fake.add(
        {"tool_calls": [{"name": "set_phase", "arguments": {"phase": "testing"}}]},
        {"tool_calls": [{"name": "set_phase", "arguments": {"phase": "Code"}}]},
        "phase noted",
    )
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "we are coding now"})
    statuses = [n["status"] for n in editor.notifications["agentAssist/toolCall"]]
    assert statuses == ["started", "failed", "started", "done"]
    refused = json.dumps(fake.messages(1))
    assert "phase must be one of design, code, deploy" in refused  # the model is told why
    status = await editor.request("agentAssist/status")
    assert status["phase"] == "code"
    sessions = (await editor.request("agentAssist/sessions"))["sessions"]
    assert sessions[0]["phase"] == "code"
