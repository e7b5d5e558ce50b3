"""Tests for the scripted fake OpenAI server, driven through the real pydantic-ai client path."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from pydantic_ai import Agent, AgentRunResultEvent, PartDeltaEvent
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ToolCallPartDelta
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from lsp_server.fake_model import FakeOpenAI, load_script, parse_reply

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_banner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYDANTIC_AI_NO_BANNER", "1")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def make_agent(fake: FakeOpenAI, **kwargs: Any) -> Agent[None, str]:
    provider = OpenAIProvider(base_url=fake.base_url, api_key="test-key")
    return Agent(OpenAIChatModel("test-model", provider=provider), **kwargs)


def post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_for(predicate: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


USER = {"messages": [{"role": "user", "content": "hi"}], "model": "m"}
BIG = [{"role": "user", "content": "word " * 4000}]  # over a window of 4,096 tokens


# -- pydantic-ai path ----------------------------------------------------------


async def test_streamed_text_arrives_in_ordered_deltas(fake: FakeOpenAI) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    fake.add({"text": text, "chunk": 6})
    agent = make_agent(fake)
    async with agent.run_stream("go") as result:
        deltas = [d async for d in result.stream_text(delta=True, debounce_by=None)]
    assert deltas == [text[i : i + 6] for i in range(0, len(text), 6)]
    assert "".join(deltas) == text
    assert fake.last_request().body["stream"] is True
    assert fake.last_request().headers["authorization"] == "Bearer test-key"
    assert fake.remaining == 0


async def test_non_streamed_text_and_default_echo(fake: FakeOpenAI) -> None:
    agent = make_agent(fake)
    fake.add("scripted")
    assert (await agent.run("first")).output == "scripted"
    assert (await agent.run("second question")).output == "Echo: second question"
    assert len(fake.requests) == 2


@pytest.mark.parametrize("streaming", [False, True])
async def test_tool_call_round_trip(fake: FakeOpenAI, streaming: bool) -> None:
    agent = make_agent(fake)
    seen: list[str] = []

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        seen.append(path)
        return f"contents of {path}"

    fake.add(
        {
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.txt"}, "id": "call_abc"},
                {"name": "read_file", "arguments": {"path": "some/longer/path.py"}},
            ],
            "chunk": 5,
        },
        {"text": "done reading"},
    )
    if streaming:
        async with agent.run_stream_events("read them") as stream:
            events = [e async for e in stream]
        arg_deltas = [
            e.delta.args_delta
            for e in events
            if isinstance(e, PartDeltaEvent) and isinstance(e.delta, ToolCallPartDelta)
        ]
        assert len(arg_deltas) > 4  # arguments arrived split across several chunks
        final = events[-1]
        assert isinstance(final, AgentRunResultEvent)
        output = final.result.output
    else:
        output = (await agent.run("read them")).output
    assert output == "done reading"
    assert sorted(seen) == ["a.txt", "some/longer/path.py"]
    assert len(fake.requests) == 2
    messages = fake.messages(1)
    assistant = next(m for m in messages if m.get("tool_calls"))
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert ids[0] == "call_abc" and ids[1].startswith("call_")
    tool_results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert tool_results["call_abc"] == "contents of a.txt"
    assert tool_results[ids[1]] == "contents of some/longer/path.py"


async def test_http_500_raises_model_http_error_without_retries(fake: FakeOpenAI) -> None:
    fake.add({"error": 500, "message": "kaboom", "retry": False})  # x-should-retry: false
    agent = make_agent(fake)
    with pytest.raises(ModelHTTPError) as info:
        await agent.run("hi")
    assert info.value.status_code == 500
    assert "kaboom" in str(info.value)
    assert len(fake.requests) == 1


async def test_streamed_http_error(fake: FakeOpenAI) -> None:
    fake.add({"error": 429, "message": "slow down", "type": "rate_limit_error", "retry": False})
    agent = make_agent(fake)
    with pytest.raises(ModelHTTPError) as info:
        async with agent.run_stream("hi") as result:
            await result.get_output()
    assert info.value.status_code == 429


async def test_empty_response(fake: FakeOpenAI) -> None:
    fake.add({"empty": True})
    status, raw = post(fake.base_url + "/chat/completions", {**USER, "stream": False})
    choice = json.loads(raw)["choices"][0]
    assert status == 200
    assert choice["finish_reason"] == "stop" and choice["message"]["content"] is None
    # pydantic-ai handles an empty response without crashing (it asks the model again).
    fake.add({"empty": True}, "after empty")
    agent = make_agent(fake)
    async with agent.run_stream("hi") as result:
        output = await result.get_output()
    assert output == "after empty"
    assert fake.remaining == 0 and len(fake.requests) == 3


async def test_max_tokens_cut(fake: FakeOpenAI) -> None:
    fake.add({"length": "this is cut"})
    status, raw = post(fake.base_url + "/chat/completions", USER)
    choice = json.loads(raw)["choices"][0]
    assert (choice["finish_reason"], choice["message"]["content"]) == ("length", "this is cut")
    fake.add({"length": "partial answer", "chunk": 3})
    async with make_agent(fake).run_stream("hi") as result:
        assert await result.get_output() == "partial answer"


async def test_instructions_are_recorded_as_system_text(fake: FakeOpenAI) -> None:
    agent = make_agent(fake, instructions="You are a careful assistant.")
    await agent.run("hello")
    assert "You are a careful assistant." in fake.system_text(0)
    assert fake.messages(0)[-1] == {"role": "user", "content": "hello"}


async def test_cancel_mid_stream_is_survived(fake: FakeOpenAI) -> None:
    fake.add({"text": "x" * 200, "chunk": 2, "delay": 0.05})
    agent = make_agent(fake)
    first = asyncio.Event()

    async def consume() -> None:
        async with agent.run_stream("go") as result:
            async for _ in result.stream_text(delta=True, debounce_by=None):
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(wait_for, lambda: fake.disconnects == 1)
    assert (await agent.run("still alive")).output == "Echo: still alive"


async def test_hang_until_released(fake: FakeOpenAI) -> None:
    fake.add({"hang": "Thinking"})
    agent = make_agent(fake)

    async def consume() -> str:
        async with agent.run_stream("go") as result:
            return await result.get_output()

    task = asyncio.create_task(consume())
    assert await asyncio.to_thread(fake.wait_hanging, 5)
    await asyncio.sleep(0.1)
    assert not task.done()
    fake.release()
    assert await asyncio.wait_for(task, 5) == "Thinking"


async def test_hang_then_client_disconnects(fake: FakeOpenAI) -> None:
    fake.add({"hang": True})
    agent = make_agent(fake)

    async def consume() -> None:
        async with agent.run_stream("go") as result:
            await result.get_output()

    task = asyncio.create_task(consume())
    assert await asyncio.to_thread(fake.wait_hanging, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(wait_for, lambda: fake.disconnects == 1)
    assert not await asyncio.to_thread(fake.wait_hanging, 0.05)


async def test_one_slot_answers_one_request_at_a_time(fake: FakeOpenAI) -> None:
    """`slots=1`: the second request waits for the first, and a client that leaves frees it."""
    fake.slots = 1
    fake.add({"hang": "first"}, "second", "third")
    agent = make_agent(fake)

    async def consume(prompt: str) -> str:
        async with agent.run_stream(prompt) as result:
            return await result.get_output()

    holder = asyncio.create_task(consume("one"))
    assert await asyncio.to_thread(fake.wait_hanging, 5)
    waiting = asyncio.create_task(consume("two"))
    # received (however long a loaded machine takes to send it), then not answered
    assert await asyncio.to_thread(wait_for, lambda: len(fake.requests) == 2)
    assert not waiting.done()
    holder.cancel()  # the client of the first leaves: its slot is free
    with pytest.raises(asyncio.CancelledError):
        await holder
    assert await asyncio.wait_for(waiting, 5) == "second"
    fake.slots = None  # no limit again
    assert await asyncio.wait_for(consume("three"), 5) == "third"


# -- the openai client and raw HTTP --------------------------------------------


def test_openai_sync_client_streams_tool_calls_and_usage(fake: FakeOpenAI) -> None:
    client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
    fake.add({"tool_calls": [{"name": "grep", "arguments": {"pattern": "TODO", "n": 3}}]})
    stream = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "find"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    pieces = [
        c.choices[0].delta.tool_calls[0].function.arguments
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    ]
    assert len(pieces) > 3 and json.loads("".join(p or "" for p in pieces)) == {
        "pattern": "TODO",
        "n": 3,
    }
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    assert [m.id for m in client.models.list()] == ["fake-model"]


@pytest.mark.parametrize(("style", "kept"), [("ollama", 1026), ("ollama-legacy", 2048)])
def test_a_silent_style_answers_a_prompt_over_the_window_and_counts_what_it_kept(
    style: str, kept: int
) -> None:
    with FakeOpenAI(["short answer", "long answer"], context_window=2048, overflow=style) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
        small = [{"role": "user", "content": "hi " * 100}]
        first = client.chat.completions.create(model="m", messages=small)
        assert first.usage is not None
        assert first.usage.prompt_tokens == len(json.dumps(small)) // 4  # as the window counts
        big = [{"role": "user", "content": "word " * 4000}]
        second = client.chat.completions.create(model="m", messages=big)
        assert second.choices[0].message.content == "long answer"  # no error at all
        assert second.usage is not None and second.usage.prompt_tokens == kept


@pytest.mark.parametrize(
    ("style", "said"),
    [
        ("llama-cpp", "'content'), 'msg': 'Input should be a valid string', 'input': None"),
        ("llama-server", "Expected 'content' to be a string or an array"),
    ],
)
def test_a_null_content_style_refuses_a_tool_call_without_text(style: str, said: str) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    history: list[dict] = [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "text"},
    ]
    with FakeOpenAI(["answer"], null_content=style) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.InternalServerError) as refused:
            client.chat.completions.create(model="m", messages=history)  # type: ignore[arg-type]
        assert said in str(refused.value)
        history[1]["content"] = ""
        answer = client.chat.completions.create(model="m", messages=history)  # type: ignore[arg-type]
        assert answer.choices[0].message.content == "answer"
    with pytest.raises(ValueError, match="null_content"):
        FakeOpenAI(null_content="vllm")


def test_without_tool_streams_a_streamed_tool_call_is_an_empty_stream() -> None:
    call = {"tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}]}
    with FakeOpenAI([call, "text streams"], tool_streams=False) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
        messages = [{"role": "user", "content": "read a"}]
        chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True))  # type: ignore[arg-type]
        assert chunks == []  # what llama-cpp-python sends: nothing at all
        fresh = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
        answer = fresh.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        calls = answer.choices[0].message.tool_calls
        assert calls and calls[0].function.name == "read_file"  # the same call, in one piece
        text = fresh.chat.completions.create(model="m", messages=messages, stream=True)  # type: ignore[arg-type]
        streamed = "".join(c.choices[0].delta.content or "" for c in text if c.choices)
        assert streamed == "text streams"


def test_requests_from_many_threads_are_all_recorded(fake: FakeOpenAI) -> None:
    threads = [
        threading.Thread(target=post, args=(fake.base_url + "/chat/completions", USER))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fake.requests) == 8


def test_routes_and_bad_input(fake: FakeOpenAI) -> None:
    root = fake.base_url.removesuffix("/v1")
    status, raw = post(root + "/chat/completions", USER)
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "Echo: hi"
    status, raw = post(root + "/v1/embeddings", USER)
    assert status == 404 and "error" in json.loads(raw)
    request = urllib.request.Request(fake.base_url + "/chat/completions", data=b"{not json")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 400
    info.value.close()
    status, raw = post(fake.base_url + "/chat/completions", {"messages": "nonsense"})
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "Echo: "


def test_bad_reply_specs_are_rejected() -> None:
    with pytest.raises(ValueError):
        parse_reply({"texte": "typo"})
    with pytest.raises(ValueError):
        parse_reply({"error": 500, "empty": True})
    assert parse_reply({"tool_calls": [], "text": "x"}).kind == "tool_calls"
    assert parse_reply({"empty": True, "text": "ignored"}).text == ""


# -- CLI -----------------------------------------------------------------------


def test_load_script_label_forms(tmp_path: Path) -> None:
    listed = tmp_path / "a.json"
    listed.write_text(json.dumps([{"label": "demo"}, "hi"]))
    assert load_script(listed) == (["hi"], "demo")
    wrapped = tmp_path / "b.json"
    wrapped.write_text(json.dumps({"label": "x", "replies": [{"empty": True}]}))
    assert load_script(wrapped) == ([{"empty": True}], "x")


def test_cli_subprocess(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"label": "demo"}, {"text": "from the script", "chunk": 4}]))
    serve = [sys.executable, "-m", "lsp_server.fake_model", "--port", "0", "--slots", "1"]
    serve += ["--no-tools", "ollama", "--context-window", "4096", "--overflow", "ollama"]
    proc = subprocess.Popen(
        [*serve, "--script", str(script)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        status, raw = post(base_url + "/chat/completions", USER)
        assert status == 200
        assert json.loads(raw)["choices"][0]["message"]["content"] == "from the script"
        with urllib.request.urlopen(base_url + "/models", timeout=5) as response:
            assert json.loads(response.read())["data"][0]["id"] == "agent-assist-demo"
        status, raw = post(base_url + "/chat/completions", {**USER, "tools": [{"type": "x"}]})
        assert status == 400 and b"does not support tools" in raw
        status, raw = post(base_url + "/chat/completions", {**USER, "messages": BIG})
        assert status == 200 and json.loads(raw)["usage"]["prompt_tokens"] == 2050  # cut
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
