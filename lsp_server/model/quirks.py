"""What a model server turned out to refuse that our requests can be changed for.

Found by the chat loop from the server's errors (`faults.classify`), kept for the server
process, applied by the HTTP transport to every request after:

- `blank_tool_text`: an assistant message that only calls tools is sent with
  `"content": ""`, not `null`. The OpenAI API takes null there, and pydantic-ai sends it;
  llama-cpp-python (HTTP 500, a validation error) and llama-server builds before 2025-05
  ("Expected 'content' to be a string or an array") refuse it, so every turn after a tool
  call failed. Others refuse the empty string (Bedrock-backed endpoints: "text content
  blocks must be non-empty"), so null stays what is sent until a server refuses it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass
class ServerQuirks:
    """What the model server refused that requests are changed for (see the module doc)."""

    blank_tool_text: bool = False


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
