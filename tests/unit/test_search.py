"""Full-text search over all sessions of a project (session/search/)."""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import session.search.sync as sync_mod
from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from session.log.reader import LogScan
from session.search import INDEX_FILE, SearchError, SearchHit, SearchIndex
from session.search.text import clean, fold

from .conftest import make_lifecycle, request, response, run_turn


def make_manager(tmp_path: Path) -> SessionManager:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "agent_spec.md").write_text("# Spec\n")
    return SessionManager(workspace, home=tmp_path / "home")


@pytest.fixture
def mgr(tmp_path: Path) -> SessionManager:
    return make_manager(tmp_path)


def index_of(manager: SessionManager) -> SearchIndex:
    return SearchIndex.for_project(manager.layout)


def seq_of(manager: SessionManager, session_id: str, type_: str, turn: int) -> int:
    """Return the seq of the (last) event of `type_` in `turn`, read from the log itself."""
    events = manager.read_events(session_id).events
    return [e.seq for e in events if e.type == type_ and e.turn == turn][-1]


def hit_keys(hits: list[SearchHit]) -> list[tuple[str, int, int | None, str]]:
    return [(h.session_id, h.seq, h.turn, h.type) for h in hits]


def two_sessions(manager: SessionManager) -> tuple[SessionLifecycle, str, str]:
    lc = make_lifecycle(manager)
    run_turn(lc, "How do I configure the pelican parser?", "Use the flamingo option.")
    run_turn(lc, "And the walrus mode?", "Walrus mode is off by default.")
    first = lc.session_id
    lc.start_fresh()
    run_turn(lc, "Tell me about the pelican again", "The pelican parser reads templates.")
    return lc, first, lc.session_id


def test_finds_user_input_and_assistant_text_across_sessions(mgr: SessionManager) -> None:
    lc, first, second = two_sessions(mgr)
    with index_of(mgr) as index:
        stats = index.sync(mgr.layout)
        assert stats.sessions == 2 and stats.scanned == 2 and stats.problems == []

        hits = index.search("walrus mode")
        assert {(h.session_id, h.seq, h.turn, h.type) for h in hits} == {
            (first, seq_of(mgr, first, "turn/start", 2), 2, "turn/start"),
            (first, seq_of(mgr, first, "assistant/message", 2), 2, "assistant/message"),
        }
        assert all("[walrus mode]" in h.snippet.lower() for h in hits)

        hits = index.search("flamingo")
        assert hit_keys(hits) == [
            (first, seq_of(mgr, first, "assistant/message", 1), 1, "assistant/message")
        ]
        assert hits[0].snippet == "Use the [flamingo] option."

        hits = index.search("pelican parser")
        assert {(h.session_id, h.type) for h in hits} == {
            (first, "turn/start"),
            (second, "assistant/message"),
        }
        assert all(h.score > 0 for h in hits)
    lc.close()


def test_session_filter_and_invalid_ids(mgr: SessionManager) -> None:
    lc, first, second = two_sessions(mgr)
    with index_of(mgr) as index:
        index.sync(mgr.layout)
        assert {h.session_id for h in index.search("pelican", session_id=second)} == {second}
        assert {h.session_id for h in index.search("pelican", session_id=first)} == {first}
        assert index.search("walrus", session_id=second) == []
        assert index.search("pelican", session_id="0123456789ab") == []  # unknown, valid
        for bad in ("../../etc", "ABCDEF012345", "abc", first + "0", ""):
            with pytest.raises(ValueError):
                index.search("pelican", session_id=bad)
            with pytest.raises(ValueError):
                index.sync_session(mgr.layout, bad)
        assert len(index.search("pelican", limit=1)) == 1
        assert index.search("pelican", limit=0) == []
    lc.close()


