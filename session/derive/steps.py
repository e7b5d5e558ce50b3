"""The steps: a session's turns, each with its model calls, as the log has them.

A step is one model call: its request (`step/start`, `request/header`), what it answered
(`assistant/message`, else its streamed chunks), the tools it called with their results,
and its usage (`step/end`). Pure: events in, `TurnSteps` out; nothing is read or written.

- An attempt abandoned and sent again (`step/retry`) is not a step of its own: it is one of
  the `retries` of the step that sent the request again, and its chunks are not that step's
  text. The step keeps the number the log gave its last attempt (the request that went
  through, whose `request_sha256` it carries) and the start of its first.
  `StepSteps.attempt_steps` lists every step number the log gave its attempts.
- A retry before any request of the step was recorded (the connection failed) waits for
  the next step; a turn that ended before one started gets a step of its own, numbered
  after the last, with those retries and no request.
- Turns undone by a rewind or folded by a compaction are shown: they happened.
- A session kept with `persistence: metadata` holds no content: its texts, arguments and
  results are the placeholders the log holds (`[not persisted: sha256:…, N chars]`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from ..events import (
    AssistantMessageEvent,
    ChunkEvent,
    Event,
    RequestHeaderEvent,
    StepEndEvent,
    StepRetryEvent,
    StepStartEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    response_text,
)

TOOL_CALLS = "tool-calls"
ANSWERED = "answered"


@dataclass
class StepUsage:
    """A step's token usage as `step/end` recorded it (`estimated`: the server sent none)."""

    input_tokens: int
    output_tokens: int
    requests: int = 1
    estimated: bool = False


@dataclass
class StepTool:
    """One tool call of a step and its result (`result` None: none recorded)."""

    tool_call_id: str
    name: str
    args: Any
    result: str | None = None
    folded: bool = False
    result_bytes: int = 0
    is_error: bool = False


@dataclass
class StepRetry:
    """An attempt of the step that was abandoned and sent again."""

    attempt: int
    kind: str
    reason: str


@dataclass
class Step:
    """One model call of a turn (see the module doc)."""

    turn: int
    step: int
    started_at: datetime | None
    ended_at: datetime | None = None
    model: str | None = None
    usage: StepUsage | None = None
    text: str = ""
    tools: list[StepTool] = field(default_factory=list)
    retries: list[StepRetry] = field(default_factory=list)
    end_reason: str | None = None
    request_sha256: str | None = None
    attempt_steps: list[int] = field(default_factory=list)  # the log's numbers of its attempts
    # while folding: the text streamed by the current attempt, and the step's state
    _chunks: list[str] = field(default_factory=list, repr=False)
    _answer: str | None = field(default=None, repr=False)
    _abandoned: bool = field(default=False, repr=False)
    _ended: bool = field(default=False, repr=False)


@dataclass
class TurnSteps:
    """One turn and its steps."""

    turn: int
    input: str
    started_at: datetime | None
    ended_at: datetime | None = None
    end_reason: str | None = None
    steps: list[Step] = field(default_factory=list)
    _waiting: list[StepRetry] = field(default_factory=list, repr=False)  # for the next step
    _waiting_at: datetime | None = field(default=None, repr=False)


def fold_text(text: str, fold: int | None) -> tuple[str, bool]:
    """Return `text` cut to at most `fold` UTF-8 bytes, and whether it was cut.

    The cut is at a character's boundary; `fold` None or 0: never cut.
    """
    if not fold:
        return text, False
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= fold:
        return text, False
    return data[:fold].decode("utf-8", "ignore"), True


