"""The resume's finds, started before the snapshot is read, from a hint the last scan left.

A resume of a large project reads its snapshot (~60 ms at 100,000 files) and only then
knows what its finds need: when the previous manifest was recorded and how to split the
tree between two finds. Those few values are kept beside the store after each recorded
scan (the *scan hint*, a small file on this machine), so the finds can start first and
walk the tree while the snapshot is parsed.

The hint is only a guess. A prefetched find is used only if it is exactly the find the
scan would start itself (same start, same previous `recorded_ns`, same split) and was
started moments ago; any other is stopped, and the scan runs its own. A manifest built
with one is recorded as of the moment the finds were asked for, before find looked at
anything, so the next scan looks again at whatever changed since. A hint that is missing,
damaged or tampered with costs nothing but the gain.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from ..storage import StorageError, ensure_private_dir, read_json_file
from .find import (
    _NANOS,
    FIND_MIN_FILES,
    RunningFinds,
    proven_find,
    split_subtrees,
    start_finds,
    trust_proven_find,
)
from .manifest import Manifest, children_index
from .patterns import TrackedPatterns
from .safe_paths import is_lexically_safe

HINT_VERSION = 1
MAX_AGE_NS = 5 * _NANOS  # older than this (e.g. the resume question was open), not used
_MAX_HINT_BYTES = 1 << 20
_FILE_MODE = 0o600

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScanHint:
    """What the next scan's finds need: the manifest's `recorded_ns` and split per start."""

    recorded_ns: int
    patterns: tuple[str, ...]
    splits: dict[str, list[str]]  # walk start -> subtrees for a second find ([]: one find)
    # (PATH, find, its stat key): proved GNU find by the process that wrote the hint
    find: tuple[str, str, list[int]] | None = None


def scanned_starts(patterns: TrackedPatterns) -> list[str]:
    """Return the walk roots a scan may run find on (not single named paths)."""
    return [root for root in patterns.walk_roots() if "\x00" not in root]


def scan_hint(manifest: Manifest) -> ScanHint | None:
    """Return the hint for the scan that will start from `manifest` (None: it runs no find)."""
    if not manifest.dirs or manifest.file_count() < FIND_MIN_FILES:
        return None
    listing, _ = children_index(manifest)
    starts = scanned_starts(TrackedPatterns(manifest.patterns))
    splits = {start: split_subtrees(start, listing) for start in starts if start in listing}
    if not splits:
        return None
    return ScanHint(manifest.recorded_ns, manifest.patterns, splits, proven_find())


def _hint_start_ok(start: object) -> bool:
    return start == "" or is_lexically_safe(start)


def _parse_hint(data: object) -> ScanHint | None:
    if not isinstance(data, dict) or data.get("version") != HINT_VERSION:
        return None
    recorded_ns, patterns, splits = data.get("recordedNs"), data.get("patterns"), data.get("splits")
    if type(recorded_ns) is not int or recorded_ns <= 0:
        return None
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        return None
    if not isinstance(splits, dict):
        return None
    parsed: dict[str, list[str]] = {}
    for start, second in splits.items():
        if not _hint_start_ok(start) or not isinstance(second, list):
            return None
        prefix = f"{start}/" if start else ""
        for subdir in second:
            if not isinstance(subdir, str) or not subdir.startswith(prefix):
                return None
            if not is_lexically_safe(subdir):
                return None
        parsed[start] = second
    return ScanHint(recorded_ns, tuple(patterns), parsed, _parse_find(data.get("find")))


def _parse_find(data: object) -> tuple[str, str, list[int]] | None:
    """Return a hint's proven find (PATH, absolute path, stat key), or None."""
    if not isinstance(data, list) or len(data) != 3:
        return None
    search_path, exe, key = data
    if not isinstance(search_path, str) or not isinstance(exe, str) or not exe.startswith("/"):
        return None
    if not isinstance(key, list) or len(key) != 5 or any(type(k) is not int for k in key):
        return None
    return search_path, exe, key


def read_hint(path: Path) -> ScanHint | None:
    """Read a scan hint; None if there is none or it is not one we wrote (never raises)."""
    try:
        return _parse_hint(read_json_file(path, _MAX_HINT_BYTES))
    except (OSError, ValueError):  # missing, not a small plain file, not JSON
        return None


def write_hint(path: Path, hint: ScanHint | None) -> None:
    """Replace the hint at `path` (None: remove it), in a directory that already exists.

    A cache, not a record: no fsync (a hint torn by a crash is read as none), and a
    failure is only logged.
    """
    try:
        if hint is None:
            if os.path.lexists(path):
                os.unlink(path)
            return
        ensure_private_dir(path.parent)  # refuses a symlink: nothing is written through one
        payload = orjson.dumps(
            {
                "version": HINT_VERSION,
                "recordedNs": hint.recorded_ns,
                "patterns": list(hint.patterns),
                "splits": hint.splits,
                "find": None if hint.find is None else list(hint.find),
            }
        )
        tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, _FILE_MODE)
        try:
            os.write(fd, payload)
        finally:
            os.close(fd)
        os.replace(tmp, path)  # replaces a symlink planted at `path`; never follows it
    except (OSError, StorageError) as exc:
        logger.debug("scan hint %s not written: %s", path, exc)


class Prefetch:
    """The finds of a hint, running; the scan takes the one it would start itself.

    They are started from a worker thread: starting a process holds its caller until the
    child runs `exec`, and with the first find busy on one core the second child may wait
    milliseconds for a CPU; the snapshot is read meanwhile (the wait holds no GIL).
    """

    def __init__(self, root: Path, hint: ScanHint, patterns: TrackedPatterns) -> None:
        self._runs: dict[tuple[str, int, tuple[str, ...]], RunningFinds] = {}
        self._starting: threading.Thread | None = None
        if hint.patterns != patterns.patterns:
            return  # another configuration: its scan would walk other roots
        if hint.find is not None:
            trust_proven_find(*hint.find)
        starts = scanned_starts(patterns)
        walks = [(start, hint.splits[start]) for start in starts if start in hint.splits]
        if walks:
            self._starting = threading.Thread(
                target=self._start,
                args=(str(root), hint.recorded_ns, walks, time.time_ns()),
                name="find prefetch",
                daemon=True,
            )
            self._starting.start()

    def _start(
        self, root: str, recorded_ns: int, walks: list[tuple[str, list[str]]], asked_ns: int
    ) -> None:
        try:
            for start, second in walks:
                running = start_finds(
                    root, start, recorded_ns, second, spooled=True, asked_ns=asked_ns
                )
                if running is not None:
                    self._runs[(start, recorded_ns, tuple(second))] = running
        except Exception:  # the scan runs its own finds
            logger.exception("prefetched finds not started")

    @property
    def runs(self) -> dict[tuple[str, int, tuple[str, ...]], RunningFinds]:
        """Return the finds started, by (walk start, previous `recorded_ns`, split)."""
        if self._starting is not None:
            self._starting.join()
            self._starting = None
        return self._runs

    def take(self, start: str, previous_ns: int, second: Sequence[str]) -> RunningFinds | None:
        """Return the finds started for exactly this walk, if started moments ago."""
        running = self.runs.pop((start, previous_ns, tuple(second)), None)
        if running is not None and time.time_ns() - running.started_ns > MAX_AGE_NS:
            running.cancel()
            return None
        return running

    def close(self) -> None:
        """Stop the finds nobody took (and reap them)."""
        runs = self.runs
        while runs:
            runs.popitem()[1].cancel()
