"""Search is literal: every event whose text contains the query is found, and only those.

A corpus of Japanese, Chinese, paths, code and punctuation; every substring of 1-12
characters of each event's text (sampled) finds that event, by each way a query can run
(trigrams, the short-query path, the scan without the trigram tokenizer), and the hits are
exactly the events whose folded text contains the folded query. Then normalization,
ranking, snippets, the migration from the word index, and SQLite without trigrams.
"""

from __future__ import annotations

import errno
import logging
import os
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import session.search.grams as grams_mod
import session.search.migration as migration_mod
import session.search.query as query_mod
import session.search.schema as schema_mod
from session.local.manager import SessionManager
from session.search import INDEX_FILE, SearchError, SearchHit, SearchIndex
from session.search.grams import every_other
from session.search.rank import snippet
from session.search.text import clean, fold
from tests.search_corpus import CORPUS

from .conftest import make_lifecycle, run_turn


def build_corpus(tmp_path: Path) -> tuple[SessionManager, dict[tuple[str, int], str]]:
    """Two sessions holding the corpus, indexed; return the manager and each row's text."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    manager = SessionManager(workspace, home=tmp_path / "home")
    lc = make_lifecycle(manager)
    for number, (prompt, reply) in enumerate(CORPUS):
        if number == len(CORPUS) // 2:
            lc.start_fresh()
        turn = run_turn(lc, prompt, reply, end=None)
        turn.tool_call(f"c{number}", "read_file", {"path": f"docs/{number}/設計.md"})
        turn.tool_result(f"c{number}", "read_file", f"contents #{number}: {reply[::-1]}")
        turn.end("completed")
    lc.close()
    texts: dict[tuple[str, int], str] = {}
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
        conn = sqlite3.connect(index.path)
        numbers = dict(conn.execute("SELECT num, session_id FROM indexed_logs"))
        for rowid, text in conn.execute("SELECT id, text FROM event_rows"):
            texts[(numbers[rowid >> 40], (rowid >> 2) & ((1 << 38) - 1))] = text
        conn.close()
    assert len(texts) == 4 * len(CORPUS)
    assert count_grams_of(index.path, min_rows=1, share=8) > 10  # counted, on this small corpus
    return manager, texts


def count_grams_of(path: Path, *, min_rows: int, share: int) -> int:
    """Count the index's frequent trigrams with other thresholds; return how many it holds."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(grams_mod, "MIN_ROWS", min_rows)
            patch.setattr(grams_mod, "FREQUENT_SHARE", share)
            conn.execute("BEGIN")
            grams_mod.count_grams(conn)
            conn.execute("COMMIT")
        return int(
            conn.execute("SELECT count(*) FROM gram_docs WHERE term > ?", ("\x00",)).fetchone()[0]
        )
    finally:
        conn.close()


@pytest.fixture
def store(tmp_path: Path) -> tuple[SessionManager, dict[tuple[str, int], str]]:
    return build_corpus(tmp_path)


def expected(texts: dict[tuple[str, int], str], query: str) -> set[tuple[str, int]]:
    folded = fold(clean(query))
    return {key for key, text in texts.items() if folded in fold(text)}


def found(index: SearchIndex, query: str, session_id: str | None = None) -> set[tuple[str, int]]:
    return {(h.session_id, h.seq) for h in index.search(query, session_id, limit=10_000)}


PLANS = [
    "trigrams chosen by their counts",
    "every other trigram",
    "short queries by trigram terms",
    "short queries by scan",
    "no trigrams",
]


