"""A user's time words (`session/search/when.py`) and filter words (`filters.search_filter`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from session.search.filters import KINDS, kind_types, normal_path, search_filter, tool_paths
from session.search.when import parse_when

PARIS = timezone(timedelta(hours=1))


def clock(moment: datetime):  # type: ignore[no-untyped-def]
    return lambda: moment


def test_yesterday_and_today_at_the_midnight_boundaries() -> None:
    midnight = clock(datetime(2026, 12, 6, 0, 0, 0, tzinfo=PARIS))
    assert parse_when("yesterday", now=midnight) == datetime(2026, 12, 5, tzinfo=PARIS)
    assert parse_when("yesterday", end=True, now=midnight) == datetime(2026, 12, 6, tzinfo=PARIS)
    assert parse_when("today", now=midnight) == datetime(2026, 12, 6, tzinfo=PARIS)
    assert parse_when("Today", end=True, now=midnight) == datetime(2026, 12, 7, tzinfo=PARIS)
    before = clock(datetime(2026, 12, 5, 23, 59, 59, 999999, tzinfo=PARIS))
    assert parse_when("yesterday", now=before) == datetime(2026, 12, 4, tzinfo=PARIS)
    assert parse_when("today", now=before) == datetime(2026, 12, 5, tzinfo=PARIS)
    # the clock's own zone decides the day: 23:30 UTC is already tomorrow in Paris
    late = clock(datetime(2026, 12, 5, 23, 30, tzinfo=UTC).astimezone(PARIS))
    assert parse_when("today", now=late) == datetime(2026, 12, 6, tzinfo=PARIS)


def test_durations_are_ago_from_the_clock() -> None:
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    assert parse_when("1d", now=clock(now)) == now - timedelta(days=1)
    assert parse_when("12h", now=clock(now)) == now - timedelta(hours=12)
    assert parse_when("30m", end=True, now=clock(now)) == now - timedelta(minutes=30)
    assert parse_when("2w", now=clock(now)) == now - timedelta(weeks=2)
    assert parse_when(" 45S ", now=clock(now)) == now - timedelta(seconds=45)


def test_iso_dates_and_times() -> None:
    now = clock(datetime(2026, 12, 6, 12, 0, tzinfo=PARIS))
    assert parse_when("2026-12-01", now=now) == datetime(2026, 12, 1, tzinfo=PARIS)
    assert parse_when("2026-12-01", end=True, now=now) == datetime(2026, 12, 2, tzinfo=PARIS)
    assert parse_when("2026-12-01T14:30", now=now) == datetime(2026, 12, 1, 14, 30, tzinfo=PARIS)
    assert parse_when("2026-12-01 14:30", end=True, now=now) == datetime(
        2026, 12, 1, 14, 30, tzinfo=PARIS
    )
    assert parse_when("2026-12-01T14:30:00Z", now=now) == datetime(2026, 12, 1, 14, 30, tzinfo=UTC)


@pytest.mark.parametrize("word", ["", "tomorrowish", "1y", "d1", "2026-13-01", "12:00pm", "-1d"])
def test_garbage_is_an_error_that_says_what_is_understood(word: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_when(word, now=clock(datetime(2026, 12, 6, tzinfo=UTC)))
    assert "date" in str(caught.value) or "time" in str(caught.value)


def test_filter_words_name_the_field_in_their_errors() -> None:
    now = clock(datetime(2026, 12, 6, 12, 0, tzinfo=UTC))
    with pytest.raises(ValueError, match=r"^since: 'soon' is not a time"):
        search_filter(since="soon", now=now)
    with pytest.raises(ValueError, match=r"^until: "):
        search_filter(until="later", now=now)
    with pytest.raises(ValueError, match=r"^kind: unknown kind 'tools': one of user, assistant"):
        search_filter(kind="tools", now=now)
    made = search_filter(since="yesterday", until="1h", kind="Tool call,drift", tool="write_file")
    assert made.types == ("tool/call", "workspace/drift") and made.tool == "write_file"
    assert made.since is not None and made.until is not None and made.since < made.until
    assert search_filter(path="./src/app/").path == "src/app"
    assert search_filter().empty and not made.empty


def test_every_kind_maps_to_indexed_event_types() -> None:
    assert list(KINDS) == [
        "user",
        "assistant",
        "tool-call",
        "tool-result",
        "drift",
        "decision",
        "summary",
    ]
    assert kind_types("assistant") == ("assistant/message", "assistant/chunk")
    assert kind_types(["user", "user"]) == ("turn/start",)


def test_paths_named_by_tool_arguments() -> None:
    args = {"path": "./a.txt", "content": "x.txt", "paths": ["b/", 3, "c"], "directory": "."}
    assert tool_paths(args) == ["./a.txt", "b/", "c", "."]
    assert tool_paths("not an object") == [] and tool_paths(None) == []
    assert normal_path(" ././dir//") == "dir"
