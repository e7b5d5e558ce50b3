"""The faults real model servers produce, through the real server and the real OpenAI client.

Each test scripts the fault into the loopback model and checks what the editor receives
(deltas, `agentAssist/chatRetry`, the result or the error), what the log holds, what the
next model request contains, and that retries wait as asked and never exceed the cap.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI
from session.derive.history import build_history

from .harness import Editor, shown, stored
from .test_chat import assert_requests_rebuildable

pytestmark = pytest.mark.parametrize("client_name", ["vscode"])

RETRY = "agentAssist/chatRetry"


def events_of(workspace: Path, home: Path, session_id: str) -> list[Any]:
    return stored(workspace, home).read_events(session_id).events


def history_text(workspace: Path, home: Path, session_id: str) -> str:
    """The derived model history, as JSON text."""
    return json.dumps(build_history(events_of(workspace, home, session_id)).messages())


async def started(make_editor: Any, **model: Any) -> Editor:
    options: dict[str, Any] = {"instanceId": "faults"}
    if model:
        options["model"] = {"name": "test-model", "apiKey": "sk-x", **model}
    editor: Editor = make_editor(options=options)
    await editor.start()
    await editor.ready()
    return editor


@pytest.mark.parametrize(
    "fault",
    [
        {"cut": "Half of an answer that "},
        {"drop": "Half of an answer that "},
        {"corrupt": "Half of an answer that "},
    ],
    ids=["cut", "drop", "corrupt"],
)
async def test_a_broken_stream_is_retried_and_the_partial_never_enters_history(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path, fault: dict[str, str]
) -> None:
    fake.add(fault, {"text": "The whole answer, second time round.", "chunk": 5})
    editor = await started(make_editor)
    reply = await editor.request("agentAssist/chat", {"text": "explain the design"})
    assert reply["endReason"] == "completed" and reply["attempts"] == 2
    assert reply["text"] == "The whole answer, second time round."
    retries = editor.notifications[RETRY]
    assert len(retries) == 1 and retries[0]["attempt"] == 2 and retries[0]["turn"] == 1
    kind = next(iter(fault))
    if kind == "cut":
        assert "incomplete" in retries[0]["reason"]
    # The client saw the partial text, then the retry, then the whole answer.
    assert editor.deltas() == "Half of an answer that " + reply["text"]
    assert len(fake.requests) == 2
    retried = json.dumps(fake.messages(1))
    assert "explain the design" in retried and "Half of an answer" not in retried
    events = events_of(workspace, home, reply["sessionId"])
    marks = [e for e in events if e.type == "step/retry"]
    assert len(marks) == 1 and marks[0].data.streamed
    assert marks[0].data.kind == {"cut": "cut", "drop": "connection", "corrupt": "corrupt"}[kind]
    chunks = "".join(e.data.delta for e in events if e.type == "assistant/chunk")
    assert chunks.startswith("Half of an answer that ")  # the abandoned attempt is kept...
    assert "Half of an answer" not in history_text(workspace, home, reply["sessionId"])  # ...out
    fake.add("next")
    await editor.request("agentAssist/chat", {"text": "and then?"})
    assert "Half of an answer" not in json.dumps(fake.messages(-1))
    await editor.stop()
    assert_requests_rebuildable(fake, workspace, home, reply["sessionId"])


async def test_a_stream_cut_every_time_ends_in_error_with_the_partial_kept(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add({"cut": "first try "}, {"cut": "second try "}, {"cut": "third try, also cut"})
    editor = await started(make_editor)
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/chat", {"text": "a long answer please"})
    assert info.value.code == -32803
    assert "incomplete" in info.value.message and "after 3 attempts" in info.value.message
    assert len(fake.requests) == 3  # 1 + model.maxRetries (2), never more
    assert [n["attempt"] for n in editor.notifications[RETRY]] == [2, 3]
    history = await editor.request("agentAssist/history")
    last = history["items"][-1]
    assert last["role"] == "assistant" and last["text"] == "third try, also cut"
    assert last["partial"] is True and last["endReason"] == "error"
    events = events_of(workspace, home, history["sessionId"])
    assert events[-1].type == "turn/end" and events[-1].data.reason == "error"
    assert "incomplete" in (events[-1].data.error or "")


async def test_a_stall_is_abandoned_after_the_stream_timeout_and_retried(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add({"stall": "Starting to answer ", "seconds": 30}, "Recovered answer.")
    editor = await started(make_editor, baseUrl=fake.base_url, streamTimeout=1)
    reply = await editor.request("agentAssist/chat", {"text": "go"})
    assert reply["text"] == "Recovered answer." and reply["attempts"] == 2
    retries = editor.notifications[RETRY]
    assert len(retries) == 1 and "stopped sending" in retries[0]["reason"]
    assert "nothing for 1 s (model.streamTimeout)" in retries[0]["reason"]
    first, second = fake.requests
    assert second.at - first.at >= 1.0  # waited for the timeout, no longer than needed to
    marks = [e for e in events_of(workspace, home, reply["sessionId"]) if e.type == "step/retry"]
    assert [m.data.kind for m in marks] == ["stall"]


async def test_a_slow_first_token_within_the_timeout_is_not_a_stall(
    make_editor, fake: FakeOpenAI
) -> None:
    """A local server reads the prompt before it sends anything: longer than streamTimeout."""
    fake.add({"text": "Slow but fine.", "first_delay": 2.5})
    editor = await started(make_editor, baseUrl=fake.base_url, streamTimeout=1)
    reply = await editor.request("agentAssist/chat", {"text": "go"})
    assert reply["text"] == "Slow but fine." and reply["attempts"] == 1
    assert len(fake.requests) == 1 and editor.notifications[RETRY] == []


async def test_no_first_token_within_the_timeout_is_retried_without_a_retry_notice(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add({"text": "too late", "first_delay": 20}, "On time.")
    editor = await started(make_editor, baseUrl=fake.base_url, streamTimeout=1, firstTokenTimeout=1)
    reply = await editor.request("agentAssist/chat", {"text": "go"})
    assert reply["text"] == "On time." and reply["attempts"] == 2
    assert editor.notifications[RETRY] == []  # nothing had been shown, nothing to drop
    assert editor.deltas() == "On time."
    (mark,) = [e for e in events_of(workspace, home, reply["sessionId"]) if e.type == "step/retry"]
    assert mark.data.kind == "stall" and "model.firstTokenTimeout" in mark.data.reason


async def test_429_waits_as_long_as_retry_after_asks(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add({"error": 429, "message": "slow down", "retry_after": 1}, "After the wait.")
    editor = await started(make_editor)
    reply = await editor.request("agentAssist/chat", {"text": "go"})
    assert reply["text"] == "After the wait."
    first, second = fake.requests
    assert second.at - first.at >= 1.0
    marks = [e for e in events_of(workspace, home, reply["sessionId"]) if e.type == "step/retry"]
    assert marks[0].data.kind == "rate-limit" and marks[0].data.delay == 1.0


async def test_a_retry_after_far_in_the_future_is_reported_not_waited_on(
    make_editor, fake: FakeOpenAI
) -> None:
    fake.add({"error": 429, "message": "quota window", "retry_after": 3600})
    editor = await started(make_editor)
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/chat", {"text": "go"})
    assert "3600 s" in info.value.message and len(fake.requests) == 1


async def test_503s_are_retried_at_most_max_retries_times(make_editor, fake: FakeOpenAI) -> None:
    fake.add(*[{"error": 503, "message": "overloaded"}] * 5)
    editor = await started(make_editor, baseUrl=fake.base_url, maxRetries=1)
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/chat", {"text": "go"})
    assert "HTTP 503" in info.value.message and "after 2 attempts" in info.value.message
    assert len(fake.requests) == 2 and fake.remaining == 3


async def test_the_servers_x_should_retry_is_followed(make_editor, fake: FakeOpenAI) -> None:
    """OpenAI's `x-should-retry`: `false` on a 500 is not retried, `true` on a 409 is."""
    fake.add({"error": 500, "message": "do not repeat", "retry": False})
    editor = await started(make_editor)
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/chat", {"text": "go"})
    assert "do not repeat" in info.value.message and "the server said so" in info.value.message
    assert len(fake.requests) == 1
    fake.add({"error": 409, "message": "busy, try again", "retry": True}, "Second time lucky.")
    reply = await editor.request("agentAssist/chat", {"text": "again"})
    assert reply["text"] == "Second time lucky." and fake.remaining == 0


