"""`/history --steps`: the session's turns, each model call with its tools and results.

The server sends the projection (`agentAssist/history {steps: true}` → `turns`); this prints
it as `sessions show --steps` does: what the model or the store wrote is made inert by
`Chat.say`, never obeyed by the terminal.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .chat_types import Chat

RESULT_LINES = 12  # of a tool result: more are counted, not printed (`sessions show` has all)


def _moment(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def clock(moment: datetime | None) -> str:
    """Return `14:03:07` (UTC), `?` if unknown."""
    return moment.astimezone(UTC).strftime("%H:%M:%S") if moment is not None else "?"


def span(started: Any, ended: Any) -> str:
    """Return `14:03:07–14:03:09 (2.1 s)` in UTC, `14:03:07– (open)` while it runs."""
    start, end = _moment(started), _moment(ended)
    if start is None and end is None:
        return "time unknown"
    if end is None:
        return f"{clock(start)}– (open)"
    if start is None:
        return f"?–{clock(end)}"
    seconds = (end - start).total_seconds()
    return f"{clock(start)}–{clock(end)} ({seconds:,.{1 if seconds >= 1 else 2}f} s)"


def heading(step: dict[str, Any]) -> str:
    """Return `step 2 · 14:03:07–14:03:09 (2.1 s) · model · 1,234 in / 56 out`."""
    parts = [f"step {step.get('step')}", span(step.get("startedAt"), step.get("endedAt"))]
    parts.append(str(step.get("model") or "model not recorded"))
    usage = step.get("usage")
    if isinstance(usage, dict):
        guess = "~" if usage.get("estimated") else ""
        tokens_in, tokens_out = (
            int(usage.get("inputTokens") or 0),
            int(usage.get("outputTokens") or 0),
        )
        parts.append(f"{guess}{tokens_in:,} in / {guess}{tokens_out:,} out")
    return " · ".join(parts)


def _result(chat: Chat, tool: dict[str, Any]) -> None:
    result = tool.get("result")
    if result is None:
        chat.say("      → no result recorded", "dim")
        return
    lines = str(result).splitlines() or [""]
    for line in lines[:RESULT_LINES]:
        chat.say(f"      │ {line}", "dim")
    hidden = len(lines) - RESULT_LINES
    if hidden > 0:
        chat.say(f"      … {hidden:,} more lines", "dim")
    if tool.get("folded"):
        chat.say(f"      … cut: {int(tool.get('resultBytes') or 0):,} bytes in all", "dim")


def show_turn(chat: Chat, turn: dict[str, Any]) -> None:
    """Print one turn: the user's message, then each step."""
    when = span(turn.get("startedAt"), turn.get("endedAt"))
    chat.say(f"You (turn {turn.get('turn')}) · {when}: {turn.get('input')}", "bold")
    for step in turn.get("steps") or []:
        chat.say("  " + heading(step), "cyan")
        for retry in step.get("retries") or []:
            chat.say(
                f"    retry: attempt {retry.get('attempt')} abandoned ({retry.get('kind')}): "
                f"{retry.get('reason')}",
                "yellow",
            )
        for line in str(step.get("text") or "").splitlines():
            chat.say(f"    {line}")
        for tool in step.get("tools") or []:
            args = json.dumps(tool.get("args"), ensure_ascii=False)
            failed = " (failed)" if tool.get("isError") else ""
            chat.say(f"    tool {tool.get('name')} {args}{failed}")
            _result(chat, tool)
        if step.get("endReason"):
            chat.say(f"    end: {step['endReason']}", "dim")
    reason = turn.get("endReason")
    if reason is None:
        chat.say(f"  [turn {turn.get('turn')} open]", "yellow")
    elif reason != "completed":
        chat.say(f"  [turn {turn.get('turn')} {reason}]", "yellow")


def show_steps(chat: Chat, turns: list[dict[str, Any]]) -> None:
    """Print every turn with its steps."""
    if not turns:
        chat.say("No turns yet.")
    for turn in turns:
        show_turn(chat, turn)
