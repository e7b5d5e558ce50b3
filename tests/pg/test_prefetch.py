"""A resume from PostgreSQL starts its finds from this machine's scan hint, as a local one."""

from __future__ import annotations

from pathlib import Path

import pytest

from session.lifecycle import SessionLifecycle
from session.paths import scan_hint_path
from session.pg.backend import PgSessionStore
from session.workspace.prefetch import read_hint

from ..unit.test_prefetch import find_on_small_trees, make_tree, record_with_hint, spy_on_takes

__all__ = ["find_on_small_trees"]  # autouse: find runs on this small tree


def test_a_resume_from_the_database_takes_the_prefetched_finds(
    tmp_path: Path, pg_dsn: str, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    make_tree(root)
    hint_file = scan_hint_path(home, root)
    store = PgSessionStore.open(pg_dsn, root, home=home, schema=schema)
    try:
        session_id, hint = record_with_hint(store, home)
    finally:
        store.close()
    (root / "templates" / "b" / "t1.md").write_text("edited while away\n")
    (root / "templates" / "c" / "new.md").write_text("created while away\n")
    taken = spy_on_takes(monkeypatch)
    store = PgSessionStore.open(pg_dsn, root, home=home, schema=schema)
    try:
        second = SessionLifecycle(store, "editor")
        previous = second.find_previous()
        assert previous is not None and previous.session_id == session_id
        assert second.resume_or_start(previous, True) == "resumed"
        assert taken and taken[0] is not None  # the finds started before the snapshot came
        drift = second.last_drift
        assert drift is not None
        assert drift.modified == ["templates/b/t1.md"]
        assert drift.created == ["templates/c/new.md"]
        assert "Keep the templates short." in second.resume_context
        assert second.close()
    finally:
        store.close()
    assert read_hint(hint_file) != hint  # the exit's scan left its own