async def test_a_model_server_that_is_not_running_is_named(make_editor) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    editor = await started(make_editor, baseUrl=url, maxRetries=1)
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/chat", {"text": "anyone there?"})
    message = info.value.message
    assert message.startswith("Could not connect to the model server (Connection refused)")
    assert f"after 2 attempts: is the server at {url} running" in message
    assert "model.baseUrl" in message
    await editor.stop()


async def stopped_turn(editor: Any, text: str) -> str:
    """Send a turn the model's behaviour stops; return the error, free of pydantic-ai's text."""
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/chat", {"text": text})
    message = info.value.message
    assert "so the turn stopped" in message
    assert "pydantic.dev" not in message and "attempts" not in message  # never retried
    return message


async def test_a_model_that_keeps_calling_a_tool_wrongly_is_told_apart(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    """A small model that gets a tool's arguments wrong has three more tries, then a stop."""
    bad = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md&#34;"}}]}
    good = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]}
    (workspace / "notes.md").write_text("buy milk\n")
    fake.add(bad, bad, good, bad, bad, bad, "Milk.", *[bad] * 4, "Back on track.")
    editor = await started(make_editor)
    reply = await editor.request("agentAssist/chat", {"text": "what do the notes say?"})
    assert reply["text"] == "Milk."  # two failures, a success (which resets the count), three
    message = await stopped_turn(editor, "and again?")
    assert message.startswith("The model called read_file 4 times with arguments that did not")
    assert "notes.md&#34; does not exist" in message
    assert fake.remaining == 1 and len(fake.requests) == 11  # the fault is not retried
    events = events_of(workspace, home, reply["sessionId"])
    assert [e.data.reason for e in events if e.type == "turn/end"] == ["completed", "error"]
    failed = [e for e in events if e.type == "tool/result" and e.data.is_error]
    assert len(failed) == 8  # the fourth failure of turn 2 is the error itself
    again = await editor.request("agentAssist/chat", {"text": "once more"})
    assert again["text"] == "Back on track."
    sent = fake.requests[-1].body["messages"]
    called = {c["id"] for m in sent for c in m.get("tool_calls") or ()}
    answered = {m["tool_call_id"] for m in sent if m.get("role") == "tool"}
    assert called == answered  # no call of the failed turn is left without its result


