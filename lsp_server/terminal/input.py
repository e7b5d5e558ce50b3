"""Reading the user's lines: prompt-toolkit on a terminal, a plain reader on a pipe."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Protocol


class LineReader(Protocol):
    """Reads one line of user input; raises EOFError (Ctrl+D) or KeyboardInterrupt (Ctrl+C)."""

    interactive: bool  # a person at a terminal answers (not lines from a pipe or file)

    async def read(self, prompt: str) -> str:
        """Show `prompt` and return the line typed."""
        ...


class PromptReader:
    """prompt-toolkit input with in-memory history (nothing is written outside the store)."""

    interactive = True

    def __init__(self) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import InMemoryHistory

        self.session: PromptSession[str] = PromptSession(history=InMemoryHistory())

    async def read(self, prompt: str) -> str:
        """Show `prompt` and return the line typed; what is printed meanwhile goes above it."""
        from prompt_toolkit.patch_stdout import patch_stdout

        with patch_stdout(raw=True):
            return await self.session.prompt_async(prompt)


class PlainReader:
    """Line input from a pipe or file (no terminal): a daemon thread feeds a queue."""

    interactive = False

    def __init__(self) -> None:
        self._queue: asyncio.Queue[str | None] | None = None

    def _start(self) -> asyncio.Queue[str | None]:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def pump() -> None:
            for line in sys.stdin:
                loop.call_soon_threadsafe(queue.put_nowait, line.rstrip("\n"))
            loop.call_soon_threadsafe(queue.put_nowait, None)

        threading.Thread(target=pump, name="stdin", daemon=True).start()
        return queue

    async def read(self, prompt: str) -> str:
        """Show `prompt` and return the next line; EOFError at the end of input."""
        if self._queue is None:
            self._queue = self._start()
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = await self._queue.get()
        if line is None:
            self._queue.put_nowait(None)
            sys.stdout.write("\n")
            raise EOFError
        sys.stdout.write(line + "\n")
        return line
