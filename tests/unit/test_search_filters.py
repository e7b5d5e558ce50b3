"""Search hits carry their step and time; filters narrow them (session/search/filters.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from session.local.manager import SessionManager
from session.search import SearchError, SearchIndex
from session.search.schema import SCHEMA_VERSION
from tests.search_timeline import (
    CASES,
    DAY_ONE,
    DAY_TWO,
    case_filter,
    hits_of,
    injected_clock,
    write_timeline,
)


@pytest.fixture
def timeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SessionManager, str]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    manager = SessionManager(workspace, home=tmp_path / "home")
    clock = injected_clock(monkeypatch)
    writer = manager.create_session()
    write_timeline(writer, clock)
    writer.close()
    return manager, writer.session_id


def test_hits_carry_turn_step_and_the_events_time(timeline: tuple[SessionManager, str]) -> None:
    manager, session_id = timeline
    events = {e.seq: e for e in manager.read_events(session_id).events}
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
        hits = index.search("config")
    assert len(hits) == 10
    for hit in hits:
        event = events[hit.seq]
        assert (hit.turn, hit.step, hit.ts) == (event.turn, event.step, event.ts)
    by_type = {(h.type, h.turn): h for h in hits}
    assert by_type[("tool/call", 1)].step == 1 and by_type[("tool/call", 1)].ts > DAY_ONE
    assert DAY_ONE < by_type[("tool/call", 1)].ts < DAY_TWO < by_type[("tool/call", 2)].ts


@pytest.mark.parametrize(("words", "expected"), CASES, ids=[str(c[0]) for c in CASES])
def test_each_filter_narrows_the_hits(
    timeline: tuple[SessionManager, str], words: dict[str, str], expected: set[object]
) -> None:
    manager, session_id = timeline
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
        assert hits_of(index.search("config", filters=case_filter(words))) == expected
        one = index.search("config", session_id, filters=case_filter(words))
        assert hits_of(one) == expected
        # one and two characters take another path (the newest rows, then the trigrams)
        assert hits_of(index.search("c", filters=case_filter(words))) >= expected


def test_a_streamed_answer_keeps_the_step_of_its_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    manager = SessionManager(workspace, home=tmp_path / "home")
    clock = injected_clock(monkeypatch)
    writer = manager.create_session()
    writer.append("turn/start", {"input": "go"}, turn=1)
    writer.append("step/start", {"messages": []}, turn=1, step=3)
    chunk = writer.append("assistant/chunk", {"delta": "half an answer "}, turn=1, step=3)
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)  # still streaming: a provisional row
        (hit,) = index.search("half an")
        assert (hit.type, hit.step, hit.ts) == ("assistant/chunk", 3, chunk.ts)
        writer.append("assistant/chunk", {"delta": "cut off "}, turn=1, step=3)
        clock.now += clock.now - DAY_ONE
        end = writer.append("turn/end", {"reason": "aborted"}, turn=1)
        index.sync(manager.layout)
        (hit,) = index.search("half an answer cut")
        assert (hit.seq, hit.step, hit.ts) == (end.seq, 3, end.ts)
    writer.close()


def test_an_index_of_version_3_is_rebuilt_with_steps_and_times(
    timeline: tuple[SessionManager, str],
) -> None:
    manager, _session_id = timeline
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
    import sqlite3

    conn = sqlite3.connect(manager.layout.project_dir / "index.sqlite")
    conn.execute("UPDATE event_rows SET step = NULL, ts = NULL")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    assert SCHEMA_VERSION == 4
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
        hits = index.search("config")
    assert len(hits) == 10 and all(h.ts is not None for h in hits)
    assert {h.step for h in hits} == {None, 1, 2}


def test_an_older_index_answering_meanwhile_refuses_filters(
    timeline: tuple[SessionManager, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, _session_id = timeline
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
        monkeypatch.setattr(index, "_current", lambda conn: 2)
        with pytest.raises(SearchError, match="filters work once"):
            index.search("config", filters=case_filter({"kind": "user"}))
