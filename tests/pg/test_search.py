"""Search on PostgreSQL has the local index's literal semantics: same hits, ranks and snippets.

The same events are written through both stores (`SessionManager`, `PgSessionStore`);
every sampled substring of each searchable text finds its event on PostgreSQL, the hits are
exactly the texts that contain the query, and they are the local index's hits, in the same
order with the same scores and snippets: by the trigram index, without it, and by scans.
Then LIKE's metacharacters, U+0000, catching up with writers, scopes and row-level security.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

import session.pg.search as pg_search
import session.search.query as query_mod
from session.local.manager import SessionManager
from session.pg import PgStore
from session.pg.backend import PgSessionStore
from session.pg.query import q
from session.pg.search import catch_up, fold_query, has_trigram_index, index_events, read_on, search
from session.search import SearchFilter, SearchHit, SearchIndex
from session.store.session import Session
from tests.pg.conftest import connect, new_id
from tests.search_corpus import CORPUS

Key = tuple[str, int]


def request(text: str) -> dict[str, Any]:
    return {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": text}]}


def response(text: str) -> dict[str, Any]:
    return {"kind": "response", "parts": [{"part_kind": "text", "content": text}]}


def write_turn(writer: Session, turn: int, prompt: str, reply: str, tool: str = "") -> None:
    """Append one turn as the lifecycle records it: streamed reply, a tool call and result."""
    writer.append("turn/start", {"input": prompt}, turn=turn)
    writer.append("step/start", {"messages": [request(prompt)]}, turn=turn, step=1)
    for at in range(0, len(reply), 4):
        writer.append("assistant/chunk", {"delta": reply[at : at + 4]}, turn=turn, step=1)
    writer.append("assistant/message", {"message": response(reply)}, turn=turn, step=1)
    if tool:
        call = {"tool_call_id": f"c{turn}", "name": "read_file", "args": {"path": tool}}
        writer.append("tool/call", call, turn=turn, step=1)
        result = {"tool_call_id": f"c{turn}", "name": "read_file", "content": reply[::-1]}
        writer.append("tool/result", result, turn=turn, step=1)
    writer.append("step/end", {"usage": {}}, turn=turn, step=1)
    writer.append("turn/end", {"reason": "completed"}, turn=turn)


@dataclass
class Stores:
    """The same sessions in both stores."""

    local: SessionManager
    index: SearchIndex
    pg: PgStore
    project: str

    def pg_hits(
        self,
        query: str,
        session_id: str | None = None,
        limit: int = 10_000,
        filters: SearchFilter | None = None,
    ) -> Any:
        """PostgreSQL's hits without their times (each store wrote its events at its own)."""
        found = search(self.pg, self.project, query, session_id, limit, filters)
        return [hit._replace(ts=None) for hit in found]

    def local_hits(
        self,
        query: str,
        session_id: str | None = None,
        limit: int = 10_000,
        filters: SearchFilter | None = None,
    ) -> Any:
        """The local index's hits without their times."""
        self.index.sync(self.local.layout)
        return [
            hit._replace(ts=None) for hit in self.index.search(query, session_id, limit, filters)
        ]

    def texts(self) -> dict[Key, str]:
        """Return every searchable text PostgreSQL holds, by (session, seq)."""
        with self.pg.connection() as conn:
            rows = conn.execute(
                f'SELECT session_id, seq, text FROM "{self.pg.schema}".search_texts'
            )
            return {(sid, seq): text for sid, seq, text in rows}


@pytest.fixture
def stores(store: PgStore, tmp_path: Path) -> Iterator[Stores]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    local = SessionManager(workspace, home=tmp_path / "home")
    index = SearchIndex.for_project(local.layout)
    yield Stores(local, index, store, PgSessionStore(store, workspace).project)
    index.close()


def write_both(stores: Stores, turns: list[tuple[str, str, str]], session_id: str = "") -> str:
    """Write one session of `turns` (prompt, reply, tool path) to both stores; return its id."""
    session_id = session_id or new_id()
    pg_store = PgSessionStore(stores.pg, stores.local.workspace_root)
    for writer in (
        stores.local.create_session(session_id=session_id),
        pg_store.create_session(session_id=session_id),
    ):
        for number, (prompt, reply, tool) in enumerate(turns, start=1):
            write_turn(writer, number, prompt, reply, tool)
        writer.close()
    return session_id


def write_corpus(stores: Stores) -> dict[Key, str]:
    """The corpus in two sessions of both stores; return PostgreSQL's searchable texts."""
    turns = [(p, r, f"docs/{n}/設計.md") for n, (p, r) in enumerate(CORPUS)]
    half = len(turns) // 2
    write_both(stores, turns[:half])
    write_both(stores, turns[half:])
    catch_up(stores.pg)
    texts = stores.texts()
    assert len(texts) == 4 * len(CORPUS)
    return texts


