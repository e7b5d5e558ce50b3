"""A snapshot checked against its log: the line ending at `log_offset` is event `last_seq`.

Only that line's ends are read, however long the line (after a save, the `session/save`
event with the whole manifest: ~2 MB at 20,000 files).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from session.local.snapshots import snapshot_matches_log
from session.snapshot import SessionState

SID = "0123456789ab"


def line(seq: int, padding: int = 0, *, ours: bool = True) -> bytes:
    event: dict[str, Any] = {
        "seq": seq,
        "ts": "2026-12-06T13:47:02.676214Z",
        "type": "session/decision",
        "turn": None,
        "step": None,
        "data": {"text": "p" * padding},
    }
    if not ours:  # written by another writer: `seq` not first
        event = {**{k: v for k, v in event.items() if k != "seq"}, "seq": seq}
    return orjson.dumps(event) + b"\n"


def state(last_seq: int, log_offset: int) -> SessionState:
    return SessionState(session_id=SID, last_seq=last_seq, log_offset=log_offset)


@pytest.mark.parametrize("padding", [0, 100, 70_000, 300_000])
@pytest.mark.parametrize("ours", [True, False])
def test_the_line_at_the_snapshots_offset_is_found_however_long(
    tmp_path: Path, padding: int, ours: bool
) -> None:
    log = tmp_path / "s.events.jsonl"
    first, last = line(0, 10), line(1, padding, ours=ours)
    log.write_bytes(first + last + line(2))  # a line written after the snapshot
    end = len(first + last)
    assert snapshot_matches_log(log, state(1, end))
    assert not snapshot_matches_log(log, state(2, end))
    assert not snapshot_matches_log(log, state(1, end - 1))  # not a line's end
    assert not snapshot_matches_log(log, state(1, end + 5))
    # The first line of the log, as long as the others.
    log.write_bytes(last)
    assert snapshot_matches_log(log, state(1, len(last)))
    assert not snapshot_matches_log(log, state(0, len(last)))


def test_a_log_shorter_than_the_snapshot_or_none_does_not_match(tmp_path: Path) -> None:
    log = tmp_path / "s.events.jsonl"
    log.write_bytes(line(0))
    assert not snapshot_matches_log(log, state(0, len(line(0)) + 1))
    assert not snapshot_matches_log(log, state(0, 0))
    assert snapshot_matches_log(log, state(-1, 0))
    assert not snapshot_matches_log(tmp_path / "missing.jsonl", state(0, 3))
    log.write_bytes(b'{"seq":0,"type":"x"')  # torn: no newline where the line should end
    assert not snapshot_matches_log(log, state(0, len(b'{"seq":0,"type":"x"')))
