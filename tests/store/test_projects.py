"""`StoreProjects` on both stores, through the interface only: one project, or every one.

What `sessions list|search|reindex|stats --all-projects` and the MCP server's scope read: the
rows with their project, the sessions and the store that reads each, a session found by id
only where it is in scope, and the search of each project.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from session.store.backend import SessionStore
from session.store.choose import open_store, store_projects
from tests.store.conftest import PG_ENV, Backend
from tests.store.test_contract import one_turn


def other_project(backend: Backend, tmp_path: Path) -> SessionStore:
    """Open the same store (files or schema) for a second workspace: another project."""
    workspace = tmp_path / "elsewhere"
    workspace.mkdir()
    kind, _, where = backend.holder_args
    if kind == "local":
        return open_store(None, workspace, home=Path(where))
    return open_store(os.environ[PG_ENV], workspace, schema=where, pool_size=2)


def session_with(store: SessionStore, text: str | None) -> str:
    """Create a session (with a turn saying `text`, or none), saved; return its id."""
    writer = store.create_session()
    if text is not None:
        one_turn(writer, text)
    store.write_snapshot(writer)
    writer.close()
    time.sleep(0.02)  # listed by time: each newer than the last
    return writer.session_id


def test_one_project_or_every_one(backend: Backend, tmp_path: Path) -> None:
    here, elsewhere = backend.store, other_project(backend, tmp_path)
    try:
        old = session_with(here, "needle in the old one")
        empty = session_with(here, None)
        theirs = session_with(elsewhere, "a needle of theirs")
        new = session_with(here, "the newest")
        mine = store_projects(here, every=False)
        every = store_projects(here, every=True)

        assert mine.names() == [here.project_name]
        assert set(every.names()) == {here.project_name, elsewhere.project_name}
        assert {sid for sid, _, _ in mine.sessions()} == {old, empty, new}
        places = {sid: project for sid, project, _ in every.sessions()}
        assert places == {
            old: here.project_name,
            empty: here.project_name,
            new: here.project_name,
            theirs: elsewhere.project_name,
        }

        rows, total, folded = mine.rows()
        assert ([r.row[0] for r in rows], total, folded) == ([new, old], 2, 1)
        assert {r.project for r in rows} == {here.project_name}
        assert {r.workspace for r in rows} == {str(here.workspace_root)}
        assert not any(r.in_use for r in rows)
        rows, total, folded = every.rows(empty=True)
        assert ([r.row[0] for r in rows], total, folded) == ([new, theirs, empty, old], 4, 0)
        rows, total, _ = every.rows(1, 2)
        assert ([r.row[0] for r in rows], total) == ([theirs, old], 3)
        assert rows[0].project == elsewhere.project_name

        # A session is found only where it is in scope, and read through the store given.
        assert mine.find(theirs) is None
        found = every.find(theirs)
        assert found is not None and found[0] == elsewhere.project_name
        assert any(e.type == "turn/end" for e in found[1].read_events(theirs).events)
        assert mine.find("0123456789ab") is None

        hits = every.search("needle", 10, None)
        assert {(project, hit.session_id) for project, hit in hits} == {
            (here.project_name, old),
            (elsewhere.project_name, theirs),
        }
        assert {hit.session_id for _, hit in mine.search("needle", 10, None)} == {old}
        assert set(every.stores()) == {here.project_name, elsewhere.project_name}
    finally:
        elsewhere.close()


def test_a_held_session_is_in_use_and_reindex_is_the_local_stores(backend: Backend) -> None:
    store = backend.store
    held = session_with(store, "kept open")
    writer = store.open_session(held)
    try:
        rows, _, _ = store_projects(store, every=False).rows()
        assert [(r.row[0], r.in_use) for r in rows] == [(held, True)]
    finally:
        writer.close()
    done = store_projects(store, every=False).reindex()
    if store.kind == "local":
        assert done is not None and [(r.project, r.sessions) for r in done] == [
            (store.project_name, 1)
        ]
    else:
        assert done is None  # the database keeps its own index
