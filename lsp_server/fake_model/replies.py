"""The fake model's script: replies in their dict form, and how a request is read.

Replies are dicts (the same shape as the CLI's JSON script file)::

    "plain text"                                   # same as {"text": "plain text"}
    {"text": "...", "chunk": 8, "delay": 0.0}      # streamed in `chunk`-sized deltas
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "a"}, "id": "call_1"}],
     "text": "optional content first", "chunk": 8, "delay": 0.0}
    {"error": 500, "message": "...", "type": "server_error", "retry": False}
                                                   # "retry": sent as x-should-retry (OpenAI's
                                                   # header); without it, no such header
    {"empty": True}                                # finish_reason "stop", no content
    {"length": "partial text", "chunk": 8}         # finish_reason "length"
    {"filtered": "partial text"}                   # finish_reason "content_filter"
    {"hang": "first delta"}                        # one delta, then wait for release()

Faults real servers produce (each streams its text first, then fails):

    {"cut": "partial"}             # the stream ends: no finish_reason, no [DONE]
    {"drop": "partial"}            # the connection is reset mid-stream
    {"corrupt": "partial"}         # a chunk that is not JSON, then the rest
    {"stall": "partial", "seconds": 5}   # nothing for `seconds`, then the stream ends
    {"error": 429, "retry_after": 2}     # any error can carry a Retry-After header
    {"error": 400, "code": "context_length_exceeded", "message": "..."}
    {"corrupt": "partial", "bad": "{}"}  # the corrupt event's data: here JSON with no choices
    {"corrupt": "partial", "rest": 500}  # ... then 500 more text chunks (`delay` apart): a
                                         # client that stops reading at the corrupt chunk
                                         # leaves before they are sent
    {"flood": "piece", "chunk": 4096}    # `piece` repeated as text deltas of `chunk`
                                         # characters, forever (until the client leaves)
    {"flood_line": "x"}                  # one SSE `data:` line that never ends
    {"text": "...", "first_delay": 3}    # headers at once, the first chunk later
    {"text": "...", "usage": False}      # no usage in the stream (llama.cpp's servers)
    {"text": "...", "reasoning": "..."}  # a reasoning model's thinking first, streamed as
                                         # `reasoning_content` (vLLM, llama-server, DeepSeek)
                                         # or, with "reasoning_field": "reasoning", as Ollama
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_KINDS = (
    "text",
    "tool_calls",
    "error",
    "empty",
    "length",
    "filtered",
    "hang",
    "cut",
    "drop",
    "corrupt",
    "stall",
    "flood",
    "flood_line",
)
FAULTS = ("cut", "drop", "corrupt", "stall")
FLOODS = ("flood", "flood_line")
_OPTIONS = {
    "chunk",
    "delay",
    "message",
    "type",
    "retry",
    "text",
    "code",
    "retry_after",
    "seconds",
    "first_delay",
    "usage",
    "reasoning",
    "reasoning_field",
    "rest",
    "bad",
}
SUMMARY_MARKER = "You keep the running summary"


@dataclass
class Reply:
    """One scripted reply, normalised from its dict form by `parse_reply`."""

    kind: str
    text: str = ""
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    status: int = 500
    message: str = "scripted error"
    error_type: str = "server_error"
    retry: bool | None = None  # x-should-retry, if sent
    chunk: int = 8
    delay: float = 0.0
    code: str | None = None
    retry_after: str | None = None
    seconds: float = 0.0
    first_delay: float = 0.0
    usage: bool = True
    reasoning: str = ""  # streamed before the text, in `reasoning_field`
    reasoning_field: str = "reasoning_content"
    rest: int = 0  # text chunks sent after a corrupt one
    bad: str = ""  # the corrupt event's data (else JSON cut short)


def parse_reply(spec: str | dict[str, Any] | Reply) -> Reply:
    """Turn a reply in its dict (or plain string) form into a `Reply`; raise ValueError if bad."""
    if isinstance(spec, Reply):
        return spec
    if isinstance(spec, str):
        spec = {"text": spec}
    kinds = [k for k in _KINDS[1:] if k in spec] or [k for k in ("text",) if k in spec]
    unknown = spec.keys() - set(_KINDS) - _OPTIONS
    if len(kinds) != 1 or unknown:
        raise ValueError(f"bad reply {spec!r}: need one of {_KINDS}; unknown keys {unknown}")
    kind = kinds[0]
    chunk, delay = max(1, int(spec.get("chunk", 8))), float(spec.get("delay", 0))
    text = str(spec.get("text", "")) if kind in ("text", "tool_calls") else ""
    reply = Reply(kind=kind, text=text, chunk=chunk, delay=delay)
    reply.first_delay = float(spec.get("first_delay", 0))
    reply.usage = bool(spec.get("usage", True))
    reply.reasoning = str(spec.get("reasoning", ""))
    reply.reasoning_field = str(spec.get("reasoning_field", reply.reasoning_field))
    if kind in FAULTS or kind in FLOODS:
        reply.text = str(spec[kind]) or "x"
        reply.seconds = float(spec.get("seconds", 0))
        reply.rest = int(spec.get("rest", 0))
        reply.bad = str(spec.get("bad", ""))
    if kind == "tool_calls":
        for call in spec["tool_calls"]:
            args = call.get("arguments", {})
            reply.tool_calls.append(
                {
                    "name": str(call["name"]),
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                    "id": str(call.get("id", "")),
                }
            )
    elif kind == "error":
        reply.status = int(spec["error"])
        reply.message = str(spec.get("message", reply.message))
        reply.error_type = str(spec.get("type", reply.error_type))
        reply.retry = None if spec.get("retry") is None else bool(spec["retry"])
        reply.code = str(spec["code"]) if spec.get("code") is not None else None
        if spec.get("retry_after") is not None:
            reply.retry_after = str(spec["retry_after"])
    elif kind in ("length", "filtered"):
        reply.text = str(spec[kind])
    elif kind == "hang":
        reply.text = spec["hang"] if isinstance(spec["hang"], str) and spec["hang"] else "..."
    return reply


def content_text(content: Any) -> str:
    """Flatten a message's content (string or list of parts) to text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def split_text(text: str, size: int) -> list[str]:
    """Cut `text` into pieces of `size` characters (the streamed deltas)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def is_summary_request(body: dict[str, Any]) -> bool:
    """Return True for the server's background session-summary requests."""
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            if SUMMARY_MARKER in content_text(message.get("content")):
                return True
    return False