def test_results_are_grouped_by_session_best_first(mgr: SessionManager) -> None:
    lc = make_lifecycle(mgr)
    run_turn(lc, "heron", "one heron")
    run_turn(lc, "unrelated words here and quite a lot of them to dilute heron", "ok")
    a = lc.session_id
    lc.start_fresh()
    run_turn(lc, "heron heron heron", "heron")
    b = lc.session_id
    with index_of(mgr) as index:
        index.sync(mgr.layout)
        hits = index.search("heron")
        owners = [h.session_id for h in hits]
        assert set(owners) == {a, b}
        # contiguous groups; within a group, best first; groups ordered by their best hit
        assert owners == sorted(owners, key=owners.index)
        for sid in (a, b):
            scores = [h.score for h in hits if h.session_id == sid]
            assert scores == sorted(scores, reverse=True)
        firsts = [next(h.score for h in hits if h.session_id == s) for s in dict.fromkeys(owners)]
        assert firsts == sorted(firsts, reverse=True)
    lc.close()


def test_incremental_sync_reads_only_new_events(
    mgr: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, int, int]] = []
    real_scan = sync_mod.scan_log

    def spy(path: Path, start_offset: int = 0, expect_seq: int = 0) -> LogScan:
        calls.append((path.name, start_offset, expect_seq))
        return real_scan(path, start_offset, expect_seq)

    monkeypatch.setattr(sync_mod, "scan_log", spy)
    lc = make_lifecycle(mgr)
    run_turn(lc, "first question about otters", "Otters are mustelids.")
    sid = lc.session_id
    index = index_of(mgr)
    stats = index.sync_session(mgr.layout, sid)
    first_events = lc.current.log.next_seq
    assert stats.events == first_events and calls == [(f"{sid}.events.jsonl", 0, 0)]
    rows_before = index.row_count(sid)
    assert rows_before == 2  # input + reply

    calls.clear()
    assert index.sync(mgr.layout).scanned == 0  # nothing appended: the log is not read at all
    assert calls == []
    assert index.search("badgers") == []

    offset = lc.current.log.offset
    run_turn(lc, "second question about badgers", "Badgers dig setts.")
    calls.clear()
    stats = index.sync_session(mgr.layout, sid)
    assert calls == [(f"{sid}.events.jsonl", offset, first_events)]
    assert stats.events == lc.current.log.next_seq - first_events
    assert stats.bytes_read == lc.current.log.offset - offset
    assert index.row_count(sid) == rows_before + 2
    assert hit_keys(index.search("badgers dig")) == [
        (sid, seq_of(mgr, sid, "assistant/message", 2), 2, "assistant/message")
    ]
    index.close()
    lc.close()


def rich_history(manager: SessionManager, index: SearchIndex | None) -> list[str]:
    """Write varied sessions; sync after every step when `index` is given (incremental)."""

    def sync(lc: SessionLifecycle) -> None:
        if index is not None:
            index.sync_session(manager.layout, lc.session_id)

    lc = make_lifecycle(manager)
    turn = lc.begin_turn("read the kestrel template please")
    turn.start_step([request("read the kestrel template please")])
    turn.tool_call("call1", "read_file", {"path": "templates/kestrel.md"})
    sync(lc)
    turn.tool_result("call1", "read_file", "Kestrel template: hovering falcon notes")
    turn.start_step([])
    for piece in ("The kestrel ", "template ", "describes hovering."):
        turn.chunk(piece)
        sync(lc)  # mid-stream: a provisional row that the next sync replaces
    turn.assistant_message(
        {"kind": "response", "parts": [{"part_kind": "text", "content": "The kestrel template"}]}
    )
    turn.end_step({})
    turn.end("completed")
    sync(lc)
    turn = run_turn(lc, "write a long story", "Once upon a time a lonely osprey", end=None)
    sync(lc)
    turn.end("aborted")
    lc.record_decision("Use the osprey naming scheme")
    lc.current.append("workspace/drift", {"source": "watcher", "modified": ["templates/a.md"]})
    sync(lc)
    first = lc.session_id
    lc.start_fresh()
    run_turn(lc, "second session about ospreys", "Ospreys eat fish.")
    sync(lc)
    second = lc.session_id
    lc.close()
    return [first, second]


