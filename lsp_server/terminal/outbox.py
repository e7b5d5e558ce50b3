"""Typing while a reply runs: the prompt stays up, lines wait in order until sent.

A line typed while the chat is busy is queued and shown above the prompt (`queued: …`),
never mixed into the spinner; `/withdraw` takes the queued lines back and `/clear`
clears the screen, both at once. The server's questions take the prompt over meanwhile:
the next line typed answers them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from typing import TYPE_CHECKING, Protocol

from session.terminal_text import inert

from .chat_types import Printer
from .render import SPINNER, plural

if TYPE_CHECKING:
    from .input import LineReader
    from .render import ReplyView

DIM, RESET = "\x1b[2m", "\x1b[0m"


def screen_size() -> tuple[int, int]:
    """Return the terminal's (columns, rows) as it is now."""
    for stream in (sys.__stdout__, sys.__stdin__):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            size = os.get_terminal_size(stream.fileno())  # type: ignore[union-attr]
            return size.columns, size.lines
    return 80, 24


def first_line(text: str, width: int) -> str:
    """Return a queued message in one row: its first line, clipped, with a line count."""
    lines = text.split("\n")
    more = f" (+{plural(len(lines) - 1, 'line')})" if len(lines) > 1 else ""
    head = inert(lines[0])
    room = max(width - len(more) - 10, 10)
    return (head if len(head) <= room else head[: room - 1] + "…") + more


class Prompted(Printer, Protocol):
    """What the prompt loop uses of the chat: the live reply, the reader, the line handler."""

    view: ReplyView | None
    reader: LineReader

    def install_signals(self) -> None:
        """Take the signals back (prompt-toolkit replaces SIGINT's handler)."""
        ...

    def interrupt(self) -> bool:
        """Cancel the running turn (True), or say that the chat should end (False)."""
        ...

    async def handle(self, line: str) -> bool:
        """Run one line; return True to leave."""
        ...


class Outbox:
    """The interactive prompt loop: reads lines, queues them, runs them one at a time."""

    def __init__(self, chat: Prompted) -> None:
        self.chat = chat
        self.queued: list[str] = []
        self.busy = False
        self.running = False
        self._wake = asyncio.Event()
        self._question: tuple[str, asyncio.Future[str | BaseException]] | None = None

    # -- what the prompt shows ------------------------------------------------------------

    def message(self) -> str:
        """Return the prompt's message: the live reply, the queue, the question or `› `."""
        width, rows = screen_size()
        parts: list[str] = []
        view = self.chat.view
        if view is not None:
            parts.append(view.live_lines(width - 1, max(rows - 6 - len(self.queued), 3)))
        elif self.busy:
            frame = SPINNER[int(time.monotonic() * 10) % len(SPINNER)]
            parts.append(f"\x1b[36m{frame} Working…{RESET}\n")
        for text in self.queued:
            parts.append(f"{DIM}queued: {first_line(text, width)}{RESET}\n")
        if self.queued:
            parts.append(f"{DIM}(sent in turn; /withdraw takes them back){RESET}\n")
        parts.append(self._question[0] if self._question is not None else "› ")
        return "".join(parts)

    # -- questions -----------------------------------------------------------------------

    async def question(self, prompt: str) -> str:
        """Ask through the running prompt; the next line typed is the answer."""
        future: asyncio.Future[str | BaseException] = asyncio.get_running_loop().create_future()
        self._question = (prompt, future)
        self.chat.reader.redraw()
        try:
            answer = await future
        finally:
            self._question = None
            self.chat.reader.redraw()
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def _answer(self, answer: str | BaseException) -> bool:
        if self._question is None or self._question[1].done():
            return False
        self._question[1].set_result(answer)
        return True

    # -- the loop ----------------------------------------------------------------------------

    async def run(self) -> int:
        """Read lines until the user leaves; return the exit code."""
        self.running = True
        worker = asyncio.ensure_future(self._work())
        reading: asyncio.Future[str | BaseException] | None = None
        try:
            while True:
                reading = asyncio.ensure_future(self._read())
                await asyncio.wait({reading, worker}, return_when=asyncio.FIRST_COMPLETED)
                if worker.done():
                    worker.result()  # its error ends the chat
                    return 0
                line = reading.result()
                if isinstance(line, BaseException):
                    if self._answer(line) or (
                        isinstance(line, KeyboardInterrupt) and self.chat.interrupt()
                    ):
                        continue
                    return 0
                if not self._answer(line) and self.submit(line):
                    return 0
        finally:
            self.running = False
            for task in (reading, worker):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    async def _read(self) -> str | BaseException:
        # Caught here: a KeyboardInterrupt leaving a task would stop the event loop.
        try:
            return await self.chat.reader.read(self.message)
        except (EOFError, KeyboardInterrupt) as exc:
            return exc
        finally:
            self.chat.install_signals()  # prompt-toolkit replaced the SIGINT handler

    def submit(self, line: str) -> bool:
        """Take a typed line: queue it, or run `/withdraw` and `/clear` at once; True: leave."""
        text = line.strip()
        if not text:
            return False
        name = (text[1:].split(maxsplit=1) or [""])[0].lower() if text.startswith("/") else ""
        if name in ("exit", "quit"):
            return True
        if name == "withdraw":
            self.withdraw()
        elif name == "clear":
            self.chat.console.clear()
        else:
            self.queued.append(text)
            self._wake.set()
        self.chat.reader.redraw()
        return False

    def withdraw(self) -> None:
        """Take back every queued line (not sent yet) into the input line, to edit or drop."""
        if not self.queued:
            self.chat.say("Nothing is queued.", "dim")
            return
        taken, self.queued = self.queued, []
        count = plural(len(taken), "queued message")
        self.chat.say(f"Withdrew {count} (back in the input line; Ctrl+U clears it).", "yellow")
        self.chat.reader.prefill("\n".join(taken))

    async def _work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.queued:
                text = self.queued.pop(0)
                self.busy = True
                try:
                    self.chat.say("› " + text.replace("\n", "\n  "), "bold")
                    await self.chat.handle(text)
                finally:
                    self.busy = False
                    self.chat.reader.redraw()