def use_plan(plan: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if plan == "every other trigram":  # as without counts
        monkeypatch.setattr(query_mod, "choose_grams", lambda _conn, query: every_other(query))
    elif plan == "short queries by trigram terms":
        monkeypatch.setattr(query_mod, "SCAN_ROWS", 1)  # straight to the terms
    elif plan == "short queries by scan":
        monkeypatch.setattr(query_mod, "SCAN_ROWS", 1)
        monkeypatch.setattr(query_mod, "MAX_TERMS", 0)  # too many terms: read every row
    elif plan == "no trigrams":
        monkeypatch.setattr(schema_mod, "trigram_available", lambda: False)


@pytest.mark.parametrize("plan", PLANS)
def test_every_substring_finds_its_event_and_only_matches_are_hits(
    store: tuple[SessionManager, dict[tuple[str, int], str]],
    plan: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manager, texts = store
    use_plan(plan, monkeypatch)
    rng = random.Random(17)
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
        assert index.grams == (plan != "no trigrams")
        checked = 0
        for key, text in sorted(texts.items()):
            for length in range(1, 13):
                for _ in range(2):
                    if len(text) < length:
                        continue
                    start = rng.randrange(len(text) - length + 1)
                    query = text[start : start + length]
                    if not query.strip():
                        continue
                    hits = found(index, query)
                    assert key in hits, (query, text)
                    assert hits == expected(texts, query), query
                    checked += 1
        assert checked > 500
        session_id = sorted(texts)[0][0]
        for query in ("の", "設計", "config.ya", "ΣΥΦ", "🚀", "x **"):
            want = {k for k in expected(texts, query) if k[0] == session_id}
            assert found(index, query, session_id) == want, query


_STORES: dict[str, tuple[SessionManager, dict[tuple[str, int], str]]] = {}


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_plan_gives_the_same_hits_and_scores(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Whichever way a query runs, the same hits in the same order with the same scores."""
    if "corpus" not in _STORES:  # made once: hypothesis runs the body many times
        _STORES["corpus"] = build_corpus(tmp_path_factory.mktemp("corpus"))
    manager, texts = _STORES["corpus"]
    alphabet = sorted(set("".join(texts.values())))
    query = data.draw(
        st.one_of(
            st.text(st.sampled_from(alphabet), min_size=1, max_size=4),
            st.sampled_from(sorted(texts.values())).flatmap(
                lambda t: st.integers(0, len(t) - 1).map(lambda i: t[i : i + 1 + i % 5])
            ),
        )
    )
    limit = data.draw(st.sampled_from([1, 5, 50]))
    window = data.draw(st.sampled_from([3, 300]))
    answers = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(query_mod, "WINDOW", window)
        for plan in PLANS:
            with pytest.MonkeyPatch.context() as inner:
                if plan != "no trigrams":
                    use_plan(plan, inner)
                with SearchIndex.for_project(manager.layout) as index:
                    assert not index.migrating  # opens it
                    index.grams = plan != "no trigrams"  # scan, keeping the file as it is
                    answers.append(index.search(query, limit=limit))
    assert all(answer == answers[0] for answer in answers[1:]), query


def test_folding_nfkc_and_case(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path / "ws", home=tmp_path / "home")
    (tmp_path / "ws").mkdir()
    lc = make_lifecycle(manager)
    run_turn(lc, "ＡＢＣ wide, ﬁle, Straße, e\u0301cole, ΟΔΥΣΣΕΥΣ", "ok")
    lc.close()
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
        for query in [
            "abc",
            "ABC",
            "file",
            "STRASSE",
            "strasse",
            "école",
            "\u00e9cole",
            "οδυσσευς",
        ]:
            hits = index.search(query)
            assert [h.type for h in hits] == ["turn/start"], query
        assert index.search("[abc]") == []
        shown = index.search("abc")[0].snippet
        assert "[ＡＢＣ]" in shown and "ﬁle" in shown  # shown as written
        assert "[ﬁ]le" in index.search("fi")[0].snippet
        assert "Stra[ß]e" in index.search("SS")[0].snippet


def test_whole_words_rank_first_then_occurrences_and_length(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path / "ws", home=tmp_path / "home")
    (tmp_path / "ws").mkdir()
    lc = make_lifecycle(manager)
    texts = [
        "the login page has a catalog of logs and blogs and logins",
        "open the log file",
        "log log log, the log again and then some more words to make it long",
        "open the log file",  # the same text later: newer first
        "ログを見る",  # no spaces: never inside a word
    ]
    for text in texts:
        run_turn(lc, text, "-")
    sid = lc.session_id
    lc.close()
    seqs = [e.seq for e in manager.read_events(sid).events if e.type == "turn/start"]
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
        hits = index.search("log")
        assert [h.seq for h in hits] == [seqs[2], seqs[3], seqs[1], seqs[0]]
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
        assert [h.seq for h in index.search("ログ")] == [seqs[4]]
        assert {h.seq for h in index.search("og")} == set(seqs[:4])  # all inside words


def test_a_query_with_many_matches_ranks_its_newest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(query_mod, "WINDOW", 3)
    manager = SessionManager(tmp_path / "ws", home=tmp_path / "home")
    (tmp_path / "ws").mkdir()
    lc = make_lifecycle(manager)
    run_turn(lc, "zyx zyx zyx", "-")  # the best match, but the oldest
    for number in range(6):
        run_turn(lc, f"a longer text that has zyx once, number {number}", "-")
    sid = lc.session_id
    lc.close()
    seqs = [e.seq for e in manager.read_events(sid).events if e.type == "turn/start"]
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
        assert [h.seq for h in index.search("zyx", limit=2)] == [seqs[-1], seqs[-2]]
        assert index.search("zyx", limit=10)[0].seq == seqs[0]  # limit > window: all ranked


def test_snippets_mark_matches_in_the_text_as_written() -> None:
    text = "Alpha " * 20 + "the Config.YAML file, and config.yaml again " + "omega " * 20
    shown = snippet(text, fold(text), "config.ya")
    assert shown.startswith("…") and shown.endswith("…")
    assert "[Config.YA]ML file, and [config.ya]ml" in shown
    assert len(shown) < 140
    assert snippet("short Text", "short text", "text") == "short [Text]"
    cjk = "これは長い文章です。" * 10 + "エージェントの設計を保存した" + "続きの文章。" * 10
    shown = snippet(cjk, fold(cjk), "エージェント")
    assert "[エージェント]の設計を保存した" in shown and shown.startswith("…")
    decomposed = "Cafe\u0301 au lait"  # folding composes the accent: the cluster is marked
    assert snippet(decomposed, fold(decomposed), "café") == "[Cafe\u0301] au lait"
    hangul = "\u1112\u1161\u11ab Text"  # conjoining jamo compose into 한
    assert snippet(hangul, fold(hangul), "한") == "[\u1112\u1161\u11ab] Text"


def write_v2_index(manager: SessionManager, rows: list[tuple[str, int, int, str, str]]) -> None:
    """Write an index as version 2 did (unicode61 words), with `rows` in it."""
    manager.layout.ensure_dirs()
    conn = sqlite3.connect(manager.layout.project_dir / INDEX_FILE)
    conn.executescript(
        """
        CREATE TABLE sessions (num INTEGER PRIMARY KEY, session_id TEXT NOT NULL UNIQUE,
            log_offset INTEGER NOT NULL DEFAULT 0, last_seq INTEGER NOT NULL DEFAULT -1,
            line_hash BLOB, scanned_size INTEGER NOT NULL DEFAULT -1, stream_text TEXT,
            stream_seq INTEGER, stream_turn INTEGER);
        CREATE VIRTUAL TABLE event_text USING fts5(text, session_id UNINDEXED, seq UNINDEXED,
            turn UNINDEXED, type UNINDEXED, tokenize = 'unicode61 remove_diacritics 2');
        PRAGMA user_version = 2;
        """
    )
    numbers: dict[str, int] = {}
    for session_id, seq, turn, type_, text in rows:
        num = numbers.setdefault(session_id, len(numbers) + 1)
        conn.execute(
            "INSERT OR IGNORE INTO sessions (num, session_id) VALUES (?, ?)", (num, session_id)
        )
        conn.execute(
            "INSERT INTO event_text (rowid, text, session_id, seq, turn, type)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            ((num << 40) | (seq << 2), text, session_id, seq, turn, type_),
        )
    conn.commit()
    conn.close()


def test_a_version_2_index_answers_until_the_new_one_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migration_mod, "STEP_SECONDS", 0.0)  # one session per step
    manager = SessionManager(tmp_path / "ws", home=tmp_path / "home")
    (tmp_path / "ws").mkdir()
    lc = make_lifecycle(manager)
    ids = []
    for number in range(3):
        if number:
            lc.start_fresh()
        run_turn(lc, f"the pelican parser number {number}", "Use the config.yaml file.")
        ids.append(lc.session_id)
    seq = [e.seq for e in manager.read_events(ids[0]).events if e.type == "turn/start"][0]
    write_v2_index(manager, [(ids[0], seq, 1, "turn/start", "the pelican parser number 0")])
    path = manager.layout.project_dir / INDEX_FILE
    index, other = SearchIndex.for_project(manager.layout), SearchIndex.for_project(manager.layout)
    assert index.migrating and other.migrating
    legacy = index.search("Pelican, PARSER")  # version 2 answers: words, punctuation ignored
    assert [(h.session_id, h.seq) for h in legacy] == [(ids[0], seq)]
    assert "[pelican parser]" in legacy[0].snippet
    assert index.search("config.ya") == []  # not in version 2 (and not a whole word)
    run_turn(lc, "a turn during the rebuild about herons", "ok")
    index.sync_session(manager.layout, lc.session_id)  # the new tables take it; the old answer
    assert index.search("herons") == []
    steps = []
    while not (step := index.build_step(manager.layout)).finished:
        steps.append(step)
        assert other.search("pelican parser") == legacy
    # the session of the turn above was in already; one session per step, the last swaps
    assert [(s.indexed, s.sessions, s.percentage) for s in steps] == [(2, 3, 66)]
    assert step.percentage == 100
    assert not index.migrating and not other.migrating
    assert {h.session_id for h in other.search("config.ya")} == set(ids)
    assert [h.turn for h in other.search("herons")] == [2]
    conn = sqlite3.connect(path)
    names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    assert "event_text" not in names and "sessions" not in names
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema_mod.SCHEMA_VERSION
    conn.close()
    assert index.build_step(manager.layout).finished  # nothing left to do
    index.close()
    other.close()
    lc.close()


def test_sync_finishes_a_rebuild_at_once_and_reindex_rebuilds(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path / "ws", home=tmp_path / "home")
    (tmp_path / "ws").mkdir()
    lc = make_lifecycle(manager)
    run_turn(lc, "エージェントの設計を保存した", "ok")
    sid = lc.session_id
    lc.close()
    write_v2_index(manager, [(sid, 1, 1, "turn/start", "エージェントの設計を保存した")])
    with SearchIndex.for_project(manager.layout) as index:
        assert index.migrating and index.search("エージェント") == []  # one unbroken word in v2
        index.sync(manager.layout)
        assert not index.migrating
        assert [h.snippet for h in index.search("エージェント")] == [
            "[エージェント]の設計を保存した"
        ]
    write_v2_index_over = manager.layout.project_dir / INDEX_FILE
    for suffix in ("", "-wal", "-shm"):
        Path(f"{write_v2_index_over}{suffix}").unlink(missing_ok=True)
    write_v2_index(manager, [])
    with SearchIndex.for_project(manager.layout) as index:
        assert index.migrating
        index.rebuild(manager.layout)
        assert not index.migrating and len(index.search("設計")) == 1


def test_a_version_2_index_on_a_read_only_store_is_searched_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = SessionManager(tmp_path / "ws", home=tmp_path / "home")
    (tmp_path / "ws").mkdir()
    lc = make_lifecycle(manager)
    run_turn(lc, "about the walrus", "ok")
    sid = lc.session_id
    lc.close()
    write_v2_index(manager, [(sid, 1, 1, "turn/start", "about the walrus")])
    path = manager.layout.project_dir / INDEX_FILE
    real_open = os.open

    def read_only_store(name: Any, flags: int, *args: Any) -> int:
        if Path(name) == path and flags & os.O_CREAT:
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(name, flags, *args)

    monkeypatch.setattr(os, "open", read_only_store)
    with SearchIndex.for_project(manager.layout) as index:
        assert index.migrating and index.read_only
        assert [h.seq for h in index.search("walrus")] == [1]
        assert index.sync(manager.layout).skipped
        with pytest.raises(SearchError, match="cannot be rebuilt now"):
            index.build_step(manager.layout)  # no endless background loop on a read-only store


def test_without_the_trigram_tokenizer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite < 3.34: said once, then every stored text is read; indexes move both ways."""
    real_connect = sqlite3.connect

    class OldSQLite:
        def __init__(self) -> None:
            self.conn = real_connect(":memory:")

        def execute(self, sql: str) -> None:
            raise sqlite3.OperationalError("no such tokenizer: trigram")

        def close(self) -> None:
            self.conn.close()

    monkeypatch.setattr(sqlite3, "connect", lambda *_a, **_k: OldSQLite())
    with caplog.at_level(logging.WARNING, logger="session.search"):
        assert schema_mod.trigram_available.__wrapped__() is False
    assert "3.34" in caplog.text and "slower" in caplog.text
    monkeypatch.setattr(sqlite3, "connect", real_connect)

    manager = SessionManager(tmp_path / "ws", home=tmp_path / "home")
    (tmp_path / "ws").mkdir()
    lc = make_lifecycle(manager)
    run_turn(lc, "open config.yaml then エージェントの設計", "ok")
    lc.close()
    monkeypatch.setattr(schema_mod, "trigram_available", lambda: False)
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
        assert not index.grams
        assert [h.type for h in index.search("config.ya")] == ["turn/start"]
        assert [h.type for h in index.search("設")] == ["turn/start"]
    conn = sqlite3.connect(manager.layout.project_dir / INDEX_FILE)
    assert not schema_mod.has_table(conn, "event_grams")
    conn.close()
    monkeypatch.setattr(schema_mod, "trigram_available", lambda: True)
    with SearchIndex.for_project(manager.layout) as index:  # a newer SQLite: trigrams built now
        assert [h.type for h in index.search("config.ya")] == ["turn/start"]
        assert index.grams
    monkeypatch.setattr(schema_mod, "trigram_available", lambda: False)
    with SearchIndex.for_project(manager.layout) as index:  # and back: the trigram table dropped
        assert [h.type for h in index.search("の設")] == ["turn/start"]
        assert not index.grams


def test_hits_are_named_tuples_with_event_fields(
    store: tuple[SessionManager, dict[tuple[str, int], str]],
) -> None:
    manager, _texts = store
    with SearchIndex.for_project(manager.layout) as index:
        hits = index.search("設計.md")
        assert hits and all(isinstance(h, SearchHit) and h.type == "tool/call" for h in hits)
        assert all("[設計.md]" in h.snippet for h in hits)