async def test_a_model_that_never_stops_calling_tools_is_stopped_and_says_so(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    """A small model lists the same directory until pydantic-ai's request limit (50)."""
    listing = {"tool_calls": [{"name": "list_files", "arguments": {"directory": "."}}]}
    fake.add(*[listing] * 50, "never asked", "Listed.")
    editor = await started(make_editor)
    message = await stopped_turn(editor, "what is here?")
    assert message.startswith("The model made 50 requests in this turn without answering")
    assert "(it called list_files 50 times)" in message
    assert len(fake.requests) == 50 and fake.remaining == 2  # never retried
    results = [m["content"] for m in fake.messages(-1) if m.get("role") == "tool"]
    assert "call 3 of list_files" not in results[1] and "call 3 of list_files" in results[2]
    status = await editor.request("agentAssist/status")
    events = events_of(workspace, home, status["sessionId"])
    assert [e.data.reason for e in events if e.type == "turn/end"] == ["error"]
    assert_requests_rebuildable(fake, workspace, home, status["sessionId"])  # no unsent one
    await editor.stop()


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_never_retried(make_editor, fake: FakeOpenAI, status: int) -> None:
    fake.add({"error": status, "message": f"refused with {status}"}, "never sent")
    editor = await started(make_editor)
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/chat", {"text": "go"})
    assert f"HTTP {status}" in info.value.message and f"refused with {status}" in info.value.message
    assert len(fake.requests) == 1 and fake.remaining == 1


async def test_usage_is_estimated_when_the_server_sends_none(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add({"text": "An answer without any usage figures.", "usage": False}, "With usage.")
    editor = await started(make_editor)
    reply = await editor.request("agentAssist/chat", {"text": "how big is this?"})
    usage = reply["usage"]
    assert usage["estimated"] is True and usage["inputTokens"] > 0 and usage["outputTokens"] > 0
    ends = [e for e in events_of(workspace, home, reply["sessionId"]) if e.type == "step/end"]
    assert ends[-1].data.usage["estimated"] is True
    counted = await editor.request("agentAssist/chat", {"text": "and this?"})
    assert "estimated" not in counted["usage"]  # reported usage is taken as it is


SUMMARY = {
    "tool_calls": [
        {
            "name": "final_result",
            "arguments": {"summary": "The user asked two long questions.", "decisions": []},
        }
    ]
}


@pytest.mark.parametrize("style", ["openai", "vllm", "llama-server", "llama-cpp"])
async def test_a_full_context_window_heals_itself(
    make_editor, workspace: Path, home: Path, style: str
) -> None:
    with FakeOpenAI(context_window=2048, overflow=style) as model:
        model.add("answer 1", "answer 2", SUMMARY, "answer 3")
        editor = await started(make_editor, baseUrl=model.base_url)
        for n in (1, 2):
            await editor.request("agentAssist/chat", {"text": f"question {n} " + "x" * 3000})
        reply = await editor.request("agentAssist/chat", {"text": "question 3 " + "y" * 3000})
        assert reply["text"] == "answer 3" and reply["endReason"] == "completed"
        status = await editor.request("agentAssist/status")
        assert status["contextWindow"] == 2048  # what the server reported (or the fallback)
        assert status["contextWindowSource"] == "overflow"
        sent = json.dumps(model.messages(-1))
        assert "The user asked two long questions." in sent and "question 3" in sent
        assert "question 1" not in sent
        events = events_of(workspace, home, reply["sessionId"])
        kinds = [e.data.kind for e in events if e.type == "step/retry"]
        assert kinds == (["empty", "overflow"] if style == "llama-cpp" else ["overflow"])
        turn_start = max(e.seq for e in events if e.type == "turn/start")
        compacts = [e for e in events if e.type == "session/compact"]
        assert len(compacts) == 1 and compacts[0].seq > turn_start
        assert events[-1].type == "turn/end" and events[-1].data.reason == "completed"
        model.add("answer 4")
        fourth = await editor.request("agentAssist/chat", {"text": "question 4"})
        assert fourth["text"] == "answer 4"
        await editor.stop()


async def test_a_file_larger_than_a_small_window_is_read_a_part_at_a_time(
    make_editor, workspace: Path, home: Path
) -> None:
    """A 2,048-token server (Ollama's default, a small llama.cpp): a whole file overflowed it.

    With `contextWindow` set (or learned from the server), a read returns a quarter of it.
    """
    notes = "".join(f"Note {n}: the reply templates live under templates/.\n" for n in range(400))
    (workspace / "notes.md").write_text(notes)  # 20 KB, ~5,000 tokens
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]}
    more = {
        "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md", "start_line": 40}}]
    }
    with FakeOpenAI(context_window=2048, overflow="llama-cpp") as model:
        model.add(read, more, "The notes say where the templates live.")
        model_options = {"name": "test-model", "apiKey": "sk-x", "baseUrl": model.base_url}
        options = {"instanceId": "faults", "contextWindow": 2048, "model": model_options}
        editor = make_editor(options=options)
        await editor.start()
        await editor.ready()
        reply = await editor.request("agentAssist/chat", {"text": "what do the notes say?"})
        assert reply["text"] == "The notes say where the templates live."
        results = [m["content"] for m in model.messages(-1) if m.get("role") == "tool"]
        assert len(results) == 2 and all(len(r) <= 2048 + 200 for r in results)
        assert results[0].startswith("Note 0:") and "call read_file with start_line=" in results[0]
        assert results[1].startswith("Note 39:")  # line 40 on
        events = events_of(workspace, home, reply["sessionId"])
        assert [e for e in events if e.type == "step/retry"] == []  # it never overflowed
        await editor.stop()


