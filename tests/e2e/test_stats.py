"""agentAssist/stats over LSP: the figures of the turns this server ran, and bad params."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor


@pytest.mark.parametrize("client_name", ["vscode"])
async def test_stats_sums_the_turns_run_here_and_refuses_bad_params(
    make_editor, fake: FakeOpenAI
) -> None:
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    read = {"name": "read_file", "arguments": {"path": "agent_spec.md"}}
    fake.add({"tool_calls": [read]}, "read it", {"cut": "half an "}, "whole")
    first = await editor.request("agentAssist/chat", {"text": "read the spec"})
    await editor.request("agentAssist/chat", {"text": "and then?"})
    session_id = first["sessionId"]

    stats = await editor.request("agentAssist/stats", {})
    totals = stats["totals"]
    assert (totals["turns"], totals["steps"]) == (2, 3)  # the cut attempt is a retry
    assert totals["toolCalls"] == {"read_file": 1} and totals["toolErrors"] == 0
    assert totals["retries"] == {"cut": 1} and totals["estimated"] is False
    assert totals["inputTokens"] > 0 and totals["outputTokens"] > 0
    assert totals["modelSeconds"] > 0
    assert [g["key"] for g in stats["bySession"]] == [session_id]
    assert [g["key"] for g in stats["byDay"]] == [datetime.now(UTC).date().isoformat()]
    assert [g["key"] for g in stats["byModel"]] == ["test-model"]
    assert stats["byModel"][0]["steps"] == 3 and stats["bySession"][0]["turns"] == 2

    alone = await editor.request("agentAssist/stats", {"sessionId": session_id})
    assert alone["totals"] == totals
    none = await editor.request("agentAssist/stats", {"since": "1h", "until": "30m"})
    assert none["totals"]["turns"] == 0 and none["bySession"] == []

    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/stats", {"sessionId": "0123456789ab"})
    assert info.value.code == -32803 and "no session 0123456789ab" in info.value.message
    for bad, field in (({"since": "garbage"}, "since"), ({"sessionId": "nope"}, "sessionId")):
        with pytest.raises(JsonRpcException) as info:
            await editor.request("agentAssist/stats", bad)
        assert info.value.code == -32602 and field in info.value.message
