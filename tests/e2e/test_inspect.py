"""Steps over LSP: `history` with `steps`, and `inspect` of a session another server writes."""

from __future__ import annotations

from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor

VSCODE_ONLY = pytest.mark.parametrize("client_name", ["vscode"])
READ = {"name": "read_file", "arguments": {"path": "agent_spec.md"}, "id": "call_read"}


async def refused(editor: Editor, params: dict[str, Any]) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/inspect", params)
    return info.value


@VSCODE_ONLY
async def test_inspect_reads_a_session_another_server_holds_while_it_writes(
    make_editor: Any, fake: FakeOpenAI
) -> None:
    a: Editor = make_editor(options={"instanceId": "window-a"})
    await a.start()
    a_id = (await a.ready())["sessionId"]
    b: Editor = make_editor(options={"instanceId": "window-b"})
    await b.start()
    b_id = (await b.ready())["sessionId"]
    assert a_id != b_id

    # A's turn: a tool call, then an answer that hangs while B looks.
    fake.add(
        {"text": "Let me look.", "chunk": 100, "tool_calls": [READ]}, {"hang": "The spec says "}
    )
    _, reply = a.start_request("agentAssist/chat", {"text": "what does the spec say?"})
    await a.wait_for("agentAssist/chatDelta", 2)  # one delta a step: the second is streaming
    seen = await b.request("agentAssist/inspect", {"sessionId": a_id})
    assert seen["sessionId"] == a_id and seen["held"] is True
    (turn,) = seen["turns"]
    assert (turn["turn"], turn["input"], turn["endedAt"], turn["endReason"]) == (
        1,
        "what does the spec say?",
        None,
        None,
    )
    first, second = turn["steps"]
    assert (first["step"], first["endReason"], first["text"]) == (1, "tool-calls", "Let me look.")
    assert first["model"] == "test-model" and first["usage"]["inputTokens"] > 0
    assert len(first["requestSha256"]) == 64  # the digest of the request that went out
    (tool,) = first["tools"]
    assert (tool["toolCallId"], tool["name"], tool["args"]) == (
        "call_read",
        "read_file",
        {"path": "agent_spec.md"},
    )
    assert tool["result"] and tool["resultBytes"] == len(tool["result"].encode())
    assert "folded" not in tool and "isError" not in tool
    assert (second["step"], second["endedAt"], second["endReason"]) == (2, None, None)

    fake.release()
    answered = await reply
    assert answered["sessionId"] == a_id and answered["endReason"] == "completed"
    # B's own session is still B's: nothing was opened, no lock was taken
    assert (await b.request("agentAssist/status"))["sessionId"] == b_id
    fake.add("again")
    assert (await a.request("agentAssist/chat", {"text": "and now?"}))["turn"] == 2

    # the one step asked for, folded; the same projection as A's own history with steps
    one = await b.request(
        "agentAssist/inspect", {"sessionId": a_id, "turn": 1, "step": 1, "fold": 10}
    )
    (only,) = one["turns"]
    (step,) = only["steps"]
    (tool,) = step["tools"]
    assert tool["folded"] is True and len(tool["result"].encode()) <= 10
    assert only["endReason"] == "completed" and one["held"] is True
    history = await a.request("agentAssist/history", {"steps": True})
    assert [t["input"] for t in history["turns"]] == ["what does the spec say?", "and now?"]
    assert history["turns"][0]["steps"][1]["text"] == "The spec says "
    whole = await b.request("agentAssist/inspect", {"sessionId": a_id})
    assert whole["turns"] == history["turns"]
    assert "turns" not in await a.request("agentAssist/history")  # only when asked
    mine = await a.request("agentAssist/inspect", {"sessionId": a_id})
    assert mine["held"] is False  # its own session: held by no other window

    # what cannot be answered says why
    for params, field in (
        ({"sessionId": "../etc/passwd"}, "sessionId"),
        ({"sessionId": a_id, "fold": 10**9}, "fold"),
        ({"sessionId": a_id, "turn": 0}, "turn"),
        ({"sessionId": a_id, "step": 1}, "step"),
    ):
        error = await refused(b, params)
        assert error.code == -32602 and f"invalid field '{field}'" in error.message, params
    error = await refused(b, {"sessionId": "0123456789ab"})
    assert error.code == -32803 and "no session 0123456789ab" in error.message
    error = await refused(b, {"sessionId": a_id, "turn": 7})
    assert error.code == -32803 and "has no turn 7 (turns 1–2)" in error.message
    error = await refused(b, {"sessionId": a_id, "turn": 1, "step": 5})
    assert error.code == -32803 and "has no step 5 (steps 1, 2)" in error.message
