"""Which trigrams a search looks up: rare ones, from the counts; every other one without."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import session.search.grams as grams
from session.local.manager import SessionManager
from session.search import SearchIndex
from session.search.grams import choose_grams, count_grams, every_other, note_rows

from .conftest import make_lifecycle, run_turn


def counts(rows: int, docs: dict[str, int]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute(grams.GRAM_DOCS_TABLE)
    conn.executemany("INSERT INTO gram_docs VALUES (?, ?)", [("", rows), *docs.items()])
    return conn


def looked_up(expression: str) -> list[str]:
    return [term.strip('"') for term in expression.split(" AND ")]


def test_frequent_trigrams_are_left_out_and_one_per_word_is_enough() -> None:
    conn = counts(100_000, {"the": 90_000, "he ": 88_000, "e x": 3_000})
    chosen = looked_up(choose_grams(conn, "the xyzzy"))
    assert "the" not in chosen and "he " not in chosen
    # "xyzzy" is rare (not counted: held by fewer than 1/64 of the rows); one of its
    # trigrams stands for the word, the others are found with it
    assert len({"xyz", "yzz", "zzy"} & set(chosen)) == 1
    assert " xy" in chosen  # across words: it cuts the candidates further


def test_all_frequent_keeps_the_rarest_and_what_cuts() -> None:
    conn = counts(1_000, {"abc": 900, "bc ": 950, "c d": 990, " de": 999, "def": 500})
    chosen = looked_up(choose_grams(conn, "abc def"))
    assert chosen[0] == "def"
    assert chosen  # never nothing: every query looks up at least its rarest trigram


def test_a_sentence_without_spaces_is_not_one_word() -> None:
    conn = counts(100_000, {})
    chosen = looked_up(choose_grams(conn, "エージェントの設計"))
    assert len(chosen) > 1  # trigrams of a Japanese sentence are found independently


def test_without_counts_every_other_trigram() -> None:
    conn = counts(0, {})
    assert choose_grams(conn, "checkpoint of") == every_other("checkpoint of")
    bare = sqlite3.connect(":memory:")  # an index from before the counts, opened read-only
    assert choose_grams(bare, "checkpoint of") == every_other("checkpoint of")


def test_a_query_with_too_many_trigrams_looks_up_every_other() -> None:
    conn = counts(100_000, {})
    query = "".join(chr(0x4E00 + i) for i in range(grams.MAX_LOOKUP + 10))
    assert choose_grams(conn, query) == every_other(query)


def index_of(tmp_path: Path, turns: int) -> tuple[SessionManager, SearchIndex]:
    manager = SessionManager(tmp_path / "ws", home=tmp_path / "home")
    (tmp_path / "ws").mkdir(exist_ok=True)
    lc = make_lifecycle(manager)
    for n in range(turns):
        run_turn(lc, f"question {n} about the templates", f"the answer {n} is in the templates")
    lc.close()
    return manager, SearchIndex.for_project(manager.layout)


def rows_of(index: SearchIndex, sql: str) -> list[tuple[Any, ...]]:
    """Read the index file directly, on a connection of its own."""
    conn = sqlite3.connect(index.path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def gram_rows(index: SearchIndex) -> dict[str, int]:
    return dict(rows_of(index, "SELECT term, docs FROM gram_docs"))


def test_counted_at_the_first_sync_and_again_once_the_rows_doubled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grams, "MIN_ROWS", 8)
    monkeypatch.setattr(grams, "FREQUENT_SHARE", 2)
    manager, index = index_of(tmp_path, 6)
    with index:
        index.sync(manager.layout)
        first = gram_rows(index)
        rows = first[""]
        assert rows >= 8 and first["tem"] == rows  # every row holds "templates"
        lc = make_lifecycle(manager)
        lc.start_fresh()
        run_turn(lc, "one more", "and one more")
        lc.close()
        index.sync(manager.layout)
        assert gram_rows(index)[""] == rows  # fewer new rows than counted: not counted again
        for n in range(rows):
            run_turn(lc := make_lifecycle(manager), f"more {n}", f"more {n}")
            lc.close()
        index.sync(manager.layout)
        assert gram_rows(index)[""] >= 2 * rows  # doubled: counted again
        assert index.search("the templates")  # and searched with them


def test_note_rows_counts_a_never_counted_index(tmp_path: Path) -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE event_rows (id INTEGER PRIMARY KEY)")
    conn.execute(grams.GRAM_DOCS_TABLE)
    note_rows(conn, 0)  # below MIN_ROWS: only the running total is kept
    assert dict(conn.execute("SELECT term, docs FROM gram_docs")) == {"\x00": 0}
    note_rows(conn, 10)
    assert dict(conn.execute("SELECT term, docs FROM gram_docs")) == {"\x00": 10}
    count_grams(conn)
    assert dict(conn.execute("SELECT term, docs FROM gram_docs")) == {"\x00": 0}


def test_an_index_from_before_the_counts_gets_them_at_its_next_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grams, "MIN_ROWS", 8)
    manager, index = index_of(tmp_path, 6)
    with index:
        index.sync(manager.layout)
        before = index.search("the templates")
    conn = sqlite3.connect(index.path)
    conn.execute("DROP TABLE gram_docs")  # as an index of the same version made before them
    conn.commit()
    conn.close()
    with SearchIndex.for_project(manager.layout) as again:
        assert again.search("the templates") == before  # answers meanwhile (every other one)
        again.sync(manager.layout)  # nothing new in the logs: counted all the same
        assert gram_rows(again)[""] >= 8
        assert again.search("the templates") == before


def segments(index: SearchIndex) -> int:
    return int(rows_of(index, "SELECT count(DISTINCT segid) FROM event_grams_idx")[0][0])


def test_the_sync_that_counts_again_merges_the_trigram_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Syncs of one turn each leave a segment each (FTS5 merges them only now and then)."""
    monkeypatch.setattr(grams, "MIN_ROWS", 8)
    (tmp_path / "ws").mkdir()
    manager = SessionManager(tmp_path / "ws", home=tmp_path / "home")
    lc = make_lifecycle(manager)
    seen: list[tuple[int | None, int]] = []
    with SearchIndex.for_project(manager.layout) as index:
        for n in range(40):
            run_turn(lc, f"question {n} about the templates", f"answer {n}: the templates")
            index.sync_session(manager.layout, lc.session_id)
            seen.append((gram_rows(index).get(""), segments(index)))
        recounts = [i for i in range(1, len(seen)) if seen[i][0] != seen[i - 1][0]]
        assert len(recounts) >= 2, seen  # counted again each time the rows doubled
        assert all(seen[i][1] == 1 for i in recounts), seen  # and merged into one segment
        assert max(count for _, count in seen) > 2, seen  # which the syncs between did not
        assert len(index.search("question", limit=100)) == 40
    lc.close()