QUERIES = [
    "kestrel",
    "kestrel template",
    "osprey",
    "lonely osprey",
    "hovering",
    "read_file",
    "templates/kestrel.md",
    "naming scheme",
    "templates/a.md",
    "fish",
    "falcon notes",
]


def test_streamed_tool_and_session_events_are_indexed(mgr: SessionManager) -> None:
    first, _second = rich_history(mgr, None)
    events = mgr.read_events(first).events
    turn_end_2 = [e.seq for e in events if e.type == "turn/end" and e.turn == 2][0]
    with index_of(mgr) as index:
        index.sync(mgr.layout)
        by_type = {h.type: h for h in index.search("osprey", session_id=first)}
        # the aborted turn's streamed text, at the seq of its turn/end
        assert by_type["assistant/chunk"].seq == turn_end_2
        assert by_type["assistant/chunk"].turn == 2
        assert "lonely [osprey]" in by_type["assistant/chunk"].snippet
        assert by_type["session/decision"].turn is None
        call = index.search("templates/kestrel.md")
        assert [h.type for h in call] == ["tool/call"]
        assert call[0].snippet.startswith("read_file ")
        assert [h.type for h in index.search("falcon notes")] == ["tool/result"]
        assert [h.type for h in index.search("templates/a.md")] == ["workspace/drift"]
        # the completed step's chunks are not indexed twice: its message holds them
        assert [h.type for h in index.search("describes hovering")] == []
        assert {h.type for h in index.search("kestrel template", session_id=first)} == {
            "turn/start",
            "assistant/message",
            "tool/result",
        }


def test_open_stream_is_provisional_then_replaced(mgr: SessionManager) -> None:
    lc = make_lifecycle(mgr)
    # (a stream is written up to its last space: the word after it may be part of a secret)
    turn = run_turn(lc, "stream please", "partial answer about cormorants ", end=None)
    sid = lc.session_id
    with index_of(mgr) as index:
        index.sync_session(mgr.layout, sid)
        hits = index.search("cormorants")
        last_chunk = seq_of(mgr, sid, "assistant/chunk", 1)
        assert hit_keys(hits) == [(sid, last_chunk, 1, "assistant/chunk")]
        turn.chunk("and grebes ")
        index.sync_session(mgr.layout, sid)
        hits = index.search("cormorants and grebes")
        assert hit_keys(hits) == [
            (sid, seq_of(mgr, sid, "assistant/chunk", 1), 1, "assistant/chunk")
        ]
        turn.assistant_message(
            {"kind": "response", "parts": [{"part_kind": "text", "content": "cormorants"}]}
        )
        turn.end_step({})
        turn.end("completed")
        index.sync_session(mgr.layout, sid)
        hits = index.search("cormorants")
        assert hit_keys(hits) == [
            (sid, seq_of(mgr, sid, "assistant/message", 1), 1, "assistant/message")
        ]
        assert index.search("grebes") == []  # superseded by the message
    lc.close()


def all_hits(index: SearchIndex) -> dict[str, list[SearchHit]]:
    return {q: index.search(q) for q in QUERIES}


def test_rebuilt_index_returns_exactly_the_incremental_hits(mgr: SessionManager) -> None:
    index = index_of(mgr)
    rich_history(mgr, index)
    index.sync(mgr.layout)
    incremental = all_hits(index)
    assert all(incremental.values()), {q: h for q, h in incremental.items() if not h}
    index.close()

    path = mgr.layout.project_dir / INDEX_FILE
    for name in os.listdir(mgr.layout.project_dir):
        if name.startswith(INDEX_FILE):
            os.unlink(mgr.layout.project_dir / name)
    assert not path.exists()
    with index_of(mgr) as fresh:
        assert fresh.search("kestrel") == []  # missing: empty until synced
        fresh.sync(mgr.layout)
        assert all_hits(fresh) == incremental
        fresh.rebuild(mgr.layout)
        assert all_hits(fresh) == incremental


