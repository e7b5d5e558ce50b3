"""How much one turn's tool calls may do: calls per response, per turn, bytes of arguments.

A model that follows instructions planted in what it read can ask for 10,000 calls in one
response, or write 50 MB in one call. `CallBudget.review` looks at each response before its
calls run: the calls past `tools.maxCallsPerResponse` are removed from it (they are neither
run nor recorded, and the model is told in the last kept call's result), a call whose
arguments pass `tools.maxArgumentBytes` keeps only a note of their size, and once the turn
has run `tools.maxCallsPerTurn` calls, each further call is answered with a refusal instead of
running. `ToolLimits` (a pydantic-ai capability) gives those answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import ToolsConfig

if TYPE_CHECKING:
    from collections.abc import MutableSequence

    from .transport import ReplyTooLargeError


@dataclass
class CallBudget:
    """The tool calls of one turn: how many ran, and what to answer instead of running."""

    limits: ToolsConfig = field(default_factory=ToolsConfig)
    used: int = 0  # calls admitted in this turn
    refused: dict[str, str] = field(default_factory=dict)  # tool_call_id -> the answer
    notes: dict[str, str] = field(default_factory=dict)  # tool_call_id -> added to its result

    def review(self, parts: MutableSequence[Any]) -> None:
        """Trim a model response's tool calls (in place) to what the limits allow."""
        from pydantic_ai.messages import ToolCallPart

        calls = [p for p in parts if isinstance(p, ToolCallPart)]
        per_response = self.limits.max_calls_per_response
        if len(calls) > per_response:
            dropped = calls[per_response:]
            drop = {id(p) for p in dropped}
            parts[:] = [p for p in parts if id(p) not in drop]
            calls = calls[:per_response]
            self.notes[calls[-1].tool_call_id] = (
                f"[{len(dropped)} more tool calls of this response were not run: at most "
                f"{per_response} run per response (tools.maxCallsPerResponse). Ask for what "
                "you still need in fewer calls.]"
            )
        cap = self.limits.max_argument_bytes
        for call in calls:
            size = _argument_bytes(call.args)
            if size > cap:
                call.args = {"omitted": f"{size} bytes of arguments"}
                self.refused[call.tool_call_id] = (
                    f"[not run: its arguments were {size:,} bytes, over the {cap:,} allowed "
                    "(tools.maxArgumentBytes). Write a large file in smaller parts, or ask the "
                    "user to.]"
                )
            elif self.used >= self.limits.max_calls_per_turn:
                self.refused[call.tool_call_id] = (
                    f"[not run: this turn already ran {self.used} "
                    f"tool call{'s' * (self.used != 1)}, the most allowed "
                    "(tools.maxCallsPerTurn). Answer the user with what you have.]"
                )
            else:
                self.used += 1


def _argument_bytes(args: Any) -> int:
    if args is None:
        return 0
    if isinstance(args, str):
        return len(args.encode("utf-8", "surrogatepass"))
    import orjson

    try:
        return len(orjson.dumps(args))
    except TypeError:
        return len(repr(args))


def with_note(result: Any, note: str) -> Any:
    """Return a tool's result with `note` added (as a last item of a list result)."""
    if isinstance(result, list):
        return [*result, note]
    return f"{result}\n{note}"


def content_bytes(event: Any) -> int:
    """Return the bytes of content a stream event adds: text, thinking or tool-call arguments."""
    part = getattr(event, "part", None)
    delta = getattr(event, "delta", None)
    if part is not None:
        value = getattr(part, "content", None) or getattr(part, "args", None)
    elif delta is not None:
        value = (
            getattr(delta, "content_delta", None)
            or getattr(delta, "args_delta", None)
            or getattr(delta, "tool_name_delta", None)
        )
    else:
        return 0
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    return len(repr(value)) if value else 0


def reply_too_large(exc: BaseException) -> ReplyTooLargeError | None:
    """Return the `ReplyTooLargeError` behind what a model request raised, if one is."""
    from .transport import ReplyTooLargeError

    current: BaseException | None = exc
    for _ in range(12):
        if current is None:
            return None
        if isinstance(current, ReplyTooLargeError):
            return current
        current = current.__cause__ or current.__context__
    return None
