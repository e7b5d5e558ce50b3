"""Messages in pydantic-ai's JSON form and the rules that keep a history a valid request.

A history is sanitized (no empty responses, no tool call without its result or result
without its call), its tokens are estimated without a tokenizer, and it is trimmed to a
budget only at turn starts, system-prompt parts of the dropped head carried forward.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson

Message = dict[str, Any]

COMPACTION_PREFIX = "Summary of the earlier conversation (older turns were compacted):\n"
_CALL_KINDS = frozenset({"tool-call", "builtin-tool-call"})
_ANSWER_KINDS = frozenset({"tool-return", "retry-prompt", "builtin-tool-return"})


def _is_message(value: object) -> bool:
    if not isinstance(value, dict) or value.get("kind") not in ("request", "response"):
        return False
    parts = value.get("parts")
    return isinstance(parts, list) and all(
        isinstance(p, dict) and isinstance(p.get("part_kind"), str) for p in parts
    )


def text_message(text: str) -> Message:
    """Return a model response holding only `text`."""
    return {"kind": "response", "parts": [{"part_kind": "text", "content": text}]}


def summary_message(summary: str) -> Message:
    """Return the request that stands for compacted turns."""
    return {
        "kind": "request",
        "parts": [{"part_kind": "system-prompt", "content": COMPACTION_PREFIX + summary}],
    }


def _cut_at_turn_start(
    count: int, starts: Sequence[int], span_tokens: Callable[[int, int], int], budget: int
) -> int:
    """Return where the kept tail of `count` messages begins (see `reconstruct_history`)."""
    cut = count
    total = 0
    for start in reversed(starts):
        total += span_tokens(start, cut)
        if total > budget and cut != count:
            break
        cut = start
    if cut == count:
        cut = starts[-1] if starts else 0
    elif starts and cut == starts[0]:
        cut = 0  # every turn fits: keep what precedes the first one too, as it is
    return cut


def _system_parts(messages: Iterable[Message]) -> list[dict[str, Any]]:
    return [
        p
        for m in messages
        if m["kind"] == "request"
        for p in m["parts"]
        if p["part_kind"] == "system-prompt"
    ]


def _with_system_parts(kept: list[Message], system_parts: list[dict[str, Any]]) -> list[Message]:
    """Carry `system_parts` into the kept messages (`_carry`), then sanitize."""
    return sanitize_messages(_carry(kept, system_parts))


def _carry(kept: list[Message], system_parts: list[dict[str, Any]]) -> list[Message]:
    """Put `system_parts` first in the first kept message, a request (copied).

    When the kept tail starts with a response, they go in a request of their own before
    it: system-prompt parts in a response are not a valid message.
    """
    if system_parts and kept:
        first = kept[0]
        if first["kind"] == "request":
            kept[0] = {**first, "parts": [*system_parts, *first["parts"]]}
        else:
            kept.insert(0, {"kind": "request", "parts": list(system_parts)})
    return kept


def sanitize_messages(messages: Sequence[Message]) -> list[Message]:
    """Drop empty responses, dangling tool calls and orphan tool results.

    A message that loses nothing is returned as is (the very dict, never copied), so the
    history hands out the same objects turn after turn and conversions cached by identity
    (`ModelMessageCache`) stay valid. Messages are never mutated in place, here or by callers.
    """
    cleaned: list[Message] = []
    for message in messages:
        parts = message["parts"]
        if any(_is_empty_text(p) for p in parts):
            parts = [p for p in parts if not _is_empty_text(p)]
            if parts:
                cleaned.append({**message, "parts": parts})
        elif parts:
            cleaned.append(message)
    result: list[Message] = []
    last = len(cleaned) - 1
    for index, message in enumerate(cleaned):
        parts = message["parts"]
        if message["kind"] == "response":
            if any(p["part_kind"] in _CALL_KINDS for p in parts):
                answered = _answered_ids(cleaned[index + 1] if index < last else None)
                parts = [
                    p for p in parts if p["part_kind"] not in _CALL_KINDS or _call_id(p) in answered
                ]
        elif any(_is_tool_answer(p) for p in parts):
            previous = result[-1] if result and result[-1]["kind"] == "response" else None
            calls = _call_ids(previous)
            parts = [p for p in parts if not _is_tool_answer(p) or _call_id(p) in calls]
        if len(parts) == len(message["parts"]):
            result.append(message)
        elif parts:
            result.append({**message, "parts": parts})
    # Removing a whole message can orphan a neighbour; one more pass settles it.
    return result if len(result) == len(cleaned) else sanitize_messages(result)


def _is_empty_text(part: dict[str, Any]) -> bool:
    return part["part_kind"] in ("text", "thinking") and not part.get("content")


def _is_tool_answer(part: dict[str, Any]) -> bool:
    kind = part["part_kind"]
    if kind == "retry-prompt":
        return part.get("tool_name") is not None
    return kind in _ANSWER_KINDS


def _call_id(part: dict[str, Any]) -> str:
    return str(part.get("tool_call_id", ""))


def _answered_ids(message: Message | None) -> set[str]:
    if message is None or message["kind"] != "request":
        return set()
    return {_call_id(p) for p in message["parts"] if _is_tool_answer(p)}


def _call_ids(message: Message | None) -> set[str]:
    if message is None:
        return set()
    return {_call_id(p) for p in message["parts"] if p["part_kind"] in _CALL_KINDS}


def cut_tool_results(messages: list[Message], limit: int) -> tuple[list[Message], int]:
    """Return `messages` with each tool result over `limit` bytes cut to it, and how many.

    What a model is sent of a tool's earlier results, never what the log holds: the window
    may have turned out smaller than when the tool ran (a server's overflow error, Ollama's
    silent cut), and a file read then can fill it on its own. Text is cut at a line end
    within the limit, a list after the entries that fit; a note says so. The same list is
    returned when nothing is over.
    """
    out: list[Message] | None = None
    cuts = 0
    for index, message in enumerate(messages):
        if message.get("kind") != "request":
            continue
        parts = message.get("parts") or []
        fitted = [
            _fitted(part, limit) if part.get("part_kind") == "tool-return" else part
            for part in parts
        ]
        changed = sum(a is not b for a, b in zip(fitted, parts, strict=True))
        if changed:
            out = out if out is not None else list(messages)
            out[index] = {**message, "parts": fitted}
            cuts += changed
    return (messages if out is None else out), cuts


_CUT_NOTE = "[cut to {limit} bytes to fit the model's context window: {left} bytes left out]"


def _fitted(part: dict[str, Any], limit: int) -> dict[str, Any]:
    """Return a tool result cut to `limit` bytes (the same part when it fits)."""
    content = part.get("content")
    if isinstance(content, str):
        data = content.encode("utf-8", "surrogatepass")
        if len(data) <= limit:
            return part
        end = data.rfind(b"\n", 0, limit) + 1 or limit
        kept = data[:end].decode("utf-8", "ignore")
        note = _CUT_NOTE.format(limit=limit, left=len(data) - end)
        joint = "" if kept.endswith("\n") else "\n"
        return {**part, "content": kept + joint + note}
    if isinstance(content, list) and all(isinstance(item, str) for item in content):
        size = len(orjson.dumps(content))
        if size <= limit:
            return part
        kept_items: list[str] = []
        used = 2
        for item in content:
            used += len(orjson.dumps(item)) + 1
            if used > limit:
                break
            kept_items.append(item)
        note = _CUT_NOTE.format(limit=limit, left=size - len(orjson.dumps(kept_items)))
        return {**part, "content": [*kept_items, note]}
    return part


def estimate_tokens(message: Message) -> int:
    """Estimate tokens (about 4 bytes each) without a tokenizer: no downloads, no network."""
    size = 0
    for part in message.get("parts", ()):
        for key in ("content", "args", "tool_name"):
            value = part.get(key)
            if isinstance(value, str):
                size += len(value.encode("utf-8", "surrogatepass"))
            elif value is not None:
                size += len(orjson.dumps(value, default=str))
        size += 16  # role and framing overhead per part
    return size // 4 + 1


def reconstruct_history(
    messages: Sequence[Message],
    max_tokens: int,
    carried: Sequence[dict[str, Any]] = (),
) -> list[Message]:
    """Keep the newest turns that fit in `max_tokens`, cut only at turn starts.

    A cut never separates a tool call from its result, the last turn is always kept, and
    system-prompt parts from the dropped head are carried into the first kept request.
    """
    if not messages:
        return []
    cut = _cut_at_turn_start(
        len(messages),
        [i for i, m in enumerate(messages) if _starts_turn(m)],
        lambda a, b: sum(estimate_tokens(m) for m in messages[a:b]),
        max_tokens,
    )
    return _with_system_parts(list(messages[cut:]), [*carried, *_system_parts(messages[:cut])])


def _starts_turn(message: Message) -> bool:
    if message["kind"] != "request":
        return False
    parts = message["parts"]
    return any(p["part_kind"] == "user-prompt" for p in parts) and not any(
        _is_tool_answer(p) for p in parts
    )
