"""The offline spool: a session's events kept in a local file while the database is away.

`<store root>/spool/<project>/<session>.events.jsonl` holds, in the local log's line format
and with its durability (one `write()` per event, an `fsync` at durable points), the events
PostgreSQL did not take, numbered where the database's log left off. When the database is
back they are appended there in order (`SessionWriter.copy`: their seqs must continue the
session's exactly) and the file is deleted. A process killed while spooling leaves the
file: the next open of the session, or the next start of a server for the project,
replays it first. Events in the spool are scrubbed as they would be in the database.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..log.writer import EventLog
from ..paths import is_valid_session_id
from ..redaction import Redactor
from ..storage import ensure_private_dir, fsync_dir, unlink_quiet

logger = logging.getLogger(__name__)

SPOOL_DIR = "spool"
_SUFFIX = ".events.jsonl"


def spool_dir(home: Path, project: str) -> Path:
    """Return `<home>/spool/<project>`."""
    return home / SPOOL_DIR / project


class Spool:
    """The spooled events of one session."""

    def __init__(self, directory: Path, session_id: str, redactor: Redactor) -> None:
        if not is_valid_session_id(session_id):
            raise ValueError(f"invalid session id {session_id!r}")
        self.directory = directory
        self.path = directory / f"{session_id}{_SUFFIX}"
        self.redactor = redactor
        self._log: EventLog | None = None

    @property
    def exists(self) -> bool:
        """Return True if the file holds (or held) events not yet in the database."""
        return self.path.is_file()

    def write(self, raws: Sequence[Mapping[str, Any]], *, durable: bool) -> None:
        """Append events (numbered, not yet scrubbed); fsync if `durable`. Raises `LogError`."""
        if not raws:
            return
        if self._log is None:
            ensure_private_dir(self.directory.parent.parent)
            ensure_private_dir(self.directory.parent)
            ensure_private_dir(self.directory)
            fresh = not self.path.exists()
            self._log = EventLog(self.path, next_seq=int(raws[0]["seq"]), redactor=self.redactor)
            if fresh:
                self._log.append_raw(b"", int(raws[0]["seq"]))  # create it...
                fsync_dir(self.directory)  # ...and its name survives a crash
        lines = b"".join(
            orjson.dumps(
                {**raw, "data": self.redactor.scrub(dict(raw["data"]))}, option=orjson.OPT_UTC_Z
            )
            + b"\n"
            for raw in raws
        )
        self._log.append_raw(lines, int(raws[-1]["seq"]) + 1)
        if durable:
            self._log.sync()

    def read(self) -> list[dict[str, Any]]:
        """Return the spooled events, in order (a torn last line, from a crash, is left out)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        events: list[dict[str, Any]] = []
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                break  # only the last line can be torn: nothing after it was written
            if isinstance(value, dict):
                events.append(value)
        return events

    def close(self) -> None:
        """Fsync and close the file (it stays until replayed)."""
        if self._log is not None:
            self._log.close()
            self._log = None

    def remove(self) -> None:
        """Delete the file once its events are in the database."""
        self.close()
        if unlink_quiet(self.path):
            fsync_dir(self.directory)


def spooled_sessions(directory: Path) -> Iterator[str]:
    """Yield the ids of the sessions with a spool file in `directory`."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in sorted(names):
        session_id = name.removesuffix(_SUFFIX)
        if name.endswith(_SUFFIX) and is_valid_session_id(session_id):
            yield session_id
