"""Drawing the chat: the streamed reply (spinner, then live Markdown) and plain-text tables.

What the model or the store wrote is made inert first (`session.terminal_text`): its
control characters are shown, never obeyed, and a Markdown link shows its target.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from session.terminal_text import inert

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.live import Live


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


class StreamedMarkdown:
    """Markdown of text that keeps growing; parsed only when the screen is refreshed."""

    def __init__(self) -> None:
        self.text = ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield markdown(self.text)


class ReplyView:
    """One streamed reply: a spinner until the first delta, then live Markdown."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.body = StreamedMarkdown()
        self.live: Live | None = None
        self._showing_text = False
        self._printed = False

    @property
    def text(self) -> str:
        """Return the text streamed so far."""
        return self.body.text

    def start(self) -> None:
        """Show the spinner (refreshed ten times a second by rich)."""
        from rich.live import Live
        from rich.spinner import Spinner

        if not self.console.is_terminal:
            return  # piped output: the reply is printed once, when it is complete
        self.live = Live(
            Spinner("dots", text="Thinking…", style="cyan"),
            console=self.console,
            refresh_per_second=10,
            vertical_overflow="visible",
        )
        self.live.start()

    def delta(self, text: str) -> None:
        """Append streamed text; the next refresh shows it."""
        self.body.text += text
        if self.live is not None and not self._showing_text:
            self._showing_text = True
            self.live.update(self.body, refresh=True)

    def restart(self) -> None:
        """Drop the partial reply (the server retries; its deltas start over)."""
        from rich.spinner import Spinner

        self.body.text = ""
        if self.live is not None and self._showing_text:
            self._showing_text = False
            self.live.update(Spinner("dots", text="Retrying…", style="cyan"), refresh=True)

    def stop(self, final: str | None = None) -> None:
        """Render the final text and release the terminal."""
        from rich.text import Text

        if final and not self.body.text.strip():
            self.body.text = final
        if self.live is not None:
            self.live.update(self.body if self.body.text else Text(""), refresh=True)
            self.live.stop()
            self.live = None
        elif self.body.text and not self._printed:
            self.console.print(self.body)
        self._printed = True


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
