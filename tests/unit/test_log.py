"""EventLog: append-only writes, fsync policy, torn tails and corruption."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from session.log.reader import iter_log, readable_prefix, scan_log
from session.log.writer import EventLog, LogError


def write_turns(log: EventLog, turns: int) -> None:
    log.append("session/start", {"session_id": "abcdef012345"})
    for n in range(1, turns + 1):
        log.append("turn/start", {"input": f"question {n}"}, turn=n)
        log.append("assistant/chunk", {"delta": "ans"}, turn=n, step=1)
        log.append("turn/end", {"reason": "completed"}, turn=n)


def test_append_gives_dense_seqs_and_reads_back(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s.events.jsonl")
    write_turns(log, 3)
    log.close()
    scan = scan_log(log.path)
    assert [e.seq for e in scan.events] == list(range(10))
    assert scan.problems == [] and scan.read_only_reason is None
    assert scan.events[1].type == "turn/start"
    assert scan.end_offset == log.path.stat().st_size


def test_one_fsync_per_completed_turn(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s.events.jsonl")
    write_turns(log, 5)
    assert log.fsync_count == 5
    log.close()  # close syncs only if something is unsynced
    assert log.fsync_count == 5


def test_files_are_private(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s.events.jsonl")
    write_turns(log, 1)
    assert (log.path.stat().st_mode & 0o777) == 0o600


def test_read_from_offset(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s.events.jsonl")
    write_turns(log, 2)
    middle = log.offset
    log.append("turn/start", {"input": "third"}, turn=3)
    log.close()
    tail = scan_log(log.path, middle, expect_seq=7)
    assert [e.seq for e in tail.events] == [7]
    assert tail.events[0].data.input == "third"  # type: ignore[union-attr]


def test_torn_tail_is_ignored_reported_and_repaired_by_appending(tmp_path: Path) -> None:
    path = tmp_path / "s.events.jsonl"
    log = EventLog(path)
    write_turns(log, 2)
    log.close()
    good_size = path.stat().st_size
    with open(path, "ab") as fh:
        fh.write(b'{"seq":7,"ts":"2026-01-01T00:00:00Z","type":"turn/st')
    scan = scan_log(path)
    assert len(scan.events) == 7
    assert scan.read_only_reason is None
    assert [p.kind for p in scan.problems] == ["torn_tail"]
    assert "incomplete last line 8" in scan.problems[0].message
    # Appending never rewrites: the torn bytes stay, acknowledged by session/recover.
    log2 = EventLog.for_scan(path, scan)
    log2.append("turn/start", {"input": "again"}, turn=3)
    log2.close()
    with open(path, "rb") as fh:
        assert fh.read(good_size) == open(path, "rb").read()[:good_size]
    rescan = scan_log(path)
    assert rescan.read_only_reason is None
    assert [e.type for e in rescan.events[-2:]] == ["session/recover", "turn/start"]
    assert [e.seq for e in rescan.events] == list(range(9))
    assert [p.kind for p in rescan.problems] == ["recovered"]


def test_readable_prefix_says_where_reading_stopped(tmp_path: Path) -> None:
    """Whole, torn at the end, bad in the middle, and a torn write a recover acknowledged."""
    path = tmp_path / "s.events.jsonl"
    log = EventLog(path)
    write_turns(log, 2)
    log.close()
    whole = path.read_bytes()
    assert readable_prefix(whole) == (readable_prefix(whole)[0], None)
    assert len(readable_prefix(whole)[0]) == 7
    torn = whole + b'{"seq":7,"ts":"2026-01-01T00:00:00Z","type":"turn/st'
    events, stop = readable_prefix(torn)
    assert len(events) == 7 and stop == len(whole)
    lines = whole.splitlines(keepends=True)
    bad = b"".join([*lines[:3], b"not json\n", *lines[4:]])
    events, stop = readable_prefix(bad)
    assert len(events) == 3 and stop == len(b"".join(lines[:3]))
    path.write_bytes(torn)
    repaired = EventLog.for_scan(path, scan_log(path))
    repaired.append("turn/start", {"input": "again"}, turn=3)
    repaired.close()
    events, stop = readable_prefix(path.read_bytes())
    assert stop is None and [e.type for e, _ in events[-2:]] == ["session/recover", "turn/start"]


def test_complete_last_line_without_newline_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "s.events.jsonl"
    log = EventLog(path)
    write_turns(log, 1)
    log.close()
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    scan = scan_log(path)
    assert len(scan.events) == 4 and scan.missing_newline
    log2 = EventLog.for_scan(path, scan)
    log2.append("turn/start", {"input": "next"}, turn=2)
    log2.close()
    assert [e.seq for e in scan_log(path).events] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    "bad",
    [b"not json at all", b'{"seq": 2}', b"[1,2,3]", b'{"seq":2,"ts":"x","type":"nope","data":{}}'],
)
def test_bad_line_in_middle_opens_read_only_up_to_it(tmp_path: Path, bad: bytes) -> None:
    path = tmp_path / "s.events.jsonl"
    log = EventLog(path)
    write_turns(log, 2)
    log.close()
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = bad + b"\n"
    path.write_bytes(b"".join(lines))
    scan = scan_log(path)
    assert [e.seq for e in scan.events] == [0, 1]
    assert scan.read_only_reason is not None
    assert "line 3" in scan.read_only_reason
    assert path.read_bytes() == b"".join(lines)  # nothing rewritten
    ro = EventLog.for_scan(path, scan)
    with pytest.raises(LogError):
        ro.append("turn/start", {"input": "x"}, turn=9)


def test_duplicate_and_out_of_order_seq_are_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.events.jsonl"
    log = EventLog(path)
    write_turns(log, 1)
    log.close()
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(2, lines[1])  # duplicate seq 1
    path.write_bytes(b"".join(lines))
    scan = scan_log(path)
    assert [e.seq for e in scan.events] == [0, 1]
    assert scan.read_only_reason is not None and "seq 1 where 2" in scan.read_only_reason


def test_refuses_to_write_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    link = tmp_path / "s.events.jsonl"
    link.symlink_to(target)
    log = EventLog(link)
    with pytest.raises(LogError, match="symlink"):
        log.append("session/start", {"session_id": "abcdef012345"})
    assert target.read_text() == "keep me"


def test_invalid_event_is_rejected_before_writing(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s.events.jsonl")
    with pytest.raises(ValueError):
        log.append("turn/end", {"reason": "bored"}, turn=1)
    assert log.next_seq == 0 and log.size == 0


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_truncation_at_any_byte_never_crashes_and_keeps_whole_lines(
    tmp_path_factory: pytest.TempPathFactory, cut: int
) -> None:
    path = tmp_path_factory.mktemp("trunc") / "s.events.jsonl"
    log = EventLog(path)
    write_turns(log, 6)
    log.close()
    data = path.read_bytes()
    cut = min(cut, len(data))
    path.write_bytes(data[:cut])
    scan = scan_log(path)
    whole_lines = data[:cut].count(b"\n")
    assert len(scan.events) in (whole_lines, whole_lines + 1)
    assert scan.read_only_reason is None
    for event, line in zip(scan.events, data.splitlines(), strict=False):
        assert orjson.loads(line)["seq"] == event.seq


def test_partial_write_is_repaired_on_next_append(tmp_path: Path) -> None:
    path = tmp_path / "s.events.jsonl"
    log = EventLog(path)
    write_turns(log, 1)
    # Simulate a write that failed half-way (disk full): half a line is on disk.
    start = log.offset
    os.write(log._fd, b'{"seq":4,"ts"')  # type: ignore[arg-type]
    log.offset += 13
    log._torn_tail = (start, 13)
    log.append("turn/start", {"input": "after"}, turn=2)
    log.close()
    scan = scan_log(path)
    assert scan.read_only_reason is None
    assert [e.type for e in scan.events[-2:]] == ["session/recover", "turn/start"]


class _DiskFull:
    """`os.write` that stores `room` more bytes, then fails with ENOSPC (as a full disk)."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.real = os.write

    def __call__(self, fd: int, data: bytes | memoryview) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = self.real(fd, bytes(data[: self.room]))
        self.room -= written
        return written


