"""Our tool calls and turn ends in ACP's terms (pure; shared by the live turn and the replay)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import orjson
from acp.helpers import start_tool_call, tool_diff_content, update_tool_call
from acp.schema import StopReason, ToolCallLocation, ToolCallProgress, ToolCallStart, ToolKind

ToolStatus = Literal["pending", "in_progress", "completed", "failed"]

TOOL_KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "write_file": "edit",
    "list_files": "search",
    "record_decision": "think",
    "set_phase": "switch_mode",
}
# The engine's tool activity (`TurnSink.tool`) as ACP's tool call status.
STATUSES: dict[str, ToolStatus] = {
    "started": "in_progress",
    "done": "completed",
    "failed": "failed",
}


def tool_args(args: Any) -> dict[str, Any]:
    """Return a tool call's arguments as an object (they may be recorded as JSON text)."""
    if isinstance(args, str):
        try:
            args = orjson.loads(args)
        except orjson.JSONDecodeError:
            return {}
    return args if isinstance(args, dict) else {}


def tool_kind(name: str) -> ToolKind:
    """Return the kind of one of our tools (`other` for the client's MCP tools)."""
    return TOOL_KINDS.get(name, "other")


def tool_title(name: str, args: Any) -> str:
    """Return `read_file src/app.py`: the tool and what it acts on."""
    target = _target(tool_args(args))
    return f"{name} {target}" if target else name


def _target(args: dict[str, Any]) -> str | None:
    for key in ("path", "directory"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def tool_locations(root: Path, args: Any) -> list[ToolCallLocation]:
    """Return the file a tool call acts on, as an absolute path inside the project."""
    target = _target(tool_args(args))
    if target is None:
        return []
    path = Path(target)
    return [ToolCallLocation(path=str(path if path.is_absolute() else root / path))]


def tool_started(
    root: Path,
    call_id: str,
    name: str,
    args: Any,
    status: ToolStatus = "in_progress",
    content: list[Any] | None = None,
) -> ToolCallStart:
    """Return the `tool_call` update announcing a call (with its status so far)."""
    return start_tool_call(
        call_id,
        tool_title(name, args),
        kind=tool_kind(name),
        status=status,
        content=content,
        locations=tool_locations(root, args),
        raw_input=tool_args(args),
    )


def edit_diff(root: Path, name: str, args: Any) -> list[Any] | None:
    """Return the `diff` of a `write_file` call about to run: the file now, and after it."""
    given = tool_args(args)
    path, new = given.get("path"), given.get("content")
    if name != "write_file" or not isinstance(path, str) or not isinstance(new, str):
        return None
    target = root / path
    try:
        old: str | None = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        old = None
    return [tool_diff_content(str(target), new, old)]


def tool_ended(call_id: str, status: ToolStatus) -> ToolCallProgress:
    """Return the `tool_call_update` that ends a call."""
    return update_tool_call(call_id, status=status)


def stop_reason(finish_reason: str | None) -> StopReason:
    """Return ACP's stop reason of a completed turn.

    Cut by the output limit: `max_tokens`; stopped by the provider's content filter:
    `refusal` (the answer is kept as far as it came, as over LSP); else `end_turn`.
    """
    return STOP_REASONS.get(finish_reason or "", "end_turn")


STOP_REASONS: dict[str, StopReason] = {"length": "max_tokens", "content_filter": "refusal"}