HOSTILE_TEXTS = [
    'say "hello" to NEAR(alpha, beta) and col:value',
    "a*b^c -minus (paren) AND OR NOT {brace} [bracket] 'single'",
    "naïve Über café 日本語 snake_case x1 42 ***",
]
SEPARATORS = st.text(
    alphabet=st.sampled_from(list(" \"*:^-()+,.;'{}[]\t\n|/\\")), min_size=1, max_size=3
)
HOSTILE = st.lists(
    st.one_of(
        st.sampled_from(['"', "*", "NEAR(", ":", "^", "-", "AND", "OR", "NOT", "(", ")", " "]),
        st.characters(exclude_categories=()),  # any code point, lone surrogates and NUL too
        st.sampled_from(" ".join(HOSTILE_TEXTS).split()),
    ),
    max_size=30,
).map("".join)


def test_hostile_queries_are_plain_text(mgr: SessionManager) -> None:
    """Quotes, `*`, `NEAR(`, `AND`, `:` ... are characters to find, never search syntax."""
    lc = make_lifecycle(mgr)
    for text in HOSTILE_TEXTS:
        run_turn(lc, text, "a reply")
    sid = lc.session_id
    lc.close()
    index = index_of(mgr)
    index.sync(mgr.layout)
    inputs = {
        seq_of(mgr, sid, "turn/start", turn): text for turn, text in enumerate(HOSTILE_TEXTS, 1)
    }

    def expected(query: str) -> set[int]:
        folded = fold(clean(query))
        return {seq for seq, text in inputs.items() if folded in fold(text)}

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(query=HOSTILE)
    @example(query="")
    @example(query='"')
    @example(query='""')
    @example(query="NEAR(alpha beta)")
    @example(query="alpha*")
    @example(query="col:alpha")
    @example(query="^alpha")
    @example(query="-alpha")
    @example(query="alpha AND beta")
    @example(query="\x00")
    @example(query="\ud800alpha")
    @example(query="   \t\n ")
    @example(query="*:^-()")
    def arbitrary(query: str) -> None:
        hits = index.search(query, limit=1000)
        assert all(isinstance(h, SearchHit) for h in hits)
        if query.strip():
            got = {h.seq for h in hits if h.type == "turn/start"}
            assert got == expected(query), query  # precision and recall
        index.search(query, session_id=sid, limit=3)

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
    @given(text=st.sampled_from(HOSTILE_TEXTS), data=st.data(), upper=st.booleans())
    def fragments(text: str, data: st.DataObject, upper: bool) -> None:
        begin = data.draw(st.integers(0, len(text) - 1))
        end = data.draw(st.integers(begin + 1, len(text)))
        query = text[begin:end].upper() if upper else text[begin:end]
        if query.strip():
            got = {h.seq for h in index.search(query, limit=1000) if h.type == "turn/start"}
            assert got == expected(query) and got, query

    arbitrary()
    fragments()
    first, second, third = sorted(inputs)
    for query, seqs in [
        ('"hello"', [first]),
        ("NEAR(alpha", [first]),
        ("col:value", [first]),
        ("a*b^c", [second]),
        ("AND OR NOT", [second]),
        ("{brace} [", [second]),
        ("***", [third]),
        ("CAFÉ", [third]),
        ("日本", [third]),
    ]:
        assert [h.seq for h in index.search(query)] == seqs, query
    assert index.search("cafe") == []  # literal: diacritics count
    assert index.search("alpha beta") == []  # literal: the comma is part of the text
    index.close()