@pytest.mark.parametrize("style", ["openai", "llama-cpp"])
async def test_a_read_that_overflows_a_window_learned_from_the_server_is_cut_to_fit(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path, style: str
) -> None:
    """No contextWindow set: a 20 KB read is whole, overflows, and is sent again cut."""
    notes = "".join(f"Note {n}: the reply templates live under templates/.\n" for n in range(400))
    (workspace / "notes.md").write_text(notes)
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]}
    with FakeOpenAI(context_window=2048, overflow=style) as model:
        model.add(read, "The notes say where the templates live.")
        editor = await started(make_editor, baseUrl=model.base_url)
        reply = await editor.request("agentAssist/chat", {"text": "what do the notes say?"})
        assert reply["text"] == "The notes say where the templates live."
        (result,) = [m["content"] for m in model.messages(-1) if m.get("role") == "tool"]
        assert result.startswith("Note 0:") and len(result.encode()) < 2048 + 100
        assert "[cut to 2048 bytes to fit the model's context window" in result
        events = events_of(workspace, home, reply["sessionId"])
        (logged,) = [e for e in events if e.type == "tool/result"]
        assert logged.data.content == notes  # the log keeps what the tool returned
        assert "overflow" in [e.data.kind for e in events if e.type == "step/retry"]
        cut = [e.data.settings for e in events if e.type == "request/header"]
        assert cut[-1] == {"tool_results_cut_to": 2048}  # recorded: the request is rebuilt
        # llama-cpp: the stream came back empty and the request asked in one piece failed
        assert_requests_rebuildable(model, workspace, home, reply["sessionId"])
        await editor.stop()


