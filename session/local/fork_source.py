"""What a fork copies from a local session: its readable events and their lines, byte for byte."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

from ..errors import SessionError
from ..log.reader import readable_events

if TYPE_CHECKING:
    from ..events import Event
    from .layout import ProjectLayout


def local_fork_source(layout: ProjectLayout, session_id: str) -> tuple[list[Event], list[bytes]]:
    """Read a session's log file: its readable events and their lines, byte for byte."""
    parent_log = layout.log_path(session_id)
    layout.check_store_dirs()
    try:
        fd = os.open(parent_log, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise SessionError(f"{parent_log.name} is not a regular file")
            raw = fh.read()
    except FileNotFoundError:
        raise SessionError(f"no session {session_id} in this project") from None
    except OSError as exc:  # a symlink (ELOOP) is never followed
        raise SessionError(f"cannot read {parent_log.name}: {exc.strerror or exc}") from None
    # What a reader sees: torn writes a crash left and recovery acknowledged are skipped.
    readable = readable_events(raw)
    return [event for event, _ in readable], [line for _, line in readable]
