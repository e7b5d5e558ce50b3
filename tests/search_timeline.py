"""A session over two days for the search filters, the same for the local index and PostgreSQL.

Every event's time comes from an injected clock (a second apart), so `since`/`until` can
cut between the days; `CASES` are the filters and the hits each must give for "config".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import session.log.writer
import session.pg.log
from session.search.filters import search_filter
from session.store.session import Session

DAY_ONE = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
DAY_TWO = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
NOW = datetime(2026, 12, 5, 18, 0, tzinfo=UTC)


class Clock:
    """Stamps each event a second after the one before; `at` moves it."""

    def __init__(self) -> None:
        self.now = DAY_ONE

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def injected_clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Stamp the events both stores write with a `Clock`."""
    clock = Clock()
    monkeypatch.setattr(session.log.writer, "utcnow", clock)
    monkeypatch.setattr(session.pg.log, "utcnow", clock)
    return clock


def message(text: str) -> dict[str, Any]:
    return {"message": {"kind": "response", "parts": [{"part_kind": "text", "content": text}]}}


def write_timeline(writer: Session, clock: Clock) -> None:
    """Day one: turn 1 writes the config in step 1; day two: drift, then turn 2 reads it."""
    clock.now = DAY_ONE
    writer.append("turn/start", {"input": "make the config file"}, turn=1)
    writer.append("step/start", {"messages": []}, turn=1, step=1)
    writer.append("assistant/message", message("I will write the config"), turn=1, step=1)
    call = {"path": "conf/config.yaml", "content": "a: 1"}
    writer.append(
        "tool/call", {"tool_call_id": "c1", "name": "write_file", "args": call}, turn=1, step=1
    )
    result = {"tool_call_id": "c1", "name": "write_file", "content": "wrote config.yaml"}
    writer.append("tool/result", result, turn=1, step=1)
    writer.append("step/end", {"usage": {}}, turn=1, step=1)
    writer.append("step/start", {"messages": []}, turn=1, step=2)
    writer.append("assistant/message", message("the config is written"), turn=1, step=2)
    writer.append("step/end", {"usage": {}}, turn=1, step=2)
    writer.append("turn/end", {"reason": "completed"}, turn=1)
    clock.now = DAY_TWO
    drift = {"source": "resume", "modified": ["conf/config.yaml"], "unchanged": 0}
    writer.append("workspace/drift", drift)
    writer.append("turn/start", {"input": "the config broke"}, turn=2)
    writer.append("step/start", {"messages": []}, turn=2, step=1)
    call = {"path": "./conf/config.yaml"}
    writer.append(
        "tool/call", {"tool_call_id": "c2", "name": "read_file", "args": call}, turn=2, step=1
    )
    result = {"tool_call_id": "c2", "name": "read_file", "content": "config: broken"}
    writer.append("tool/result", result, turn=2, step=1)
    writer.append("session/decision", {"text": "keep the config short"}, turn=2)
    writer.append("step/end", {"usage": {}}, turn=2, step=1)
    writer.append("turn/end", {"reason": "completed"}, turn=2)


Hit = tuple[str, int | None, int | None]  # type, turn, step

ALL: set[Hit] = {
    ("turn/start", 1, None),
    ("assistant/message", 1, 1),
    ("tool/call", 1, 1),
    ("tool/result", 1, 1),
    ("assistant/message", 1, 2),
    ("workspace/drift", None, None),
    ("turn/start", 2, None),
    ("tool/call", 2, 1),
    ("tool/result", 2, 1),
    ("session/decision", 2, None),
}
DAY_TWO_HITS = {h for h in ALL if h[1] == 2 or h[0] == "workspace/drift"}
PATH_HITS = {("tool/call", 1, 1), ("tool/call", 2, 1), ("workspace/drift", None, None)}
CASES: list[tuple[dict[str, str], set[Hit]]] = [
    ({}, ALL),
    ({"since": "yesterday"}, ALL),  # NOW is day two: yesterday is day one
    ({"since": "today"}, DAY_TWO_HITS),
    ({"until": "yesterday"}, ALL - DAY_TWO_HITS),
    ({"since": "2026-12-05T08:59"}, DAY_TWO_HITS),
    ({"until": "2026-12-04"}, ALL - DAY_TWO_HITS),
    ({"since": "12h"}, DAY_TWO_HITS),
    ({"since": "1d", "until": "12h"}, set()),  # 2026-12-04T18:00 .. 2026-12-05T06:00
    ({"kind": "tool-call"}, {("tool/call", 1, 1), ("tool/call", 2, 1)}),
    ({"kind": "user"}, {("turn/start", 1, None), ("turn/start", 2, None)}),
    ({"kind": "assistant"}, {("assistant/message", 1, 1), ("assistant/message", 1, 2)}),
    ({"kind": "drift,decision"}, {("workspace/drift", None, None), ("session/decision", 2, None)}),
    ({"kind": "tool-result", "since": "today"}, {("tool/result", 2, 1)}),
    ({"tool": "write_file"}, {("tool/call", 1, 1), ("tool/result", 1, 1)}),
    (
        {"path": "conf/config.yaml"},
        {("tool/call", 1, 1), ("tool/call", 2, 1), ("workspace/drift", None, None)},
    ),
    (
        {"path": "./conf/"},
        {("tool/call", 1, 1), ("tool/call", 2, 1), ("workspace/drift", None, None)},
    ),
    ({"path": "conf/config"}, set()),  # not the file, nor a directory above it
    ({"path": "conf/config.yaml", "tool": "read_file"}, {("tool/call", 2, 1)}),
]


def case_filter(words: dict[str, str]) -> Any:
    """Return the filter of a case's words, at `NOW`."""
    now: Callable[[], datetime] = lambda: NOW  # noqa: E731
    return search_filter(now=now, **words)


def hits_of(hits: list[Any]) -> set[Hit]:
    return {(h.type, h.turn, h.step) for h in hits}
