"""Search filters and hits' step and time on PostgreSQL: as the local index (tests/search_timeline).

Then the rows made before schema version 5: filled from their events by the migration (this
role's), or by the next search of their role (another's, hidden from the migration by
row-level security).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from session.local.manager import SessionManager
from session.pg import PgStore
from session.pg.backend import PgSessionStore
from session.pg.migrations import MIGRATIONS
from session.pg.query import q
from session.pg.search import catch_up, search
from session.search import SearchIndex
from tests.pg.conftest import connect
from tests.search_timeline import CASES, case_filter, hits_of, injected_clock, write_timeline


def write_pg(store: PgStore, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> PgSessionStore:
    project = PgSessionStore(store, workspace)
    writer = project.create_session()
    write_timeline(writer, injected_clock(monkeypatch))
    writer.close()
    return project


@pytest.fixture
def project(store: PgStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PgSessionStore:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return write_pg(store, workspace, monkeypatch)


def test_hits_carry_step_and_time_and_filters_agree_with_the_local_index(
    project: PgSessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (session_id,) = [row.session_id for row in project.pg.list_sessions(project.project)]
    events = {e.seq: e for e in project.read_events(session_id).events}
    hits = project.open_search().search("config")
    assert len(hits) == 10
    for hit in hits:
        event = events[hit.seq]
        assert (hit.turn, hit.step, hit.ts) == (event.turn, event.step, event.ts)
    local = SessionManager(project.workspace_root, home=tmp_path / "home")
    writer = local.create_session(session_id=session_id)
    write_timeline(writer, injected_clock(monkeypatch))
    writer.close()
    with SearchIndex.for_project(local.layout) as index:
        index.sync(local.layout)
        for words, expected in CASES:
            filters = case_filter(words)
            found = project.open_search().search("config", filters=filters)
            assert hits_of(found) == expected, words
            assert (
                hits_of(project.open_search().search("config", session_id, filters=filters))
                == expected
            )
            assert hits_of(project.open_search().search("c", filters=filters)) >= expected, words
            mine = [h._replace(ts=None) for h in found]
            theirs = [h._replace(ts=None) for h in index.search("config", filters=filters)]
            assert mine == theirs, words


def _erase_new_columns(dsn: str, schema: str, *, unfilled: bool = True) -> None:
    """Make the role's rows as schema version 4 left them (no step, tool, paths)."""
    with connect(dsn) as conn:
        conn.execute(f'UPDATE "{schema}".search_texts SET step = NULL, tool = NULL, paths = NULL')
        if unfilled:  # as the migration leaves another role's
            conn.execute(f'UPDATE "{schema}".search_progress SET backfilled = false')


def test_the_migration_fills_existing_rows_from_their_events(
    project: PgSessionStore, pg_dsn: str
) -> None:
    catch_up(project.pg)
    before = hits_of(project.open_search().search("config", filters=case_filter({"path": "conf"})))
    _erase_new_columns(pg_dsn, project.pg.schema, unfilled=False)
    assert (
        hits_of(project.open_search().search("config", filters=case_filter({"path": "conf"})))
        == set()
    )
    with connect(pg_dsn) as conn:
        assert conn.execute(
            f'SELECT count(*) FROM "{project.pg.schema}".search_texts WHERE step IS NOT NULL'
        ).fetchone() == (0,)
        (fifth,) = [m for m in MIGRATIONS if m.version == 5]
        for statement in fifth.statements:
            if statement.startswith(("UPDATE", "\nUPDATE")) or "search_texts t SET" in statement:
                conn.execute(q(project.pg.schema, statement))
    assert (
        hits_of(project.open_search().search("config", filters=case_filter({"path": "conf"})))
        == before
    )
    for words, expected in CASES:
        assert (
            hits_of(project.open_search().search("config", filters=case_filter(words))) == expected
        ), words


def test_another_roles_rows_are_filled_by_its_next_search(
    store: PgStore,
    other_store: PgStore,
    pg_other_dsn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    theirs = write_pg(other_store, workspace, monkeypatch)
    catch_up(other_store)
    _erase_new_columns(pg_other_dsn, other_store.schema)
    assert search(other_store, theirs.project, "config", filters=case_filter({"tool": "x"})) == []
    for words, expected in CASES:
        found = search(other_store, theirs.project, "config", filters=case_filter(words))
        assert hits_of(found) == expected, words
    assert search(store, theirs.project, "config") == []  # never the other role's


TRICKY_DATA = [
    ("tool/call", {"args": {"path": "./a/b.txt"}}),
    ("tool/call", {"args": {"paths": ["x/", " ./y ", 3, None, "", "./"], "content": "z.txt"}}),
    ("tool/call", {"args": {"file": "f", "files": ["g", "h//"], "directory": "."}}),
    ("tool/call", {"args": {"file_path": "line\nbreak", "filename": "n.md", "dir": "not/one"}}),
    ("tool/call", {"args": '{"path": "a string, not an object"}'}),
    ("tool/call", {"args": None}),
    ("tool/call", {"args": {"path": {"nested": "no"}}}),
    ("workspace/drift", {"modified": ["m.py", "./n/"], "deleted": ["d"], "created": []}),
    ("workspace/drift", {"modified": []}),
    ("tool/result", {"args": {"path": "results name no path"}}),
]


@pytest.mark.parametrize(("kind", "data"), TRICKY_DATA)
def test_search_paths_in_sql_is_the_python_extraction(
    store: PgStore, kind: str, data: dict[str, object]
) -> None:
    from psycopg.types.json import Jsonb

    from session.search.filters import joined_paths, tool_paths

    if kind == "tool/call":
        expected = joined_paths(tool_paths(data["args"]))
    elif kind == "workspace/drift":
        listed = [data.get(k, []) for k in ("modified", "deleted", "created")]
        expected = joined_paths([p for paths in listed for p in paths])  # type: ignore[attr-defined]
    else:
        expected = None
    with store.connection() as conn:
        sql = q(store.schema, "SELECT {s}.search_paths(%s, %s)")
        (got,) = conn.execute(sql, (kind, Jsonb(data))).fetchone()  # type: ignore[misc]
    assert got == expected
