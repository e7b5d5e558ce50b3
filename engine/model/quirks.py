"""What a model server turned out to refuse that our requests can be changed for.

Found by the chat loop from the server's errors (`faults.classify`), kept for the server
process, applied by the HTTP transport to every request after:

- `blank_tool_text`: an assistant message that only calls tools is sent with
  `"content": ""`, not `null`. The OpenAI API takes null there, and pydantic-ai sends it;
  llama-cpp-python (HTTP 500, a validation error) and llama-server builds before 2025-05
  ("Expected 'content' to be a string or an array") refuse it, so every turn after a tool
  call failed. Others refuse the empty string (Bedrock-backed endpoints: "text content
  blocks must be non-empty"), so null stays what is sent until a server refuses it.

And what a server says it is (`server`), for what only that server can be asked.

And what some servers' answers need before a tool runs (`loosen_tool_args`): arguments
whose strings hold raw newlines or tabs rather than their JSON escapes. A server that passes
the model's text through as the arguments (llama-cpp-python's function calling) sends what
small local models write, most often in a file's content; strict JSON refuses it, and the
call failed as "Invalid JSON: control character" until the turn gave up. Such arguments are
read as Python's `json` reads them with `strict=False`, then sent on and kept as valid JSON.
A summary's structured output (the output tool's arguments, or the JSON text of prompted
output) is read the same way (`build.LooseOutput`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass
class ServerQuirks:
    """What the model server refused that requests are changed for (see the module doc)."""

    blank_tool_text: bool = False
    # The `Server` header of its last answer: llama.cpp's llama-server says `llama.cpp`, and
    # is then asked whether its chat template takes tools at all (`props`).
    server: str = ""


def blank_tool_text(body: bytes) -> bytes | None:
    """Return `body` with `"content": ""` for tool-calling assistant messages; None: no change."""
    if b'"tool_calls"' not in body:
        return None
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    messages = payload.get("messages") if isinstance(payload, dict) else None
    changed = False
    for message in messages if isinstance(messages, list) else ():
        if _calls_without_text(message):
            message["content"] = ""
            changed = True
    return json.dumps(payload, ensure_ascii=False).encode() if changed else None


def _calls_without_text(message: Any) -> bool:
    return (
        isinstance(message, dict)
        and message.get("role") == "assistant"
        and bool(message.get("tool_calls"))
        and message.get("content") is None
    )


def loose_json(text: str) -> str | None:
    """Return `text` re-encoded if raw control characters in strings kept it from being JSON.

    Only an object is returned; None when `text` is valid JSON already, or not JSON at all.
    """
    try:
        json.loads(text)
        return None
    except ValueError:
        pass
    try:
        value = json.loads(text, strict=False)
    except ValueError:
        return None
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else None


def loosen_tool_args(parts: Iterable[Any]) -> int:
    """Rewrite tool calls whose JSON arguments hold raw control characters; return how many.

    Only arguments that strict JSON refuses and `json.loads(..., strict=False)` reads as an
    object are changed (re-encoded as valid JSON, the same values); any other stays as the
    model sent it, for the tool's own validation to answer.
    """
    from pydantic_ai.messages import ToolCallPart

    changed = 0
    for part in parts:
        if isinstance(part, ToolCallPart) and isinstance(part.args, str):
            loose = loose_json(part.args)
            if loose is not None:
                part.args = loose
                changed += 1
    return changed