def test_compacted_and_rewound_sessions_keep_old_turns(mgr: SessionManager) -> None:
    lc = make_lifecycle(mgr)
    run_turn(lc, "tell me about puffins", "Puffins nest in burrows.")
    run_turn(lc, "and gannets?", "Gannets dive.")
    sid = lc.session_id
    covers = lc.current.state.last_seq
    lc.current.append(
        "session/compact",
        {"summary": "Discussed seabirds", "decisions": ["focus on auks"], "covers_seq": covers},
    )
    lc.current.append("session/rewind", {"to_seq": 3})
    run_turn(lc, "now about terns", "Terns migrate far.")
    with index_of(mgr) as index:
        index.sync(mgr.layout)
        assert [h.turn for h in index.search("puffins nest")] == [1]
        assert [h.turn for h in index.search("gannets dive")] == [2]
        assert [h.type for h in index.search("seabirds")] == ["session/compact"]
        assert [h.type for h in index.search("focus on auks")] == ["session/compact"]
        assert [h.turn for h in index.search("terns migrate")] == [3]
        assert {h.session_id for h in index.search("puffins")} == {sid}
    lc.close()


def test_corrupt_index_is_deleted_and_rebuilt(
    mgr: SessionManager, caplog: pytest.LogCaptureFixture
) -> None:
    lc, first, _second = two_sessions(mgr)
    lc.close()
    path = mgr.layout.project_dir / INDEX_FILE
    with index_of(mgr) as index:
        index.sync(mgr.layout)
        expected = index.search("pelican")
        assert expected
    path.write_bytes(os.urandom(4096))
    with caplog.at_level(logging.WARNING, logger="session.search"), index_of(mgr) as index:
        assert index.search("pelican") == []  # damaged: deleted, empty until the next sync
        assert "damaged" in caplog.text
        stats = index.sync(mgr.layout)
        assert index.search("pelican") == expected
    caplog.clear()
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 8000)
    with caplog.at_level(logging.WARNING, logger="session.search"), index_of(mgr) as index:
        stats = index.sync_session(mgr.layout, first)  # a one-session sync rebuilds everything
        assert stats.index_recreated and "damaged" in caplog.text
        assert index.search("pelican") == expected
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_corrupted_while_open_is_rebuilt(mgr: SessionManager) -> None:
    lc, _first, _second = two_sessions(mgr)
    lc.close()
    with index_of(mgr) as index:
        index.sync(mgr.layout)
        expected = index.search("pelican")
        index.close()
        path = mgr.layout.project_dir / INDEX_FILE
        size = path.stat().st_size
        with open(path, "r+b") as fh:  # damage pages in place (same inode)
            fh.seek(4096)
            fh.write(b"\x13" * max(0, size - 4096))
        assert index.sync(mgr.layout).index_recreated
        assert index.search("pelican") == expected


def test_schema_version_change_rebuilds(mgr: SessionManager) -> None:
    lc, _first, _second = two_sessions(mgr)
    lc.close()
    path = mgr.layout.project_dir / INDEX_FILE
    with index_of(mgr) as index:
        index.sync(mgr.layout)
        expected = index.search("pelican")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    with index_of(mgr) as index:
        assert index.search("pelican") == []
        index.sync(mgr.layout)
        assert index.search("pelican") == expected


def test_torn_log_tail_is_tolerated_then_continued(mgr: SessionManager) -> None:
    lc = make_lifecycle(mgr)
    run_turn(lc, "about albatrosses", "They glide.")
    sid = lc.session_id
    lc.close()
    log = mgr.layout.log_path(sid)
    with open(log, "ab") as fh:
        fh.write(b'{"seq": 99, "ts": "2024-01-01T00:00:00Z", "type": "turn/start", "data": {"inp')
    with index_of(mgr) as index:
        stats = index.sync(mgr.layout)
        assert any("incomplete last line" in p for p in stats.problems)
        assert [h.type for h in index.search("albatrosses")] == ["turn/start"]
        assert index.sync(mgr.layout).scanned == 0  # unchanged: not read again
        lc = make_lifecycle(mgr)
        lc.resume(sid)  # repairs the tail with session/recover, then continues
        run_turn(lc, "about petrels", "Storm petrels are small.")
        lc.close()
        stats = index.sync_session(mgr.layout, sid)
        assert stats.reindexed == 0 and stats.events > 0
        assert [h.turn for h in index.search("storm petrels")] == [2]
        assert [h.turn for h in index.search("albatrosses")] == [1]


