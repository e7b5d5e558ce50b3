"""How the server process ends: one way out, prompt in every state.

Every ending (`exit`, end of input, a broken stdout, the editor process gone, SIGTERM,
SIGINT, SIGHUP) goes through `AgentAssistServer.finish`: output to the client stops,
in-flight requests are cancelled and given a moment to record how their turn ended, the
session is autosaved, and the process exits with `os._exit` (never `sys.exit` inside a
callback, which unwinds into the event loop while other tasks keep running). A watchdog
thread ends the process regardless once the deadline passes, so a wedged loop, a thread
stuck in a tool or a slow disk cannot keep it alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable
from typing import BinaryIO

logger = logging.getLogger(__name__)

GRACE_SECONDS = 0.5  # what in-flight work gets to record its end
DEADLINE_SECONDS = 1.5  # from the ending to a hard exit, whatever is still running
WATCH_INTERVAL = 0.25  # how often the client's liveness is checked
# The signals that end the server through `finish`. SIGHUP is what an editor quitting
# without `shutdown` (Emacs) and a closed terminal send; Windows has none.
ENDING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name)
)


def hard_exit(code: int) -> None:
    """Flush what logging holds for stderr and end the process at once."""
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    os._exit(code)


def start_watchdog(code: int, why: str, deadline: float = DEADLINE_SECONDS) -> None:
    """End the process `deadline` seconds from now if the orderly way out has not."""

    def watch() -> None:
        time.sleep(deadline)
        with contextlib.suppress(Exception):
            sys.stderr.write(f"agent-assist: stopping ({why}) took over {deadline:g} s; exiting\n")
        hard_exit(code)

    threading.Thread(target=watch, name="exit-watchdog", daemon=True).start()


def process_alive(pid: int) -> bool:
    """Return True if a process with `pid` exists (ours to signal or not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def output_broken(stream: BinaryIO) -> bool:
    """Return True if the reading end of `stream` (a pipe or socket) is gone."""
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError):
        return True
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)) or not hasattr(select, "poll"):
        return False  # a file or terminal; or no poll() (Windows): end of input must do
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


async def watch_client(
    editor_pid: int | None, stdout: BinaryIO | None, on_gone: Callable[[str], None]
) -> None:
    """Call `on_gone` once the editor process or the reader of our stdout is gone.

    End of input is the usual sign (the reader loop sees it); this covers an editor whose
    pipe is still held open by someone else, and a stdout closed while stdin is not. The
    editor's pid is only watched if it existed when we started: in a container or a remote
    session it may name a process we cannot see.
    """
    if editor_pid is not None and (editor_pid <= 0 or not process_alive(editor_pid)):
        editor_pid = None
    while True:
        await asyncio.sleep(WATCH_INTERVAL)
        if editor_pid is not None and not process_alive(editor_pid):
            on_gone(f"the editor process {editor_pid} ended")
            return
        if stdout is not None and output_broken(stdout):
            on_gone("the editor closed the connection")
            return
