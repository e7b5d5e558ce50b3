"""session/prompt and session/cancel: the engine's turn streamed as session/update."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError, text_block

from lsp_server.fake_model import FakeOpenAI
from tests.acp.harness import Running, texts


async def test_a_reply_streams_as_chunks_and_ends_the_turn(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    fake.add({"text": "Hello from the model, in pieces.", "chunk": 5})
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("hi")])
    assert answer.stop_reason == "end_turn"
    chunks = texts(agent.client.of(sid), "agent_message_chunk")
    assert len(chunks) > 1  # streamed, not sent whole
    assert "".join(chunks) == "Hello from the model, in pieces."
    assert fake.messages()[-1]["content"] == "hi"
    told = agent.client.of(sid)
    info = next(u for u in told if u.session_update == "session_info_update")
    assert info.title == "hi"
    window = next(u for u in told if u.session_update == "usage_update")
    assert 0 < window.used < window.size == 128_000
    assert answer.usage is not None and answer.usage.output_tokens > 0


async def test_a_tool_call_is_announced_with_its_kind_location_and_end(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    fake.add(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "agent_spec.md"}, "id": "c1"}]},
        "The spec has three tools.",
    )
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("read the spec")])
    assert answer.stop_reason == "end_turn"
    updates = agent.client.of(sid)
    kinds = [u.session_update for u in updates]
    start = kinds.index("tool_call")
    call = updates[start]
    assert call.kind == "read"
    assert call.title == "read_file agent_spec.md"
    assert [loc.path for loc in call.locations] == [str(workspace / "agent_spec.md")]
    end = next(u for u in updates[start:] if u.session_update == "tool_call_update")
    assert end.tool_call_id == call.tool_call_id
    assert end.status == "completed"
    assert "".join(texts(updates, "agent_message_chunk")).endswith("three tools.")


async def test_an_answer_cut_by_the_output_limit_is_max_tokens(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    fake.add({"length": "a partial answer"})
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("go on")])
    assert answer.stop_reason == "max_tokens"


async def test_an_answer_stopped_by_the_content_filter_is_refusal(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    fake.add({"filtered": "the start of an answer"})
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("say it")])
    assert answer.stop_reason == "refusal"
    assert "".join(texts(agent.client.of(sid), "agent_message_chunk")).startswith("the start")


async def test_cancel_ends_the_prompt_as_cancelled_and_records_it_aborted(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    fake.add({"hang": "thinking about"})
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    prompt = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text_block("x")]))
    await agent.client.until(lambda c: texts(c.of(sid), "agent_message_chunk"))
    await agent.conn.cancel(session_id=sid)
    answer = await asyncio.wait_for(prompt, 30)
    fake.release()
    assert answer.stop_reason == "cancelled"
    fake.add("the next answer")
    again = await agent.conn.prompt(session_id=sid, prompt=[text_block("and now?")])
    assert again.stop_reason == "end_turn"
    await agent.conn.close_session(session_id=sid)
    agent.client.clear()
    await agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
    replayed = "".join(texts(agent.client.of(sid), "agent_message_chunk"))
    assert "was cancelled" in replayed
    assert replayed.endswith("the next answer")


async def test_a_failed_turn_is_an_error_with_its_message_and_the_session_goes_on(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    fake.add({"error": 401, "message": "bad key", "type": "invalid_request_error"})
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    with pytest.raises(RequestError) as failed:
        await agent.conn.prompt(session_id=sid, prompt=[text_block("x")])
    assert failed.value.code == -32603
    assert str(failed.value)  # the user-facing message
    fake.add("fine now")
    answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("again")])
    assert answer.stop_reason == "end_turn"


async def test_embedded_context_and_links_reach_the_model(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    from acp import embedded_text_resource, resource_block, resource_link_block

    fake.add("seen")
    sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
    uri = (workspace / "notes.md").as_uri()
    blocks = [
        text_block("look at "),
        resource_link_block("spec", (workspace / "agent_spec.md").as_uri()),
        resource_block(embedded_text_resource(uri, "unsaved words")),
    ]
    await agent.conn.prompt(session_id=sid, prompt=blocks)
    sent = fake.messages()[-1]["content"]
    assert "agent_spec.md" in sent
    assert "unsaved words" in sent
