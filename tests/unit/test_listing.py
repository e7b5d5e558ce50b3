"""A listing row rebuilt from a snapshot without the models: the same row, or the full reader."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from session.fork import fork_session
from session.local.listing import listed_fields, session_info
from session.local.manager import SessionManager
from session.local.snapshots import read_snapshot_file

from .conftest import make_lifecycle, run_turn

LISTED = ("title", "summary", "created_at", "updated_at", "turns", "parent_session_id", "phase")


def fields_of(state: Any) -> dict[str, Any]:
    return {name: getattr(state, name) for name in LISTED}


@pytest.fixture
def sessions(manager: SessionManager) -> dict[str, str]:
    """A plain session, one with a phase, and a fork of the first (with its lineage)."""
    lc = make_lifecycle(manager)
    run_turn(lc, "how are the templates laid out?", "by group")
    boundary = lc.current.state.last_seq
    run_turn(lc, "and the tests?", "beside them")
    plain = lc.session_id
    lc.close()
    phased = make_lifecycle(manager, "other")
    phased.start_fresh()
    run_turn(phased, "plan the migration", "three steps")
    phased.set_phase("code")
    phase_id = phased.session_id
    phased.close()
    fork = fork_session(manager, plain, boundary, instance_id="inst")
    child = fork.session.session_id
    manager.write_snapshot(fork.session)
    fork.session.close()
    return {"plain": plain, "phased": phase_id, "fork": child}


def test_the_listed_fields_are_those_of_the_full_snapshot(
    manager: SessionManager, sessions: dict[str, str]
) -> None:
    for session_id in sessions.values():
        path = manager.layout.snapshot_path(session_id)
        light = listed_fields(json.loads(path.read_bytes()), session_id)
        state, _ = read_snapshot_file(path, session_id)
        assert light is not None and state is not None
        assert fields_of(light) == fields_of(state)
        log = manager.layout.log_path(session_id)
        assert session_info(session_id, light, log) == session_info(session_id, state, log)
    listed = {info.session_id: info for info in manager.list_sessions()}
    assert listed[sessions["phased"]].phase == "code"
    assert listed[sessions["fork"]].parent_session_id == sessions["plain"]


def rewrite(path: Path, change: dict[str, Any], drop: tuple[str, ...] = ()) -> None:
    raw = json.loads(path.read_bytes())
    raw.update(change)
    for key in drop:
        raw.pop(key)
    replacement = path.with_name(f".{path.name}.new")
    replacement.write_text(json.dumps(raw))
    os.replace(replacement, path)


@pytest.mark.parametrize(
    ("change", "drop"),
    [
        ({"schema_version": 99}, ()),  # a newer agent-assist's: read-only, by the full reader
        ({"schema_version": "4"}, ()),
        ({"schema_version": True}, ()),
        ({}, ("created_at",)),  # the model's default, not ours to guess
        ({"created_at": 1_700_000_000}, ()),  # a number pydantic reads as seconds
        ({"updated_at": "2026-12-03"}, ()),
        ({"updated_at": "not a time at all"}, ()),
        ({"turns": True}, ()),
        ({"turns": "3"}, ()),
        ({"title": 5}, ()),
        ({"phase": ["x"]}, ()),
        ({"parent_session_id": "../../etc"}, ()),
        ({"session_id": "0123456789ab"}, ()),  # another session's snapshot
    ],
)
def test_any_other_snapshot_goes_to_the_full_reader(
    manager: SessionManager,
    sessions: dict[str, str],
    change: dict[str, Any],
    drop: tuple[str, ...],
) -> None:
    session_id = sessions["plain"]
    path = manager.layout.snapshot_path(session_id)
    rewrite(path, change, drop)
    assert listed_fields(json.loads(path.read_bytes()), session_id) is None
    full, _ = read_snapshot_file(path, session_id)
    listed = manager.listing.listed_snapshot(session_id)
    assert (listed is None) == (full is None)
    if full is not None:  # (a missing time is the model's "now": read anew each time)
        assert {k: v for k, v in fields_of(listed).items() if k not in drop} == {
            k: v for k, v in fields_of(full).items() if k not in drop
        }
    rows = {info.session_id: info for info in manager.list_sessions()}  # never a crash
    assert session_id in rows  # from the log where the snapshot is refused


def test_a_snapshot_with_naive_times_is_listed_in_utc(
    manager: SessionManager, sessions: dict[str, str]
) -> None:
    session_id = sessions["plain"]
    path = manager.layout.snapshot_path(session_id)
    rewrite(path, {"created_at": "2020-01-02T03:04:05", "updated_at": "2020-01-02T03:04:06"})
    light = listed_fields(json.loads(path.read_bytes()), session_id)
    assert light is not None and light.created_at.utcoffset() is not None
    info = next(i for i in manager.list_sessions() if i.session_id == session_id)
    assert info.created_at.isoformat() == "2020-01-02T03:04:05+00:00"
