"""Classifying model failures, the stream completion check, and retry bookkeeping in the log."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator

import httpx2
import pytest
from pydantic_ai import exceptions as pe

from engine.config import parse_initialization_options
from engine.model.faults import backoff, classify, overflow_window, summary_failure
from engine.model.quirks import ServerQuirks, blank_tool_text, loosen_tool_args
from engine.model.transport import (
    RAW_FACTOR,
    CompletionCheckTransport,
    CorruptChunkError,
    EmptyStreamError,
    ReplyTooLargeError,
    StreamCutError,
    StreamStallError,
    check_event_line,
)
from session.derive.history import build_history
from session.derive.transcript import transcript
from session.local.manager import SessionManager

from .conftest import make_lifecycle, request, response

# How each server words a prompt over its window, with the window it names (if any).
OVERFLOWS = [
    (  # OpenAI
        {
            "message": "This model's maximum context length is 128000 tokens. However, your "
            "messages resulted in 130412 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        },
        128000,
    ),
    (  # vLLM (no "error" wrapper in the body)
        {
            "object": "error",
            "message": "This model's maximum context length is 6048 tokens. However, you "
            "requested 6616 tokens (568 in the messages, 6048 in the completion). Please "
            "reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "code": 400,
        },
        6048,
    ),
    (  # llama.cpp's llama-server
        {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 5000,
            "n_ctx": 4096,
        },
        4096,
    ),
    (  # llama-server as vendored by llama-cpp-python 0.3.36 (2026-12-04), verbatim
        {
            "code": 400,
            "message": "request (3031 tokens) exceeds the available context size (2048 "
            "tokens), try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 3031,
            "n_ctx": 2048,
        },
        2048,
    ),
    (  # LiteLLM's proxy in front of that llama-server, verbatim: only the message is kept
        {
            "message": "litellm.ContextWindowExceededError: litellm.BadRequestError: "
            "ContextWindowExceededError: OpenAIException - request (3031 tokens) exceeds the "
            "available context size (2048 tokens), try increasing it\nmodel=smollm2. "
            "context_window_fallbacks=None. fallbacks=None.\n\nSet 'context_window_fallback'"
            " - https://docs.litellm.ai/docs/routing#fallbacks\n\nLiteLLM: model group "
            "'smollm2' failed with the error above. No fallback was attempted.",
            "type": "invalid_request_error",
            "param": None,
            "code": "400",
        },
        2048,
    ),
    (  # llama-server with context shift on (its source)
        {
            "message": "input (5000 tokens) is larger than the max context size (4096 tokens). "
            "skipping"
        },
        4096,
    ),
    (  # llama-cpp-python, without streaming
        {
            "code": "context_length_exceeded",
            "message": "This model's maximum context length is 2048 tokens. However, you "
            "requested 3041 tokens (2941 in the messages, 100 in the completion).",
        },
        2048,
    ),
    ({"error": "the input length exceeds the context length"}, None),  # Ollama
    (  # LiteLLM
        {
            "message": "litellm.ContextWindowExceededError: litellm.BadRequestError: "
            "ContextWindowExceededError: OpenAIException - This model's maximum context "
            "length is 8192 tokens.",
            "code": "400",
        },
        8192,
    ),
    ({"message": "prompt is too long: 210000 tokens > 200000 maximum"}, 200000),  # Anthropic
    (  # Mistral
        {
            "message": "Prompt contains 40000 tokens and 0 draft tokens, too large for model "
            "with 32768 maximum context length"
        },
        32768,
    ),
    (  # Gemini's OpenAI-compatible endpoint
        {
            "message": "The input token count (1200000) exceeds the maximum number of tokens "
            "allowed (1048576)."
        },
        1048576,
    ),
]


@pytest.mark.parametrize(("body", "window"), OVERFLOWS)
def test_every_known_overflow_wording_is_an_overflow(body: dict, window: int | None) -> None:
    fault = classify(pe.ModelHTTPError(400, "m", {"error": body} if "object" not in body else body))
    assert fault.kind == "overflow" and not fault.retryable
    assert fault.window == window


def test_an_overflow_category_from_pydantic_ai_is_an_overflow() -> None:
    error = pe.ModelHTTPError.for_category(
        pe.ModelContextWindowExceededError, status_code=400, model_name="m", body={}
    )
    assert classify(error).kind == "overflow"


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (429, "rate-limit", True),
        (500, "server", True),
        (502, "server", True),
        (503, "server", True),
        (408, "server", True),
        (400, "rejected", False),
        (401, "rejected", False),
        (403, "rejected", False),
        (404, "rejected", False),
        (422, "rejected", False),
    ],
)
def test_http_statuses(status: int, kind: str, retryable: bool) -> None:
    fault = classify(pe.ModelHTTPError(status, "m", {"error": {"message": "nope"}}))
    assert (fault.kind, fault.retryable, fault.status) == (kind, retryable, status)
    assert f"HTTP {status}" in fault.message and "nope" in fault.message


def test_retry_after_is_carried_and_exhausted_quota_is_not_retried() -> None:
    limited = pe.ModelHTTPError(429, "m", {}, headers={"Retry-After": "7"})
    assert classify(limited).retry_after == 7.0
    quota = pe.ModelHTTPError.for_category(
        pe.ModelQuotaExceededError, status_code=429, model_name="m", body={}
    )
    assert not classify(quota).retryable


@pytest.mark.parametrize(
    ("status", "said", "retryable"),
    [(500, "false", False), (429, "False", False), (409, "true", True), (500, "true", True)],
)
def test_the_servers_x_should_retry_is_followed(status: int, said: str, retryable: bool) -> None:
    error = pe.ModelHTTPError(status, "m", {}, headers={"X-Should-Retry": said})
    fault = classify(error)
    assert fault.retryable is retryable and fault.status == status
    assert ("the server said so" in fault.message) is (said.lower() == "false")


def test_x_should_retry_never_retries_an_overflow() -> None:
    body = {"error": {"message": "maximum context length is 4096 tokens", "code": None}}
    error = pe.ModelHTTPError(400, "m", body, headers={"x-should-retry": "true"})
    assert classify(error).kind == "overflow" and not classify(error).retryable


def test_stream_faults_found_in_the_cause_chain() -> None:
    def wrapped(inner: BaseException) -> pe.ModelConnectionError:
        outer = pe.ModelConnectionError("m", "Connection error.")
        outer.__cause__ = inner
        return outer

    assert classify(wrapped(StreamCutError("cut"))).kind == "cut"
    assert classify(wrapped(EmptyStreamError("empty"))).kind == "empty"
    assert classify(wrapped(httpx2.ReadTimeout("slow"))).kind == "stall"
    assert classify(wrapped(httpx2.ReadError("reset"))).kind == "connection"
    refused = httpx2.ConnectError("All connection attempts failed")
    refused.__context__ = ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")
    never = classify(wrapped(refused))
    assert never.kind == "unreachable" and never.retryable
    assert never.message == "could not connect to the model server (Connection refused)"
    unknown = httpx2.ConnectError("All connection attempts failed")
    unknown.__context__ = OSError(-2, "Name or service not known")
    assert "Name or service not known" in classify(wrapped(unknown)).message
    assert classify(wrapped(httpx2.ConnectTimeout("slow"))).kind == "unreachable"
    assert classify(pe.ModelTimeoutError("m", "timed out")).kind == "stall"
    corrupt = pe.ModelAPIError("m", "Failed to decode response as JSON: Unterminated string")
    assert classify(corrupt).kind == "corrupt"
    assert classify(ValueError("a bug")).retryable is False


def test_window_numbers_out_of_range_are_ignored() -> None:
    assert overflow_window("maximum context length is 12 tokens") is None
    assert overflow_window("maximum context length is 32768 tokens") == 32768


def test_backoff_honours_retry_after_and_grows_with_jitter() -> None:
    rng = random.Random(7)
    assert backoff(1, 3.5) == 3.5
    waits = [backoff(n, None, rng) for n in (1, 2, 3, 4, 5, 6)]
    assert 0.375 <= waits[0] <= 0.625 and 0.75 <= waits[1] <= 1.25
    assert all(w <= 8 * 1.25 for w in waits) and waits[5] >= 8 * 0.75  # capped


# -- the stream completion check ---------------------------------------------------------


class Body(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


class Canned(httpx2.AsyncBaseTransport):
    def __init__(self, chunks: list[bytes], content_type: str = "text/event-stream") -> None:
        self.chunks = chunks
        self.content_type = content_type

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, headers={"content-type": self.content_type}, stream=Body(self.chunks)
        )


def read(
    chunks: list[bytes], content_type: str = "text/event-stream", max_reply: int | None = None
) -> bytes:
    async def go() -> bytes:
        transport = CompletionCheckTransport(Canned(chunks, content_type), max_reply=max_reply)
        async with httpx2.AsyncClient(transport=transport) as client:
            response = await client.get("http://model.test/v1")
            return await response.aread()

    return asyncio.run(go())


CHUNK = b'data: {"choices": [{"delta": {"content": "hi"}, "finish_reason": null}]}\n\n'
FINISH = b'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n\n'


def test_a_finished_stream_passes_whole() -> None:
    assert read([CHUNK, FINISH]) == CHUNK + FINISH
    assert read([CHUNK, b"data: [DONE]\n\n"]).endswith(b"[DONE]\n\n")  # [DONE] alone is enough
    # A marker split across two chunks is still seen.
    assert read([CHUNK + FINISH[:30], FINISH[30:]]) == CHUNK + FINISH


def test_a_stream_that_stops_short_raises() -> None:
    with pytest.raises(StreamCutError):
        read([CHUNK, CHUNK])
    with pytest.raises(EmptyStreamError):
        read([])
    assert read([b"not a stream"], content_type="application/json") == b"not a stream"


@pytest.mark.parametrize(
    "line",
    [
        b'data: {"id": "chatcmpl-broken", "choices": [{"delta": {"cont',  # cut JSON
        b"data: not json at all",
        b'data: ["a", "list"]',
        b'data: {"garbage": true}',  # JSON the SDK would skip in silence: no choices
        b'data: {"choices": "none"}',
        b'data: {"choices": [{"delta": "text"}]}',
    ],
)
def test_a_malformed_event_ends_the_stream_there(line: bytes) -> None:
    with pytest.raises(CorruptChunkError):
        read([CHUNK, line + b"\n\n", CHUNK, FINISH], max_reply=1 << 20)
    # What came before the malformed event is passed on (the client has shown it), then it ends.
    seen: list[bytes] = []

    async def partial() -> None:
        transport = CompletionCheckTransport(
            Canned([CHUNK + line + b"\n\n" + CHUNK]), max_reply=1 << 20
        )
        async with httpx2.AsyncClient(transport=transport) as client:
            async with client.stream("GET", "http://model.test/v1") as response:
                async for piece in response.aiter_raw():
                    seen.append(piece)

    with pytest.raises(CorruptChunkError):
        asyncio.run(partial())
    assert b"".join(seen) == CHUNK
    check_event_line(b": a comment")  # SSE framing and the usual events pass
    check_event_line(b"event: completion")
    check_event_line(b'data: {"choices": [], "usage": {"prompt_tokens": 3}}')
    check_event_line(b'data: {"error": {"message": "overloaded"}}')  # the SDK raises it
    check_event_line(b'data: {"choices": [{"delta": null, "finish_reason": "stop"}]}')


def test_a_reply_past_its_cap_raises_and_stops_reading() -> None:
    cap = 1024
    with pytest.raises(ReplyTooLargeError, match="model.maxReplyBytes"):
        read([CHUNK] * (cap * RAW_FACTOR // len(CHUNK) + 2), max_reply=cap)
    line = b'data: {"choices": [{"delta": {"content": "' + b"x" * 200_000
    with pytest.raises(ReplyTooLargeError):  # one line that never ends
        read([line[i : i + 4096] for i in range(0, len(line), 4096)], max_reply=cap)
    with pytest.raises(ReplyTooLargeError):  # an answer in one piece
        read([b"x" * 4096] * (cap * RAW_FACTOR // 4096 + 1), "application/json", max_reply=cap)
    assert read([CHUNK, FINISH], max_reply=cap) == CHUNK + FINISH


# -- retries in the log ------------------------------------------------------------------


def test_an_abandoned_attempt_stays_in_the_log_but_not_in_the_history(
    manager: SessionManager,
) -> None:
    lc = make_lifecycle(manager)
    turn = lc.begin_turn("question")
    turn.start_step([request("question")])
    turn.chunk("half an ans")
    turn.retry_step("cut", "the answer was incomplete", 0.5, streamed=True)
    assert turn.resending and turn.attempt == 2
    turn.start_step([request("question")])  # what pydantic-ai resends: not recorded twice
    turn.chunk("the whole answer")
    turn.assistant_message(response("the whole answer"))
    turn.end_step({})
    turn.end("completed")
    events = manager.read_events(lc.session_id).events
    retry = next(e for e in events if e.type == "step/retry")
    assert retry.data.kind == "cut" and retry.data.attempt == 1 and retry.data.streamed
    resent = [e for e in events if e.type == "step/start"][1]
    assert resent.data.messages == [] and resent.data.model_extra == {"attempt": 2}
    assert build_history(events).messages() == [request("question"), response("the whole answer")]
    assert lc.message_history() == [request("question"), response("the whole answer")]
    assistant = [item for item in transcript(events) if item.role == "assistant"]
    assert [(a.text, a.partial) for a in assistant] == [("the whole answer", False)]


def test_an_error_after_retries_keeps_the_last_partial_marked(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    turn = lc.begin_turn("question")
    turn.start_step([request("question")])
    turn.chunk("first try")
    turn.retry_step("cut", "incomplete", 0.5, streamed=True)
    turn.start_step([])
    turn.chunk("second try")
    turn.end("error", error="incomplete")
    events = manager.read_events(lc.session_id).events
    last = transcript(events)[-1]
    assert (last.text, last.partial, last.end_reason) == ("second try", True, "error")
    assert "first try" not in str(build_history(events).messages())


def test_a_retry_before_any_request_sends_the_prompt_afresh(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    turn = lc.begin_turn("question")
    turn.retry_step("connection", "refused", 0.5, streamed=False)
    assert not turn.resending  # nothing was sent: the next attempt starts from the prompt


def test_model_retry_options_are_parsed_with_warnings() -> None:
    config, warnings = parse_initialization_options(
        {"model": {"name": "m", "maxRetries": 4, "streamTimeout": 2.5}}, None, {}
    )
    assert (config.model.max_retries, config.model.stream_timeout, warnings) == (4, 2.5, [])
    config, warnings = parse_initialization_options(
        {"model": {"name": "m"}}, None, {"AGENT_ASSIST_LLM_STREAM_TIMEOUT": "90"}
    )
    assert config.model.stream_timeout == 90.0 and config.model.max_retries == 2
    config, warnings = parse_initialization_options(
        {"model": {"name": "m", "maxRetries": -1, "streamTimeout": "soon"}}, None, {}
    )
    assert (config.model.max_retries, config.model.stream_timeout) == (2, 60.0)
    assert len(warnings) == 2 and "maxRetries" in warnings[0] and "streamTimeout" in warnings[1]
    assert config.model.first_token_timeout == 300.0  # the default: a prompt read first
    config, warnings = parse_initialization_options(
        {"model": {"name": "m", "streamTimeout": 900, "firstTokenTimeout": 30}}, None, {}
    )
    assert config.model.first_token_timeout == 900.0 and not warnings  # never below the gap
    config, warnings = parse_initialization_options(
        {"model": {"firstTokenTimeout": 0}}, None, {"AGENT_ASSIST_LLM_FIRST_TOKEN_TIMEOUT": "9"}
    )
    assert config.model.first_token_timeout == 300.0 and "firstTokenTimeout" in warnings[0]
    env = {"AGENT_ASSIST_LLM_FIRST_TOKEN_TIMEOUT": "90"}
    config, _ = parse_initialization_options({}, None, env)
    assert config.model.first_token_timeout == 90.0


# How each server refuses a request's tools, with the status it sends.
TOOL_REFUSALS = [
    (400, {"error": {"message": "registry.ollama.ai/library/gemma3:4b does not support tools"}}),
    (500, {"error": {"code": 500, "message": "tools param requires --jinja flag"}}),
    (
        400,
        {
            "object": "error",
            "message": '"auto" tool choice requires --enable-auto-tool-choice and '
            "--tool-call-parser to be set",
            "type": "BadRequestError",
        },
    ),
    (404, {"error": {"message": "No endpoints found that support tool use.", "code": 404}}),
]


@pytest.mark.parametrize(("status", "body"), TOOL_REFUSALS)
def test_every_known_tool_refusal_is_no_tools_and_never_retried(status: int, body: dict) -> None:
    fault = classify(pe.ModelHTTPError(status, "m", body, headers={"x-should-retry": "true"}))
    assert fault.kind == "no-tools" and not fault.retryable and fault.status == status
    assert "does not take tools" in fault.message


def test_an_ordinary_400_or_500_is_not_a_tool_refusal() -> None:
    assert classify(pe.ModelHTTPError(400, "m", {"error": {"message": "bad tool name"}})).kind == (
        "rejected"
    )
    assert classify(pe.ModelHTTPError(500, "m", {"error": {"message": "oops"}})).kind == "server"


async def test_a_summary_refused_its_tools_is_asked_again_for_json_text() -> None:
    from engine.config import ModelConfig
    from engine.model.runner import ChatRunner
    from lsp_server.fake_model import FakeOpenAI
    from session.summary import SESSION_SUMMARY_INSTRUCTIONS as ASK

    with FakeOpenAI(no_tools="ollama") as fake:
        runner = ChatRunner(ModelConfig(name="m", base_url=fake.base_url, api_key="k"))
        summary = await runner.summarize("User: plan the storage layer\nAssistant: ok", ASK)
        assert summary.summary == "Running summary: the user asked plan the storage layer."
        assert [bool(r.body.get("tools")) for r in fake.summary_requests] == [True, False]
        assert runner.tools and runner.summary_failed_at is None  # the chat finds out itself
        await runner.summarize("User: again", ASK)
        assert len(fake.summary_requests) == 3  # prompted at once from then on


# How servers refuse the null content of an assistant message that only calls tools.
LLAMA_CPP_PYTHON_NULL = (  # llama-cpp-python 0.3.36, verbatim (two of its seven lines)
    "7 validation errors:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 2, "
    "'ChatCompletionRequestSystemMessage', 'role'), 'msg': \"Input should be 'system'\", "
    "'input': 'assistant', 'ctx': {'expected': \"'system'\"}}\n  {'type': 'string_type', "
    "'loc': ('body', 'messages', 2, 'ChatCompletionRequestAssistantMessage', 'content'), "
    "'msg': 'Input should be a valid string', 'input': None}\n"
)
NULL_REFUSALS = [
    (500, {"error": {"message": LLAMA_CPP_PYTHON_NULL, "type": "internal_server_error"}}),
    (500, {"error": {"code": 500, "message": "Expected 'content' to be a string or an array"}}),
    (400, {"error": {"message": "Invalid value for 'content': expected a string, got null."}}),
]


@pytest.mark.parametrize(("status", "body"), NULL_REFUSALS)
def test_every_known_null_content_refusal_is_healed_not_retried(status: int, body: dict) -> None:
    fault = classify(pe.ModelHTTPError(status, "m", body, headers={"x-should-retry": "true"}))
    assert fault.kind == "null-content" and not fault.retryable and fault.status == status


def test_other_validation_errors_are_not_a_null_content_refusal() -> None:
    other = LLAMA_CPP_PYTHON_NULL.replace("ChatCompletionRequestAssistantMessage", "Other")
    fault = classify(pe.ModelHTTPError(500, "m", {"error": {"message": other}}))
    assert fault.kind == "server" and fault.retryable


CALL = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}


def test_blank_tool_text_changes_only_tool_calls_without_text() -> None:
    messages = [
        {"role": "user", "content": None},  # not ours to change
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "assistant", "content": "I will read it.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "エージェント"},
        {"role": "assistant", "content": None},  # no tool call: left as it is
    ]
    changed = blank_tool_text(json.dumps({"model": "m", "messages": messages}).encode())
    assert changed is not None
    got = json.loads(changed)["messages"]
    assert [m.get("content") for m in got] == [None, "", "I will read it.", "エージェント", None]
    assert blank_tool_text(json.dumps({"messages": messages[2:4]}).encode()) is None  # nothing
    assert blank_tool_text(b'not json, but it mentions "tool_calls"') is None
    assert blank_tool_text(b'{"messages": []}') is None


def test_a_summary_cut_at_the_length_limit_is_said_plainly() -> None:
    from pydantic_ai._output import truncated_output_message

    cut = pe.OutputTokenLimitExceeded(truncated_output_message(None))
    why = summary_failure(cut)
    assert "length limit" in why and "max_tokens" not in why  # no setting the user lacks
    try:  # as the runner raises it: chained, inside another error
        raise RuntimeError("summary") from cut
    except RuntimeError as exc:
        assert summary_failure(exc) == why
    refused = pe.ModelHTTPError(503, "m", {"error": {"message": "overloaded"}})
    assert summary_failure(refused) == classify(refused).message  # anything else: as classified


def test_loosen_tool_args_reads_raw_control_characters_and_changes_nothing_else() -> None:
    from pydantic_ai.messages import TextPart, ToolCallPart

    valid = '{"path": "a.md", "content": "one\\ntwo"}'
    raw = '{"path": "a.md", "content": "# Plan\n\t- one\n"}'  # a newline and a tab as is
    parts = [
        TextPart("Writing it."),
        ToolCallPart("write_file", valid, "c1"),
        ToolCallPart("write_file", raw, "c2"),
        ToolCallPart("write_file", {"path": "b.md", "content": "x\n"}, "c3"),
        ToolCallPart("write_file", '["not", "an\nobject"]', "c4"),
        ToolCallPart("write_file", '{"path": "c.md", "content": "cut', "c5"),
        ToolCallPart("list_files", "", "c6"),
    ]
    before = [part.args for part in parts[1:]]
    assert loosen_tool_args(parts) == 1
    assert parts[1].args is before[0]  # valid JSON: the very same text
    assert json.loads(parts[2].args) == {"path": "a.md", "content": "# Plan\n\t- one\n"}
    assert "\n" not in parts[2].args  # valid JSON now: every newline escaped
    assert [part.args for part in parts[3:]] == before[2:]  # a dict, a list, cut, empty
    assert loosen_tool_args(parts) == 0  # nothing left to change


class Recording(httpx2.AsyncBaseTransport):
    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        assert request.headers["content-length"] == str(len(body))
        self.bodies.append(body)
        return httpx2.Response(200, json={"ok": True})


def test_the_transport_sends_an_empty_text_once_the_server_refused_null() -> None:
    inner = Recording()
    quirks = ServerQuirks()
    payload = {"messages": [{"role": "assistant", "content": None, "tool_calls": [CALL]}]}

    async def send() -> None:
        transport = CompletionCheckTransport(inner, quirks)
        async with httpx2.AsyncClient(transport=transport) as client:
            await client.post("http://model.test/v1/chat/completions", json=payload)

    asyncio.run(send())
    quirks.blank_tool_text = True
    asyncio.run(send())
    first, second = (json.loads(b)["messages"][0]["content"] for b in inner.bodies)
    assert (first, second) == (None, "")


def test_a_tool_failing_past_its_retries_is_tool_misuse_with_the_last_error() -> None:
    try:
        try:
            raise pe.ModelRetry("path '/etc/passwd' is outside the workspace or not allowed")
        except pe.ModelRetry as last:
            raise pe.UnexpectedModelBehavior(
                "Tool 'read_file' exceeded max retries count of 3. Consider raising the retry "
                "limit, or see the docs on tool retries: https://pydantic.dev/docs/ai/"
            ) from last
    except pe.UnexpectedModelBehavior as exc:
        fault = classify(exc)
    assert fault.kind == "tool-misuse" and not fault.retryable
    assert fault.message == "the model called read_file 4 times with arguments that did not work"
    assert fault.detail == "path '/etc/passwd' is outside the workspace or not allowed"


class Slow(httpx2.AsyncByteStream):
    def __init__(self, pauses: list[float]) -> None:
        self.pauses = pauses  # before each chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for pause in self.pauses:
            await asyncio.sleep(pause)
            yield CHUNK
        yield FINISH


def read_slowly(pauses: list[float], gap: float) -> bytes:
    class Paced(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            headers = {"content-type": "text/event-stream"}
            return httpx2.Response(200, headers=headers, stream=Slow(pauses))

    async def go() -> bytes:
        transport = CompletionCheckTransport(Paced(), stream_timeout=gap)
        async with httpx2.AsyncClient(transport=transport) as client:
            response = await client.get("http://model.test/v1")
            return await response.aread()

    return asyncio.run(go())


def test_the_first_chunk_may_be_slow_but_a_gap_after_it_is_a_stall() -> None:
    assert read_slowly([0.3, 0.0], gap=0.1) == CHUNK * 2 + FINISH  # a prompt read first
    with pytest.raises(StreamStallError, match=r"nothing for 0.1 s \(model.streamTimeout\)"):
        read_slowly([0.0, 0.3], gap=0.1)
    fault = classify(StreamStallError("the model stopped sending: nothing for 60 s"))
    assert fault.kind == "stall" and fault.retryable and "60 s" in fault.message


def test_props_url_is_beside_the_openai_base() -> None:
    from engine.model.props import props_url

    assert props_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/props"
    assert props_url("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/props"
    assert props_url("http://box:8080") == "http://box:8080/props"


@pytest.mark.parametrize("takes", [True, False, None])
async def test_llama_servers_props_say_whether_its_template_takes_tools(takes: bool | None) -> None:
    from engine.model.props import ServerProps, read_props
    from lsp_server.fake_model import FakeOpenAI

    with FakeOpenAI(template_tools=takes, context_window=2048) as fake:
        props = await read_props(fake.base_url, "k")
    # None: not llama-server, /props is a 404 and says nothing
    assert props == (ServerProps() if takes is None else ServerProps(takes, 2048))


async def test_props_that_cannot_be_read_are_unknown() -> None:
    from engine.model.props import ServerProps, read_props
    from tests.fixtures import free_port

    assert await read_props(f"http://127.0.0.1:{free_port()}/v1", None) == ServerProps()
