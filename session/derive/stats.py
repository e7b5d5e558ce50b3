"""Telemetry folded from the logs: turns, steps, tools, tokens, time on the model, retries.

What the log says is counted once, nothing is estimated here and nothing leaves the machine:

- a turn is its `turn/start`: rewound turns, failed ones and turns still open count;
- a step is a model call whose answer was kept: a `step/start` without a `step/retry` of
  its step. An abandoned attempt is a retry of its kind (`step/retry` `kind`), not a step;
- tokens are the `step/end` usages; `estimated` when one of them was an estimate;
- model time runs from a step's `step/start` to its answer (`assistant/message`: the wait
  on the model, not the tools that run after it), else its `step/end`; an abandoned
  attempt to its `step/retry`; a step with none of these runs to its
  turn's end when that end was written as it happened (aborted, error), and counts nothing
  while the turn is open or when its end was written after a crash (`synthesized`);
- a turn belongs to the UTC day it started and a step to the model its `request/header`
  names (`UNKNOWN_MODEL` if none); a turn counts once under each model it asked (a retry
  before its first request goes to that request's model);
- a fork's copy of its parent's events (seqs up to `fork_boundary`) is the parent's: it
  counts in the fork only when the parent is no longer in the store.

`since`/`until` keep the turns started in `[since, until)`. Parsing a user's time words is
the edges' (`session/search/when.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from ..errors import SessionNotFoundError
from ..events import Event

UNKNOWN_MODEL = "(unknown)"
F = TypeVar("F", bound="Figures")
STATS_TYPES = frozenset(
    {
        "session/start",
        "turn/start",
        "turn/end",
        "step/start",
        "step/retry",
        "step/end",
        "assistant/message",
        "request/header",
        "tool/call",
        "tool/result",
    }
)


@dataclass
class Figures:
    """Sums over a set of turns (the fields of `StatsFigures` on the wire)."""

    turns: int = 0
    steps: int = 0
    tool_calls: Counter[str] = field(default_factory=Counter)
    tool_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False
    model_seconds: float = 0.0
    retries: Counter[str] = field(default_factory=Counter)

    def add(self, other: Figures) -> None:
        """Add `other`'s figures to these."""
        self.turns += other.turns
        self.steps += other.steps
        self.tool_calls.update(other.tool_calls)
        self.tool_errors += other.tool_errors
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.estimated = self.estimated or other.estimated
        self.model_seconds += other.model_seconds
        self.retries.update(other.retries)


@dataclass
class Group(Figures):
    """The figures of one session, day or model (`StatsGroup`)."""

    key: str = ""
    latest: datetime | None = None  # its newest turn's start (sessions are listed by it)


@dataclass
class Stats:
    """Totals, then by session (newest first), by day (newest first), by model (busiest)."""

    totals: Figures
    by_session: list[Group]
    by_day: list[Group]
    by_model: list[Group]


@dataclass
class TurnFigures:
    """One turn's figures, in total and under each model it asked."""

    turn: int
    started_at: datetime
    total: Figures
    by_model: dict[str, Figures]


@dataclass
class _Step:
    started: datetime | None = None
    ended: datetime | None = None  # its step/end, or the step/retry that abandoned it
    answered: datetime | None = None  # its first assistant/message
    model: str | None = None
    retry: str | None = None  # the kind, when abandoned
    usage: dict[str, Any] | None = None
    tool_calls: Counter[str] = field(default_factory=Counter)
    tool_errors: int = 0