def test_a_write_refused_half_way_leaves_no_partial_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.events.jsonl"
    log = EventLog(path)
    write_turns(log, 1)
    size = path.stat().st_size
    monkeypatch.setattr(os, "write", _DiskFull(room=10))
    with pytest.raises(LogError, match="No space left on device") as caught:
        log.append("turn/start", {"input": "lost"}, turn=2)
    assert caught.value.errno == errno.ENOSPC and str(path) in str(caught.value)
    assert path.stat().st_size == size == log.offset  # the 10 bytes were cut off again
    monkeypatch.undo()  # space returns
    log.append("turn/start", {"input": "kept"}, turn=2)
    log.close()
    scan = scan_log(path)
    assert scan.problems == [] and scan.read_only_reason is None
    assert [e.seq for e in scan.events] == list(range(5))
    assert scan.events[-1].data.input == "kept"  # type: ignore[union-attr]


def test_a_failed_fsync_still_reports_the_written_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = EventLog(tmp_path / "s.events.jsonl")
    log.append("session/start", {"session_id": "abcdef012345"})
    log.append("turn/start", {"input": "q"}, turn=1)

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(LogError) as caught:
        log.append("turn/end", {"reason": "completed"}, turn=1)
    assert caught.value.written is not None and caught.value.written.seq == 2
    assert log.next_seq == 3  # in the file: the next event must not reuse its seq


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(min_value=0, max_value=10_000), bad_line=st.integers(0, 30))
def test_streaming_a_log_yields_the_readable_prefix_a_scan_finds(
    tmp_path_factory: pytest.TempPathFactory, cut: int, bad_line: int
) -> None:
    """`iter_log` (a replay, one line in memory at a time) stops where `scan_log` does."""
    path = tmp_path_factory.mktemp("stream") / "s.events.jsonl"
    log = EventLog(path)
    write_turns(log, 6)
    log.close()
    lines = path.read_bytes().splitlines(keepends=True)
    if bad_line < len(lines):
        lines[bad_line] = b'{"seq": "not a number"}\n'
    data = b"".join(lines)
    path.write_bytes(data[: min(cut, len(data))])
    streamed = [e.model_dump() for e in iter_log(path)]
    scanned = scan_log(path).events
    assert streamed == [e.model_dump() for e in scanned]
    ends = frozenset({"turn/end"})  # the quick pass: only these validated, the prefix the same
    quick = [e.model_dump() for e in iter_log(path, ends)]
    assert quick == [e.model_dump() for e in scanned if e.type == "turn/end"]


def test_streaming_a_log_that_is_no_regular_file_yields_nothing(tmp_path: Path) -> None:
    target = tmp_path / "real.events.jsonl"
    log = EventLog(target)
    write_turns(log, 1)
    log.close()
    link = tmp_path / "link.events.jsonl"
    link.symlink_to(target)
    fifo = tmp_path / "fifo.events.jsonl"
    os.mkfifo(fifo)
    assert list(iter_log(link)) == [] and list(iter_log(fifo)) == []
    assert list(iter_log(tmp_path / "missing.events.jsonl")) == []
    assert len(list(iter_log(target))) == 4
