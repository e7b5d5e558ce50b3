"""A client's name is recorded with each turn: a hostile one stays one inert, bounded line."""

from __future__ import annotations

from pathlib import Path

from engine.config import MAX_CLIENT_NAME, client_label, parse_initialization_options
from session.lifecycle import LifecycleConfig, SessionLifecycle
from session.local.manager import SessionManager
from session.log.reader import scan_log
from session.paths import is_valid_instance_id

HOSTILE = "Zed\x1b]2;pwned\x07\n\rturn/end\x00" + "A" * 10_000


def test_a_hostile_client_name_is_recorded_printable_and_bounded(tmp_path: Path) -> None:
    label = client_label(HOSTILE)
    assert label is not None and label.isprintable() and len(label) <= MAX_CLIENT_NAME
    assert client_label("\x1b\x07\n") is None  # nothing printable: not recorded at all
    config, _ = parse_initialization_options({}, HOSTILE, {}, 4242)
    assert config.client == label
    assert is_valid_instance_id(config.instance_id)  # the instance named after it, too
    workspace = tmp_path / "ws"
    workspace.mkdir()
    manager = SessionManager(workspace, home=tmp_path / "home")
    lifecycle = SessionLifecycle(
        manager, config.instance_id, LifecycleConfig(edge="acp", client=config.client)
    )
    lifecycle.begin_turn("hello").end("completed")
    session_id = lifecycle.session_id
    lifecycle.close()
    raw = manager.layout.log_path(session_id).read_bytes()
    assert b"\x1b" not in raw and b"\x07" not in raw and b"\\u001b" not in raw
    start = next(
        e for e in scan_log(manager.layout.log_path(session_id)).events if e.type == "turn/start"
    )
    assert start.data.client == label