def expected(texts: dict[Key, str], query: str) -> set[Key]:
    folded = fold_query(query)
    return {key for key, text in texts.items() if folded in fold_query(text)}


def keys(hits: list[SearchHit]) -> set[Key]:
    return {(hit.session_id, hit.seq) for hit in hits}


PLANS = ["trigram index", "no trigram index", "scans only"]


def use_plan(plan: str, stores: Stores, monkeypatch: pytest.MonkeyPatch) -> None:
    if plan == "no trigram index":  # as where pg_trgm could not be installed
        with stores.pg.connection() as conn:
            conn.execute(f'DROP INDEX "{stores.pg.schema}".search_texts_grams')
        assert not has_trigram_index(stores.pg)
    elif plan == "scans only":
        monkeypatch.setattr(pg_search, "_TRIGRAM", re.compile("(?!)"))  # matches nothing
    else:
        assert has_trigram_index(stores.pg)


@pytest.mark.parametrize("plan", PLANS)
def test_every_substring_finds_its_event_and_the_local_index_agrees(
    stores: Stores, plan: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = write_corpus(stores)
    use_plan(plan, stores, monkeypatch)
    rng = random.Random(17)
    checked = 0
    for key, text in sorted(texts.items()):
        for length in range(1, 13):
            if len(text) < length:
                continue
            start = rng.randrange(len(text) - length + 1)
            query = text[start : start + length]
            if not query.strip():
                continue
            hits = stores.pg_hits(query)
            assert key in keys(hits), (query, text)
            assert keys(hits) == expected(texts, query), query
            assert all(fold_query(query) in fold_query(texts[k]) for k in keys(hits))
            assert hits == stores.local_hits(query), query  # order, scores, snippets too
            checked += 1
    assert checked > 250
    found_in_one = 0
    for session_id in sorted({sid for sid, _seq in texts}):
        for query in ("の", "設計", "config.ya", "ΣΥΦ", "🚀", "x **", "NEAR(", 'OR "x"', "c:\\us"):
            want = {k for k in expected(texts, query) if k[0] == session_id}
            assert keys(stores.pg_hits(query, session_id)) == want, query
            assert stores.pg_hits(query, session_id) == stores.local_hits(query, session_id)
            found_in_one += bool(want)
    assert found_in_one >= 9


@pytest.mark.parametrize("plan", PLANS)
def test_like_metacharacters_are_literal(
    stores: Stores, plan: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_both(
        stores,
        [
            ("rate 50% off, a_b and C:\\dir", "-", ""),
            ("rate 50x off, axb and C:dir", "-", ""),
            ("abcxdef and abc and then def, 100%", "-", ""),
            ("abc_def and abc%def and abc\\def", "-", ""),
        ],
    )
    use_plan(plan, stores, monkeypatch)
    cases = {"%": 3, "_": 2, "\\": 2, "0% o": 1, "a_b": 1, "a%b": 0, "\\d": 2, "abc_def": 1}
    cases |= {"abc%def": 1, "abc\\def": 1, "abc_%": 0, "%%": 0, "c_d": 1}
    for query, count in cases.items():
        hits = [h for h in stores.pg_hits(query) if h.type == "turn/start"]
        assert len(hits) == count, query
        shown = [h.snippet.replace("[", "").replace("]", "") for h in hits]
        assert all(fold_query(query) in fold_query(text) for text in shown), query
        assert stores.pg_hits(query) == stores.local_hits(query), query


def test_the_trigram_index_serves_queries_under_forced_row_level_security(
    stores: Stores, pg_dsn: str
) -> None:
    session_id = write_both(stores, [("open config.yaml", "-", "")])
    catch_up(stores.pg)
    s = stores.pg.schema
    with connect(pg_dsn) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, p.polname, p.polpermissive"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " JOIN pg_policy p ON p.polrelid = c.oid WHERE n.nspname = %s"
            " AND c.relname LIKE 'search%%' ORDER BY 1, 4",
            (s,),
        ).fetchall()
        assert rows == [
            ("search_progress", True, True, "owner_only", True),
            ("search_texts", True, True, "owner_only", True),
            ("search_texts", True, True, "search_pattern", False),
        ]
        conn.execute(  # enough rows for the planner to choose an index
            f'INSERT INTO "{s}".search_texts (session_id, seq, part, type, ts, text, norm)'
            " SELECT %s, g, 0, 'turn/start', now(), md5(g::text), md5(g::text)"
            " FROM generate_series(100, 20099) g",
            (session_id,),
        )
        conn.execute(f'ANALYZE "{s}".search_texts')
        matching = pg_search._statement(pg_search._MATCHING, pg_search._BY_TIME, "")
        sql = q(s, matching).as_string(conn)
        params = {"ids": [session_id], "query": "config.ya", "want": 150}
        for pattern, uses_index in (("%config.ya%", True), (None, False)):
            with conn.transaction():
                conn.execute(pg_search._PLAIN_SCANS, (s,))
                if pattern is not None:
                    conn.execute(pg_search._INDEXED_SCAN, (pg_search.PATTERN_SETTING, pattern))
                plan = "\n".join(str(row[0]) for row in conn.execute("EXPLAIN " + sql, params))
                found = conn.execute(sql, params).fetchall()
            assert ("search_texts_grams" in plan) == uses_index, plan
            assert [row[1] for row in found] == [1]


def test_u0000_is_stored_and_searched_as_u_fffd(stores: Stores) -> None:
    session_id = new_id()
    pg_store = PgSessionStore(stores.pg, stores.local.workspace_root)
    with_nul = "before\x00after the nul"
    writer = pg_store.create_session(session_id=session_id)
    write_turn(writer, 1, with_nul, "reply with \x00 inside", "")
    writer.close()
    for query in ("before", "e\x00a", "e\ufffda", "\x00", "h \x00 i"):
        hits = stores.pg_hits(query)
        assert hits, query
        for hit in hits:
            assert fold_query(query) in fold_query(stores.texts()[(hit.session_id, hit.seq)])
    assert [h.snippet for h in stores.pg_hits("e\x00a")] == ["befor[e\ufffda]fter the nul"]
    assert stores.pg_hits("e a") == []  # locally U+0000 is a space; here it is U+FFFD


def test_catch_up_indexes_what_writers_appended_and_replaces_open_streams(
    stores: Stores,
) -> None:
    session_id = new_id()
    writers = [
        stores.local.create_session(session_id=session_id),
        PgSessionStore(stores.pg, stores.local.workspace_root).create_session(
            session_id=session_id
        ),
    ]
    for writer in writers:
        writer.append("turn/start", {"input": "tell me about herons"}, turn=1)
        writer.append("step/start", {"messages": []}, turn=1, step=1)
        for delta in ("Herons are ", "wading birds"):
            writer.append("assistant/chunk", {"delta": delta}, turn=1, step=1)
        writer.sync()
    hits = stores.pg_hits("wading")
    assert [(h.type, h.snippet) for h in hits] == [("assistant/chunk", "Herons are [wading] birds")]
    assert hits == stores.local_hits("wading")
    assert catch_up(stores.pg) == 0  # the search caught up already
    for writer in writers:
        writer.append("assistant/chunk", {"delta": " of the shore"}, turn=1, step=1)
        writer.append(
            "assistant/message",
            {"message": response("Herons are wading birds of the shore")},
            turn=1,
            step=1,
        )
        writer.append("turn/end", {"reason": "completed"}, turn=1)
    assert [h.type for h in stores.pg_hits("wading")] == ["assistant/message"]  # no chunk row
    assert stores.pg_hits("wading") == stores.local_hits("wading")
    with stores.pg.connection() as conn:
        progress = conn.execute(
            f'SELECT indexed_seq, stream_seq FROM "{stores.pg.schema}".search_progress'
        ).fetchall()
    assert progress == [(writers[1].log.next_seq - 1, None)]
    for writer in writers:
        writer.close()


def test_index_events_is_idempotent_and_runs_in_the_callers_transaction(
    stores: Stores,
) -> None:
    session_id = new_id()
    pg_store = PgSessionStore(stores.pg, stores.local.workspace_root)
    writer = pg_store.create_session(session_id=session_id)
    write_turn(writer, 1, "the pelican parser", "it parses pelicans", "src/pelican.py")
    writer.close()
    events = pg_store.read_events(session_id).events
    assert index_events(stores.pg, session_id, events[:3]) == 1  # turn/start
    assert index_events(stores.pg, session_id, events[:3]) == 0
    s = stores.pg.schema
    with stores.pg.connection() as conn, conn.transaction():
        written = index_events(conn, session_id, [e.model_dump() for e in events[5:]], schema=s)
        assert written == 3  # the events before them were read from the table: 3 in all
        assert len(stores.texts()) == 1  # not committed yet, seen from another connection
    assert catch_up(stores.pg) == 0
    assert len(stores.texts()) == 4
    found = {h.type for h in stores.pg_hits("pelican")}  # the result holds the reply reversed
    assert found == {"turn/start", "assistant/message", "tool/call"}
    with stores.pg.connection() as conn, pytest.raises(ValueError, match="schema"):
        index_events(conn, session_id, events)


def test_search_scopes_to_the_project_and_the_session(stores: Stores, tmp_path: Path) -> None:
    mine = write_both(stores, [("the walrus in the project", "-", "")])
    other_workspace = tmp_path / "other"
    other_workspace.mkdir()
    elsewhere = PgSessionStore(stores.pg, other_workspace)
    writer = elsewhere.create_session()
    write_turn(writer, 1, "the walrus elsewhere", "-", "")
    writer.close()
    assert {h.session_id for h in stores.pg_hits("walrus")} == {mine}
    assert [h.session_id for h in search(stores.pg, elsewhere.project, "walrus")] == [
        writer.session_id
    ]
    assert stores.pg_hits("walrus", writer.session_id) == []  # not of this project
    assert stores.pg_hits("walrus", mine) == stores.local_hits("walrus", mine)
    first = search(stores.pg, stores.project, "walrus", limit=1)
    assert [h._replace(ts=None) for h in first] == stores.pg_hits("walrus")[:1]
    assert stores.pg_hits("  ") == [] and stores.pg_hits("walrus", limit=0) == []
    with pytest.raises(ValueError, match="invalid session id"):
        stores.pg_hits("walrus", "not-an-id")
    assert stores.pg.delete_session(mine)  # PgStore: its rows, events and search texts
    assert stores.pg_hits("walrus") == []
    assert {session_id for session_id, _seq in stores.texts()} == {writer.session_id}


def test_a_query_with_many_matches_ranks_its_newest(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_search, "WINDOW", 3)
    monkeypatch.setattr(query_mod, "WINDOW", 3)
    turns = [("zyx zyx zyx", "-", "")]  # the best match, but the oldest
    turns += [(f"a longer text that has zyx once, number {n}", "-", "") for n in range(6)]
    write_both(stores, turns)
    calls: list[int] = []

    def read_four(matches: int, want: int, table_rows: float) -> int:
        calls.append(matches)
        return 4  # the newest 4 rows: two turns' texts, one match each

    def use_the_index(matches: int, want: int, table_rows: float) -> None:
        return None

    # found among the newest rows; by reading on; by the index (or for "zy" by a scan)
    for rows, choice in ((query_mod.SCAN_ROWS, None), (2, read_four), (1, use_the_index)):
        monkeypatch.setattr(pg_search, "SCAN_ROWS", rows)
        monkeypatch.setattr(pg_search, "read_on", choice or read_on)
        for query in ("zyx", "zy"):
            limited = stores.pg_hits(query, limit=2)
            assert limited == stores.local_hits(query, limit=2), (rows, query)
            rest = "" if query == "zyx" else "x"
            assert [h.snippet for h in limited] == [
                f"a longer text that has [{query}]{rest} once, number {n}" for n in (5, 4)
            ]
            everything = stores.pg_hits(query, limit=10)  # more than the window: all ranked
            assert everything[0].snippet.startswith(f"[{query}]")
            assert everything == stores.local_hits(query, limit=10)
    assert calls == [1, 1]  # "zyx", twice (a short query has no trigram index to spare)


def test_reading_on_is_chosen_when_it_costs_less_than_the_index() -> None:
    assert read_on(146, 150, 272_000) == 4110  # "match" in 1M events: 4,110 rows, not 20k
    assert read_on(80, 150, 27_000) is None  # the index has fewer candidates than that
    assert read_on(0, 150, 1e6) is None  # nothing among the newest: the index
    assert read_on(10, 150, 1e9) is None  # it would read more than MAX_SPAN rows
    assert read_on(100, 150, -1) is None  # the table was never analyzed


def test_each_role_finds_only_its_own_sessions(
    stores: Stores, other_store: PgStore, pg_other_dsn: str
) -> None:
    write_corpus(stores)
    assert search(other_store, stores.project, "config.ya") == []
    assert search(other_store, stores.project, "の") == []
    theirs = PgSessionStore(other_store, stores.local.workspace_root)
    writer = theirs.create_session()
    write_turn(writer, 1, "open config.yaml too", "-", "")
    writer.close()
    assert {h.session_id for h in search(other_store, stores.project, "config.ya")} == {
        writer.session_id
    }
    assert writer.session_id not in {h.session_id for h in stores.pg_hits("config.ya")}
    s = stores.pg.schema
    with connect(pg_other_dsn) as conn:
        for table in ("search_texts", "search_progress"):
            owners = conn.execute(f'SELECT DISTINCT owner FROM "{s}".{table}').fetchall()
            assert owners == [("agent_assist_test_other",)], table
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                f'INSERT INTO "{s}".search_texts (owner, session_id, seq, part, type, ts, text,'
                " norm) VALUES ('agent_assist_test', %s, 0, 0, 'x', now(), 'x', 'x')",
                (writer.session_id,),
            )
