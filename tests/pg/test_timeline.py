"""A file's timeline on PostgreSQL (session/timeline/pg.py): the local index's answers.

The same scripted history (tests/file_timeline) written to both stores gives the same
changes, diffs, filters and versions; another role's sessions are never listed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from session.local.manager import SessionManager
from session.pg import PgStore
from session.pg.backend import PgSessionStore
from session.timeline import file_history, file_version
from tests.file_timeline import V4, write_history, write_old_style
from tests.search_timeline import DAY_TWO, injected_clock


def answers(store: object, root: Path, **options: object) -> list[tuple[object, ...]]:
    found = file_history(store, root, "config.yaml", **options)  # type: ignore[arg-type]
    return [
        (c.kind, c.turn, c.step, c.tool, c.user_message, c.before_sha256, c.after_sha256, c.diff)
        for c in found.changes
    ]


def test_the_database_answers_as_the_local_index(
    store: PgStore, other_store: PgStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    project = PgSessionStore(store, workspace)
    writer = project.create_session()
    write_history(writer, project, injected_clock(monkeypatch))
    writer.close()
    old = project.create_session()
    write_old_style(old)
    old.close()
    local = SessionManager(workspace, home=tmp_path / "home")
    for session_id, script in ((writer.session_id, "history"), (old.session_id, "old")):
        copy = local.create_session(session_id=session_id)
        if script == "history":
            write_history(copy, local, injected_clock(monkeypatch))
        else:
            write_old_style(copy)
        copy.close()
    everything = answers(project, workspace)
    assert len(everything) == 6 and everything == answers(local, workspace)
    old_row = next(a for a in everything if a[4] == "old times")
    assert old_row[:4] == ("write", 1, 1, "write_file") and old_row[5:] == (None, None, None)
    for options in (
        {"since": DAY_TWO},
        {"until": DAY_TWO},
        {"line": "port: 8080"},
        {"line": "level: 1", "limit": 1},
    ):
        assert answers(project, workspace, **options) == answers(local, workspace, **options)
    found = file_history(project, workspace, "config.yaml")
    assert {c.session_title for c in found.changes} == {"make the config", "old times"}
    version = file_version(
        project, workspace, "config.yaml", writer.session_id, turn=2, step=1, side="after"
    )
    assert version.text == V4
    # another role's project at the same place sees none of them
    theirs = PgSessionStore(other_store, workspace)
    assert file_history(theirs, workspace, "config.yaml").changes == []