def echo_reply(body: dict[str, Any]) -> Reply:
    """Answer with `Echo: <last user message>` (what an empty script does)."""
    last_user = ""
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            last_user = content_text(message.get("content"))
    return Reply(kind="text", text=f"Echo: {last_user}")


def default_summary(body: dict[str, Any]) -> Reply:
    """Answer a summary request with a structured summary naming the user's requests."""
    text = " ".join(
        content_text(m.get("content"))
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "user"
    )
    asked = [line[len("User: ") :][:60] for line in text.splitlines() if line.startswith("User: ")]
    summary = "Running summary: the user asked " + ("; ".join(asked) or "nothing yet") + "."
    arguments = json.dumps({"summary": summary, "decisions": []})
    if not body.get("tools"):  # prompted output: the JSON as the answer's text
        return Reply(kind="text", text=arguments)
    return Reply(
        kind="tool_calls", tool_calls=[{"name": "final_result", "arguments": arguments, "id": ""}]
    )


def prompt_tokens(body: dict[str, Any]) -> int:
    """Estimate a request's prompt tokens as the fake counts them: 4 bytes each."""
    return len(json.dumps(body.get("messages") or [])) // 4


def null_content_at(body: dict[str, Any]) -> int | None:
    """Return the index of the first assistant message without string content, if any."""
    for index, message in enumerate(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            if not isinstance(message.get("content"), str | list):
                return index
    return None


def load_script(path: str | Path) -> tuple[list[Any], str | None]:
    """Read a JSON script file: a list of replies (``{"label": ...}`` entries set the label)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    label: str | None = None
    if isinstance(data, dict):
        label, data = data.get("label"), data.get("replies", [])
    replies: list[Any] = []
    for item in data:
        if isinstance(item, dict) and set(item) == {"label"}:
            label = str(item["label"])
        else:
            replies.append(item)
    return replies, label