async def test_a_turn_whose_own_reads_overflow_says_to_read_less(
    make_editor, workspace: Path, home: Path
) -> None:
    """Reads of 2 KB each (a quarter of a 2,048-token window) until the prompt is over it."""
    for n in range(6):
        (workspace / f"part{n}.md").write_text(f"Part {n}: the templates live here.\n" * 60)
    reads = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": f"part{n}.md"}}]}
        for n in range(6)
    ]
    with FakeOpenAI(context_window=2048, overflow="openai") as model:
        model.add(*reads, *reads, "never sent")
        editor = await started(make_editor, baseUrl=model.base_url, contextWindow=2048)
        with pytest.raises(JsonRpcException) as info:
            await editor.request("agentAssist/chat", {"text": "read every part"})
        message = info.value.message
        assert "after this turn's " in message and " reads of files and directories" in message
        assert "ask about fewer files at a time" in message
        assert "single message" not in message  # the user's was short
        await editor.stop()


@pytest.mark.parametrize("style", ["openai", "llama-cpp"])
async def test_a_prompt_that_cannot_fit_says_what_to_do(
    make_editor, workspace: Path, home: Path, style: str
) -> None:
    with FakeOpenAI(context_window=2048, overflow=style) as model:
        editor = await started(make_editor, baseUrl=model.base_url)
        with pytest.raises(JsonRpcException) as info:
            await editor.request("agentAssist/chat", {"text": "z" * 12_000})
        message = info.value.message
        assert "contextWindow" in message and "/compact" in message and "2048" in message
        assert model.remaining == 0
        status = await editor.request("agentAssist/status")
        events = events_of(workspace, home, status["sessionId"])
        assert events[-1].type == "turn/end" and events[-1].data.reason == "error"
        await editor.stop()


def cut_prompt_warnings(editor: Editor) -> list[str]:
    return [m for m in shown(editor) if "cut the rest without an error" in m]


