"""Drawing the chat: the streamed reply (printed a complete block at a time) and tables.

What the model or the store wrote is made inert first (`session.terminal_text`): its
control characters are shown, never obeyed, and a Markdown link shows its target.
"""

from __future__ import annotations

import io
import json
import time
from typing import TYPE_CHECKING, Any

from session.terminal_text import inert

from .blocks import complete_blocks

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def plural(count: int, noun: str) -> str:
    """Return `1 turn`, `2 turns`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def args_summary(args: Any, limit: int = 60) -> str:
    """Return a tool call's arguments in a few words: its path, or clipped JSON."""
    if isinstance(args, dict) and isinstance(args.get("path"), str):
        return str(args["path"])
    text = json.dumps(args, ensure_ascii=False) if args else ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def markdown(text: str) -> RenderableType:
    """Return Markdown of model text: escapes shown, links as `text (url)`, never OSC 8."""
    from rich.markdown import Markdown

    return Markdown(inert(text), hyperlinks=False)


def to_ansi(console: Console, renderable: RenderableType, width: int) -> str:
    """Render for a screen region `width` columns wide, in the console's colours."""
    from rich.console import Console

    out = io.StringIO()
    Console(
        file=out,
        width=max(width, 20),
        force_terminal=True,
        color_system=console.color_system or None,  # type: ignore[arg-type]
        no_color=console.no_color,
        highlight=False,
        soft_wrap=False,
    ).print(renderable)
    return out.getvalue()


class ReplyView:
    """One streamed reply: complete Markdown blocks printed once, the growing one live.

    Printed blocks stay where they are (scrolling, resizing and Ctrl+C leave them once);
    `live_lines` draws the unfinished block and a spinner, for the prompt to show.
    """

    def __init__(self, console: Console, *, label: str = "Thinking…") -> None:
        self.console = console
        self.text = ""
        self.label = label
        self._printed = 0  # how much of `text` is printed for good
        self._blocks = 0
        self.done = False

    def delta(self, text: str) -> None:
        """Append streamed text; print the blocks it completes."""
        self.text += text
        self.label = "Replying… (Ctrl+C stops)"
        blocks, rest = complete_blocks(self.text[self._printed :])
        for block in blocks:
            self._print(block)
        self._printed += rest

    def _print(self, block: str) -> None:
        if self._blocks:
            self.console.print()
        self.console.print(markdown(block), soft_wrap=False)
        self._blocks += 1

    def flush(self) -> None:
        """Print the unfinished block now (a tool call or a question comes after it)."""
        rest = self.text[self._printed :].strip("\n")
        if rest.strip() and not self.done:
            self._print(rest)
            self._printed = len(self.text)

    def restart(self) -> None:
        """Drop the unprinted part (the server retries; its deltas start over)."""
        if self._printed:
            self.console.print("  (the answer above was cut off; it starts over below)")
        self.text = ""
        self._printed = 0
        self._blocks = 0
        self.label = "Retrying…"

    def stop(self, final: str | None = None) -> None:
        """Print what is not printed yet, once; later calls do nothing."""
        if self.done:
            return
        self.done = True
        if final and not self.text.strip():
            self.text = final
        rest = self.text[self._printed :].strip("\n")
        if rest.strip():
            self._print(rest)
        self._printed = len(self.text)

    def live_lines(self, width: int, height: int) -> str:
        """Return the unfinished block's last `height` rows and the spinner, as ANSI text."""
        frame = SPINNER[int(time.monotonic() * 10) % len(SPINNER)]
        spinner = f"\x1b[36m{frame} {self.label}\x1b[0m\n"
        rest = self.text[self._printed :].strip("\n")
        if not rest.strip() or self.done:
            return spinner
        if self._blocks:
            rest = "\n" + rest
        rows = to_ansi(self.console, markdown(rest), width).rstrip("\n").split("\n")
        return "\n".join(rows[-max(height, 1) :]) + "\n" + spinner


def table(title: str, columns: list[str], rows: list[list[str]]) -> RenderableType:
    """Build a table whose cells are plain text (never markup: snippets hold `[`…`]`)."""
    from rich.table import Table
    from rich.text import Text

    grid = Table(title=Text(inert(title)))
    for column in columns:
        grid.add_column(column, overflow="fold")
    for row in rows:
        grid.add_row(*(Text(inert(cell)) for cell in row))
    return grid


def short_time(iso: str) -> str:
    """Return `YYYY-MM-DD HH:MM` of an ISO timestamp (UTC as written by the server)."""
    return iso.replace("T", " ")[:16]