def test_bad_line_in_middle_indexes_what_is_readable(mgr: SessionManager) -> None:
    lc = make_lifecycle(mgr)
    run_turn(lc, "about loons", "Loons dive deep.")
    run_turn(lc, "about grebes", "Grebes build floating nests.")
    sid = lc.session_id
    lc.close()
    log = mgr.layout.log_path(sid)
    lines = log.read_bytes().splitlines(keepends=True)
    middle = next(i for i, line in enumerate(lines) if b'"about grebes"' in line)
    lines[middle] = b"this is not json\n"
    log.write_bytes(b"".join(lines))
    with index_of(mgr) as index:
        stats = index.sync(mgr.layout)
        assert stats.problems and index.search("loons dive")
        assert index.search("grebes") == []  # after the bad line: not readable


def test_replaced_shrunk_and_vanished_logs(mgr: SessionManager) -> None:
    lc, first, second = two_sessions(mgr)
    lc.close()
    with index_of(mgr) as index:
        index.sync(mgr.layout)
        log = mgr.layout.log_path(first)
        lines = log.read_bytes().splitlines(keepends=True)
        cut = next(
            i for i, line in enumerate(lines) if b'"turn/start"' in line and b'"turn":2' in line
        )
        log.write_bytes(b"".join(lines[:cut]))  # shrunk: turn 2 is gone
        stats = index.sync(mgr.layout)
        assert stats.reindexed == 1
        assert index.search("walrus") == []
        assert index.search("flamingo")
        # replaced by another log of the same size (the line at the indexed offset differs)
        data = bytearray(log.read_bytes())
        at = data.rfind(b"flamingo")
        data[at : at + 8] = b"FLAMINGX"
        at = data.rfind(b'"ts":"') + len(b'"ts":"')
        data[at : at + 4] = b"1999"
        log.write_bytes(bytes(data))
        assert index.sync(mgr.layout).reindexed == 1
        assert index.search("flamingo") == [] and index.search("flamingx")
        mgr.delete_session(second)
        stats = index.sync(mgr.layout)
        assert stats.dropped == 1
        assert {h.session_id for h in index.search("pelican")} == {first}
        assert index.row_count(second) == 0


def test_index_file_is_private_and_never_a_symlink(mgr: SessionManager, tmp_path: Path) -> None:
    lc, _first, _second = two_sessions(mgr)
    lc.close()
    path = mgr.layout.project_dir / INDEX_FILE
    with index_of(mgr) as index:
        index.sync(mgr.layout)
        for name in os.listdir(mgr.layout.project_dir):
            if name.startswith(INDEX_FILE):
                assert stat.S_IMODE(os.stat(mgr.layout.project_dir / name).st_mode) == 0o600, name
    for name in os.listdir(mgr.layout.project_dir):
        if name.startswith(INDEX_FILE):
            os.unlink(mgr.layout.project_dir / name)
    target = tmp_path / "elsewhere.sqlite"
    target.write_bytes(b"precious")
    path.symlink_to(target)
    with index_of(mgr) as index:
        with pytest.raises(SearchError, match="symlink"):
            index.sync(mgr.layout)
        with pytest.raises(SearchError, match="symlink"):
            index.search("pelican")
    assert target.read_bytes() == b"precious"


def test_symlinked_wal_is_refused(mgr: SessionManager, tmp_path: Path) -> None:
    lc, _first, _second = two_sessions(mgr)
    lc.close()
    mgr.layout.ensure_dirs()
    (mgr.layout.project_dir / (INDEX_FILE + "-wal")).symlink_to(tmp_path / "elsewhere-wal")
    with index_of(mgr) as index, pytest.raises(SearchError, match="not a regular file"):
        index.sync(mgr.layout)
    assert not (tmp_path / "elsewhere-wal").exists()


