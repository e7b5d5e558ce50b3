"""Reading the user's lines: prompt-toolkit on a terminal, a plain reader on a pipe.

On a terminal the prompt stays up while a reply streams: its message (a function) draws
the reply's unfinished block, the queued messages and the spinner above the input line.
Enter sends, Alt+Enter (or Esc then Enter) starts a new line, a paste stays one message.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Protocol

# What a prompt shows: fixed text, or a function of nothing returning ANSI text.
Message = str | Callable[[], str]


@contextlib.contextmanager
def typed_ahead_unechoed() -> Iterator[None]:
    """Keep what is typed while no prompt runs from being echoed into the output.

    The terminal would print it where the chat is printing (a spinner, a reply); it waits
    in the input instead and the next prompt shows it. prompt-toolkit's raw mode comes and
    goes on top of this; the terminal's own mode comes back at the end.
    """
    import termios

    try:
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except (OSError, ValueError, termios.error):
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | termios.ECHONL)
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


class LineReader(Protocol):
    """Reads one line of user input; raises EOFError (Ctrl+D) or KeyboardInterrupt (Ctrl+C)."""

    interactive: bool  # a person at a terminal answers (not lines from a pipe or file)

    async def read(self, prompt: Message) -> str:
        """Show `prompt` and return the line typed."""
        ...

    def redraw(self) -> None:
        """Draw the prompt's message again (it changed)."""
        ...

    def prefill(self, text: str) -> None:
        """Start the next prompt with `text` in its input line."""
        ...


class PromptReader:
    """prompt-toolkit input with in-memory history (nothing is written outside the store).

    The prompt erases itself when a line is accepted: the chat prints what was sent.
    """

    interactive = True

    def __init__(self) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import InMemoryHistory
        from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

        bindings = KeyBindings()

        @bindings.add("escape", "enter")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        self.session: PromptSession[str] = PromptSession(
            history=InMemoryHistory(),
            key_bindings=bindings,
            erase_when_done=True,
            refresh_interval=0.1,
            prompt_continuation="  ",
        )
        self._prefill = ""

    async def read(self, prompt: Message) -> str:
        """Show `prompt` and return the line typed; what is printed meanwhile goes above it."""
        from prompt_toolkit.formatted_text import ANSI
        from prompt_toolkit.patch_stdout import patch_stdout

        def message() -> ANSI:
            return ANSI(prompt() if callable(prompt) else prompt)

        default, self._prefill = self._prefill, ""
        with patch_stdout(raw=True):
            return await self.session.prompt_async(message, default=default)

    def redraw(self) -> None:
        """Draw the prompt again now (not at the next tick)."""
        if self.session.app.is_running:
            self.session.app.invalidate()

    def prefill(self, text: str) -> None:
        """Start the next prompt with `text` (the one running now, if it is still empty)."""
        buffer = self.session.app.current_buffer if self.session.app.is_running else None
        if buffer is not None and not buffer.text:
            buffer.insert_text(text)
        else:
            self._prefill = text


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

    async def read(self, prompt: Message) -> str:
        """Show `prompt` and return the next line; EOFError at the end of input."""
        if self._queue is None:
            self._queue = self._start()
        sys.stdout.write(prompt() if callable(prompt) else prompt)
        sys.stdout.flush()
        line = await self._queue.get()
        if line is None:
            self._queue.put_nowait(None)
            sys.stdout.write("\n")
            raise EOFError
        sys.stdout.write(line + "\n")
        return line

    def redraw(self) -> None:
        """Nothing is drawn live on a pipe."""

    def prefill(self, text: str) -> None:
        """Nothing can be edited on a pipe."""
