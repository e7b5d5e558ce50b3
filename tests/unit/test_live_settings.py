"""Settings a client sends while the server runs, and the instance of a client without an id."""

from __future__ import annotations

from engine.config import (
    derived_instance_id,
    overlay_options,
    parse_initialization_options,
    settings_section,
)
from lsp_server.features.settings import changed_settings
from session.lifecycle.previous import newest_unheld_session
from session.local.manager import SessionManager
from session.paths import is_valid_instance_id

from .conftest import make_lifecycle, run_turn


def test_settings_section_takes_ours_or_the_whole_object() -> None:
    assert settings_section({"agentAssist": {"compactAt": 0.5}}) == {"compactAt": 0.5}
    assert settings_section({"compactAt": 0.5}) == {"compactAt": 0.5}
    assert settings_section({"agentAssist": None}) is None
    assert settings_section(None) is None
    assert settings_section([1]) is None


def test_overlay_keeps_what_the_changes_leave_out() -> None:
    base = {"instanceId": "w", "model": {"name": "a", "apiKey": "sk-1"}, "trackedFiles": ["x"]}
    merged = overlay_options(base, {"model": {"name": "b"}, "trackedFiles": ["y"]})
    assert merged == {
        "instanceId": "w",
        "model": {"name": "b", "apiKey": "sk-1"},
        "trackedFiles": ["y"],
    }
    assert base["model"] == {"name": "a", "apiKey": "sk-1"}  # not mutated
    assert overlay_options(None, {"a": 1}) == {"a": 1}


def test_changed_settings_split_live_from_restart() -> None:
    before, _ = parse_initialization_options({"instanceId": "w"}, "c", {})
    changes = {"instanceId": "v", "store": "postgresql://h/db", "model": {"name": "m"}}
    after, _ = parse_initialization_options(overlay_options({"instanceId": "w"}, changes), "c", {})
    live, fixed = changed_settings(before, after)
    assert list(live) == ["model"] and live["model"].name == "m"
    assert fixed == ["instanceId", "store"]


def test_derived_instance_names_client_and_process() -> None:
    assert derived_instance_id("GNU Emacs", 4242) == "GNU-Emacs-4242"
    assert derived_instance_id(None, 7) == "default-7"
    assert derived_instance_id("eglot", None) == "eglot"
    long = derived_instance_id("x" * 100, 123456)
    assert is_valid_instance_id(long) and long.endswith("-123456")
    config, _ = parse_initialization_options({}, "eglot", {}, 99)
    assert (config.instance_id, config.instance_derived) == ("eglot-99", True)
    config, _ = parse_initialization_options({"instanceId": "w"}, "eglot", {}, 99)
    assert (config.instance_id, config.instance_derived) == ("w", False)


def test_newest_unheld_session_skips_the_held_one_and_empty_ones(manager: SessionManager) -> None:
    assert newest_unheld_session(manager) is None
    older = make_lifecycle(manager, "a")
    run_turn(older, "one", "first")
    older_id = older.session_id
    older.close()
    newer = make_lifecycle(manager, "b")
    run_turn(newer, "two", "second")  # still open: its lock is held
    newer_id = newer.session_id
    empty = make_lifecycle(manager, "c")
    empty_id = empty.session_id
    assert empty.close()  # saved at exit without a turn, but with nothing to resume
    assert manager.layout.snapshot_path(empty_id).exists()
    try:
        assert newest_unheld_session(manager) == older_id
    finally:
        newer.close()
    assert newest_unheld_session(manager) in {older_id, newer_id}