@dataclass
class _Turn:
    number: int
    started_at: datetime
    steps: dict[int, _Step] = field(default_factory=dict)
    early_retries: list[str] = field(default_factory=list)  # before its first request

    def step(self, number: int | None) -> _Step:
        return self.steps.setdefault(number or 0, _Step())

    def figures(self, ended: datetime | None) -> TurnFigures:
        """Return the turn's figures; `ended`: its end as written when it happened, if so."""
        models: dict[str, Figures] = {}
        first = min((n for n in self.steps if n), default=None)
        first_model = self.steps[first].model if first is not None else None

        def under(model: str | None) -> Figures:
            return models.setdefault(model or UNKNOWN_MODEL, Figures(turns=1))

        for kind in self.early_retries:
            under(first_model).retries[kind] += 1
        for step in self.steps.values():
            if step.started is None and step.retry is None and not step.tool_calls:
                continue  # nothing of this step was read (a header or an end alone)
            figures = under(step.model)
            if step.retry is not None:
                figures.retries[step.retry] += 1
            elif step.started is not None:
                figures.steps += 1
            usage = step.usage or {}
            figures.input_tokens += _count(usage.get("input_tokens"))
            figures.output_tokens += _count(usage.get("output_tokens"))
            figures.estimated = figures.estimated or bool(usage.get("estimated"))
            figures.tool_calls.update(step.tool_calls)
            figures.tool_errors += step.tool_errors
            until = (step.answered if step.retry is None else None) or step.ended or ended
            if step.started is not None and until is not None and until > step.started:
                figures.model_seconds += (until - step.started).total_seconds()
        total = Figures()
        for figures in models.values():
            total.add(figures)
        total.turns = 1
        return TurnFigures(self.number, self.started_at, total, models)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def fold_turns(
    events: Iterable[Event], *, parent_counted: Callable[[str], bool] = lambda _: False
) -> Iterable[TurnFigures]:
    """Yield the figures of each turn of one session's events (of `STATS_TYPES`), in order.

    `parent_counted(id)`: the fork's parent is in the store, so its copied prefix is skipped.
    """
    skip_through = -1
    open_turns: dict[int, _Turn] = {}
    for event in events:
        data = event.data
        if event.type == "session/start":
            parent = getattr(data, "parent_session_id", None)
            boundary = getattr(data, "fork_boundary", None)
            if parent and boundary is not None and parent_counted(parent):
                skip_through = boundary
            continue
        if event.seq <= skip_through or event.turn is None:
            continue
        if event.type == "turn/start":
            if event.turn in open_turns:  # a turn started twice: the first never ended
                yield open_turns.pop(event.turn).figures(None)
            open_turns[event.turn] = _Turn(event.turn, event.ts)
            continue
        turn = open_turns.get(event.turn)
        if turn is None:
            continue  # its start is not in these events
        if event.type == "turn/end":
            del open_turns[event.turn]
            yield turn.figures(None if getattr(data, "synthesized", False) else event.ts)
        elif event.type == "step/retry":
            if event.step is None:
                turn.early_retries.append(str(getattr(data, "kind", "")))
            else:
                step = turn.step(event.step)
                step.retry = str(getattr(data, "kind", ""))
                step.ended = step.ended or event.ts
        elif event.step is None:
            continue
        elif event.type == "step/start":
            turn.step(event.step).started = event.ts
        elif event.type == "request/header":
            turn.step(event.step).model = getattr(data, "model", None)
        elif event.type == "assistant/message":
            step = turn.step(event.step)
            step.answered = step.answered or event.ts
        elif event.type == "step/end":
            step = turn.step(event.step)
            step.ended, step.usage = event.ts, getattr(data, "usage", None)
        elif event.type == "tool/call":
            turn.step(event.step).tool_calls[str(getattr(data, "name", ""))] += 1
        elif event.type == "tool/result" and getattr(data, "is_error", False):
            turn.step(event.step).tool_errors += 1
    for turn in open_turns.values():
        yield turn.figures(None)


class StatsFold:
    """Sums the turns of many sessions into totals and groups."""

    def __init__(self, since: datetime | None = None, until: datetime | None = None) -> None:
        self.since, self.until = since, until
        self.totals = Figures()
        self._sessions: dict[str, Group] = {}
        self._days: dict[str, Group] = {}
        self._models: dict[str, Group] = {}

    def add_session(
        self,
        session_id: str,
        events: Iterable[Event],
        parent_counted: Callable[[str], bool] = lambda _: False,
    ) -> None:
        """Fold one session's events (of `STATS_TYPES`) in."""
        for turn in fold_turns(events, parent_counted=parent_counted):
            if self.since is not None and turn.started_at < self.since:
                continue
            if self.until is not None and turn.started_at >= self.until:
                continue
            self.totals.add(turn.total)
            day = turn.started_at.astimezone(UTC).date().isoformat()
            for groups, key, figures in (
                (self._sessions, session_id, turn.total),
                (self._days, day, turn.total),
                *((self._models, model, f) for model, f in turn.by_model.items()),
            ):
                group = groups.setdefault(key, Group(key=key))
                group.add(figures)
                if group.latest is None or turn.started_at > group.latest:
                    group.latest = turn.started_at

    def result(self) -> Stats:
        """Return the sums, in the order `Stats` lists them (seconds to the millisecond)."""
        newest = sorted(self._sessions.values(), key=lambda g: g.key)
        newest.sort(key=lambda g: g.latest or datetime.min.replace(tzinfo=UTC), reverse=True)
        return Stats(
            totals=_tidy(self.totals),
            by_session=[_tidy(g) for g in newest],
            by_day=[_tidy(g) for g in sorted(self._days.values(), key=lambda g: g.key)[::-1]],
            by_model=[
                _tidy(g)
                for g in sorted(self._models.values(), key=lambda g: (-g.steps, -g.turns, g.key))
            ],
        )


def _tidy(figures: F) -> F:
    """Return `figures` with its seconds rounded and its counts in name order."""
    figures.model_seconds = round(figures.model_seconds, 3)
    figures.tool_calls = Counter(dict(sorted(figures.tool_calls.items())))
    figures.retries = Counter(dict(sorted(figures.retries.items())))
    return figures


def fold_store(
    fold: StatsFold,
    store: Any,
    session_ids: Iterable[str],
    known: Container[str],
) -> None:
    """Fold the sessions `session_ids` of `store` (a `SessionStore`), streaming each log.

    `known`: every session id of the store, so a fork whose parent is there skips its copy.
    A session gone meanwhile (or without a log yet) adds nothing.
    """
    for session_id in session_ids:
        try:
            events = store.iter_events(session_id, types=STATS_TYPES)
            fold.add_session(session_id, events, known.__contains__)
        except SessionNotFoundError:
            continue