def test_two_handles_share_one_index(mgr: SessionManager) -> None:
    """Two editor windows (two handles on the file): syncs, a rebuild, a deletion."""
    lc = make_lifecycle(mgr)
    run_turn(lc, "about swifts", "Swifts sleep on the wing.")
    a, b = index_of(mgr), index_of(mgr)
    a.sync(mgr.layout)
    assert [h.turn for h in b.search("swifts sleep")] == [1]
    run_turn(lc, "about larks", "Larks sing while climbing.")
    assert b.sync_session(mgr.layout, lc.session_id).events > 0
    assert a.sync(mgr.layout).scanned == 0  # b already indexed it
    assert [h.turn for h in a.search("larks sing")] == [2]
    b.rebuild(mgr.layout)
    assert [h.turn for h in a.search("larks sing")] == [2]
    for name in os.listdir(mgr.layout.project_dir):  # deleted under a's feet: a reopens a new file
        if name.startswith(INDEX_FILE):
            os.unlink(mgr.layout.project_dir / name)
    assert a.search("larks") == []
    a.sync(mgr.layout)
    assert [h.turn for h in b.search("larks sing")] == [2]
    a.close()
    b.close()
    lc.close()


def test_metadata_mode_placeholders_are_not_indexed(mgr: SessionManager) -> None:
    lc = make_lifecycle(mgr, persistence="metadata")
    run_turn(lc, "secret plans about ravens", "Ravens are clever.")
    lc.close()
    with index_of(mgr) as index:
        index.sync(mgr.layout)
        assert index.search("ravens") == []
        assert index.search("not persisted") == []
        assert index.search("sha256") == []


def test_sync_on_an_empty_project(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    with index_of(manager) as index:
        stats = index.sync(manager.layout)
        assert stats.sessions == 0 and index.search("anything") == []


VOCABULARY = "the of to a heron osprey tern gannet puffin parser template config".split()


def vocabulary_history(manager: SessionManager, turns: int, seed: int = 3) -> list[str]:
    """Two sessions of `turns` turns each, text drawn from a small vocabulary (skewed)."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(VOCABULARY))]
    ids = []
    lc = make_lifecycle(manager)
    for session in range(2):
        if session:
            lc.start_fresh()
        for _ in range(turns):
            prompt = " ".join(rng.choices(VOCABULARY, weights, k=rng.randint(3, 12)))
            reply = " ".join(rng.choices(VOCABULARY, weights, k=rng.randint(5, 40)))
            turn = lc.begin_turn(prompt)
            turn.start_step([request(prompt)])
            turn.assistant_message(response(reply))
            turn.end_step({})
            turn.end("completed")
        ids.append(lc.session_id)
    lc.close()
    return ids


def test_bulk_sync_merges_the_index(mgr: SessionManager, monkeypatch: pytest.MonkeyPatch) -> None:
    vocabulary_history(mgr, 30)

    def segments_after_build(optimize_rows: int) -> int:
        monkeypatch.setattr(sync_mod, "_OPTIMIZE_ROWS", optimize_rows)
        for name in os.listdir(mgr.layout.project_dir):
            if name.startswith(INDEX_FILE):
                os.unlink(mgr.layout.project_dir / name)
        with index_of(mgr) as index:
            assert index.search("heron") == []  # creates the empty index
            conn = sqlite3.connect(index.path)
            conn.execute("INSERT INTO event_grams (event_grams, rank) VALUES ('hashsize', 64)")
            # counted already (as after an earlier sync): no recount, which would merge too
            conn.execute("INSERT INTO gram_docs VALUES (char(0), 0)")
            conn.commit()
            conn.close()
            index.close()  # FTS5 reads its configuration when a connection opens the table
            assert index.sync(mgr.layout).rows == 120
            conn = sqlite3.connect(index.path)
            (count,) = conn.execute("SELECT count(DISTINCT segid) FROM event_grams_idx").fetchone()
            conn.close()
            assert index.search("heron")
            return int(count)

    assert segments_after_build(10_000) > 1  # a small write: left to automerge
    assert segments_after_build(100) == 1  # most of the index written: merged