def result_text(content: Any) -> str:
    """Return a tool result as text: a string as it is, anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return orjson.dumps(content, default=str).decode()


def _usage(data: dict[str, Any]) -> StepUsage | None:
    inputs, outputs = data.get("input_tokens"), data.get("output_tokens")
    if not isinstance(inputs, int) and not isinstance(outputs, int):
        return None
    return StepUsage(
        input_tokens=inputs if isinstance(inputs, int) else 0,
        output_tokens=outputs if isinstance(outputs, int) else 0,
        estimated=bool(data.get("estimated")),
    )


class _Folder:
    """Folds events into turns, one at a time."""

    def __init__(self, fold: int | None) -> None:
        self.fold = fold
        self.turns: list[TurnSteps] = []
        self.by_number: dict[int, TurnSteps] = {}

    def turn_of(self, event: Event) -> TurnSteps | None:
        return self.by_number.get(event.turn) if event.turn is not None else None

    def add(self, event: Event) -> None:
        if isinstance(event, TurnStartEvent):
            if event.turn is None:
                return
            started = TurnSteps(event.turn, event.data.input, event.ts)
            self.turns.append(started)
            self.by_number[event.turn] = started
            return
        turn = self.turn_of(event)
        if turn is None or turn.end_reason is not None:
            return  # outside a turn (a drift, a save...), or after its end
        if isinstance(event, TurnEndEvent):
            self.end_turn(turn, event)
            return
        step = turn.steps[-1] if turn.steps else None
        if isinstance(event, StepStartEvent):
            self.start_step(turn, step, event)
        elif isinstance(event, StepRetryEvent):
            retry = StepRetry(event.data.attempt, event.data.kind, event.data.reason)
            if step is None or step._ended:  # its request was never recorded
                turn._waiting.append(retry)
                turn._waiting_at = turn._waiting_at or event.ts
            else:
                step.retries.append(retry)
                step._abandoned = True
                step._chunks = []
        elif step is None:
            return
        elif isinstance(event, RequestHeaderEvent):
            step.model = event.data.model
        elif isinstance(event, ChunkEvent):
            step._chunks.append(event.data.delta)
        elif isinstance(event, AssistantMessageEvent):
            step._answer = response_text(event.data.message)
        elif isinstance(event, ToolCallEvent):
            data = event.data
            step.tools.append(StepTool(data.tool_call_id, data.name, data.args))
        elif isinstance(event, ToolResultEvent):
            self.tool_result(turn, step, event)
        elif isinstance(event, StepEndEvent):
            step.usage = _usage(event.data.usage)
            step.ended_at = event.ts
            step._ended = True

    def start_step(self, turn: TurnSteps, step: Step | None, event: StepStartEvent) -> None:
        number = event.step if event.step is not None else len(turn.steps) + 1
        digest = getattr(event.data, "request_sha256", None)
        digest = digest if isinstance(digest, str) else None
        if step is not None and step._abandoned and not step._ended:  # sent again
            step.step = number
            step.attempt_steps.append(number)
            step.request_sha256 = digest
            step.model = None
            step._abandoned = False
            step._chunks = []
            step._answer = None
            return
        step = Step(turn.turn, number, turn._waiting_at or event.ts, request_sha256=digest)
        step.attempt_steps.append(number)
        step.retries, turn._waiting, turn._waiting_at = turn._waiting, [], None
        turn.steps.append(step)

    def tool_result(self, turn: TurnSteps, step: Step, event: ToolResultEvent) -> None:
        data = event.data
        found = next(
            (
                t
                for s in reversed(turn.steps)
                for t in s.tools
                if t.tool_call_id == data.tool_call_id
            ),
            None,
        )
        if found is None:  # a result without its call: shown with the step it came in
            found = StepTool(data.tool_call_id, data.name, None)
            step.tools.append(found)
        text = result_text(data.content)
        found.result_bytes = len(text.encode("utf-8", "surrogatepass"))
        found.result, found.folded = fold_text(text, self.fold)
        found.is_error = data.is_error

    def end_turn(self, turn: TurnSteps, event: TurnEndEvent) -> None:
        turn.end_reason = event.data.reason
        turn.ended_at = event.ts
        if turn._waiting:  # retried, and no request was recorded after
            last = turn.steps[-1].step if turn.steps else 0
            step = Step(turn.turn, last + 1, turn._waiting_at, retries=turn._waiting)
            turn.steps.append(step)
            turn._waiting, turn._waiting_at = [], None
        if turn.steps and not turn.steps[-1]._ended:  # it ended in that step
            last_step = turn.steps[-1]
            last_step.ended_at = event.ts
            if event.data.reason != "completed":
                last_step.end_reason = event.data.reason


def _finish(step: Step) -> None:
    step.text = step._answer if step._answer else "".join(step._chunks)
    if step.end_reason is None and (step._ended or step.ended_at is not None):
        step.end_reason = TOOL_CALLS if step.tools else ANSWERED


def turn_steps(events: Iterable[Event], *, fold: int | None = None) -> list[TurnSteps]:
    """Return the session's turns with their steps, in log order.

    `fold`: tool results longer (in UTF-8 bytes) are cut at a character's boundary
    (`folded`, `result_bytes` the whole length); None or 0 keeps them whole.
    """
    folder = _Folder(fold)
    for event in events:
        folder.add(event)
    for turn in folder.turns:
        for step in turn.steps:
            _finish(step)
    return folder.turns


def select(
    turns: list[TurnSteps], turn: int | None = None, step: int | None = None
) -> list[TurnSteps]:
    """Return only turn `turn` (and in it only step `step`, found by any of its attempts).

    Unknown numbers select nothing: an empty list, or the turn without steps.
    """
    if turn is None:
        return turns
    chosen = [t for t in turns if t.turn == turn]
    if step is None:
        return chosen
    return [
        TurnSteps(
            t.turn,
            t.input,
            t.started_at,
            t.ended_at,
            t.end_reason,
            [s for s in t.steps if step in s.attempt_steps or s.step == step],
        )
        for t in chosen
    ]