async def test_a_prompt_the_server_cut_silently_is_compacted_and_asked_again(
    make_editor, workspace: Path, home: Path
) -> None:
    # Ollama over its context length: a normal answer, having read half the window.
    with FakeOpenAI(context_window=2048, overflow="ollama") as model:
        model.add("answer 1", "answer 2", "answer 3 (from a cut prompt)", SUMMARY, "answer 3")
        editor = await started(make_editor, baseUrl=model.base_url)
        for n in (1, 2):
            await editor.request("agentAssist/chat", {"text": f"question {n} " + "x" * 3000})
        assert not cut_prompt_warnings(editor)
        reply = await editor.request("agentAssist/chat", {"text": "question 3 " + "y" * 3000})
        assert reply["text"] == "answer 3" and reply["endReason"] == "completed"
        (warning,) = cut_prompt_warnings(editor)
        assert "read only 1,026 tokens" in warning and "OLLAMA_CONTEXT_LENGTH" in warning
        status = await editor.request("agentAssist/status")
        assert status["contextWindow"] == 1026  # what the server read
        assert status["contextWindowSource"] == "overflow"
        sent = json.dumps(model.messages(-1))
        assert "The user asked two long questions." in sent and "question 3" in sent
        assert "question 1" not in sent and "from a cut prompt" not in sent
        assert editor.notifications[RETRY]  # the answer shown was dropped
        events = events_of(workspace, home, reply["sessionId"])
        assert [e.data.kind for e in events if e.type == "step/retry"] == ["truncated"]
        assert "from a cut prompt" not in history_text(workspace, home, reply["sessionId"])
        assert len([e for e in events if e.type == "session/compact"]) == 1
        model.add("answer 4")
        fourth = await editor.request("agentAssist/chat", {"text": "question 4"})
        assert fourth["text"] == "answer 4" and len(cut_prompt_warnings(editor)) == 1
        model.add("answer 5 (from a cut prompt)", SUMMARY, "answer 5")
        fifth = await editor.request("agentAssist/chat", {"text": "question 5 " + "z" * 6000})
        assert fifth["text"] == "answer 5"  # cut and healed again, without a second warning
        assert len(cut_prompt_warnings(editor)) == 1
        await editor.stop()


async def test_a_prompt_cut_to_the_window_is_noticed_when_the_count_stops_growing(
    make_editor, workspace: Path, home: Path
) -> None:
    # Older Ollama cut every prompt to exactly the window: the count stops growing.
    with FakeOpenAI(context_window=2048, overflow="ollama-legacy") as model:
        model.add("answer 1", "answer 2", "answer 3", "answer 4 (cut)", SUMMARY, "answer 4")
        editor = await started(make_editor, baseUrl=model.base_url)
        for n in (1, 2, 3):
            await editor.request("agentAssist/chat", {"text": f"question {n} " + "x" * 3000})
        reply = await editor.request("agentAssist/chat", {"text": "question 4 " + "y" * 3000})
        assert reply["text"] == "answer 4"
        assert cut_prompt_warnings(editor) and "read only 2,048 tokens" in shown(editor)[-1]
        events = events_of(workspace, home, reply["sessionId"])
        assert [e.data.kind for e in events if e.type == "step/retry"] == ["truncated"]
        await editor.stop()


async def test_a_single_message_the_server_cuts_says_what_to_do(
    make_editor, workspace: Path, home: Path
) -> None:
    with FakeOpenAI(context_window=2048, overflow="ollama") as model:
        model.add("answer from a cut prompt", "again from a cut prompt")
        editor = await started(make_editor, baseUrl=model.base_url)
        with pytest.raises(JsonRpcException) as info:
            await editor.request("agentAssist/chat", {"text": "w " * 12_000})
        message = info.value.message
        assert "read only 1,026 tokens" in message and "OLLAMA_CONTEXT_LENGTH" in message
        assert "contextWindow" in message and model.remaining == 0
        status = await editor.request("agentAssist/status")
        events = events_of(workspace, home, status["sessionId"])
        assert events[-1].type == "turn/end" and events[-1].data.reason == "error"
        # The abandoned attempt is gone; the last stays, as any failed turn's streamed text.
        kept = history_text(workspace, home, status["sessionId"])
        assert "answer from a cut prompt" not in kept and "again from a cut prompt" in kept
        await editor.stop()
