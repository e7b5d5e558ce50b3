"""The demo's narration: numbered steps, plain lines, what happened on disk, file contents."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from session.terminal_text import inert

if TYPE_CHECKING:
    from rich.console import Console


class Narrator:
    """Prints the demo's story; paths are shown relative to the demo directory."""

    def __init__(self, console: Console, root: Path) -> None:
        self.console = console
        self.root = root
        self.step = 0

    def heading(self, title: str) -> None:
        """Print a numbered step heading."""
        from rich.rule import Rule

        self.step += 1
        self.console.print()
        self.console.print(Rule(f"Step {self.step} · {title}", align="left", style="cyan"))

    def say(self, text: str, style: str | None = None) -> None:
        """Print plain text (no markup; control characters shown, not obeyed)."""
        self.console.print(inert(text), markup=False, style=style or "", highlight=False)

    def disk(self, text: str) -> None:
        """Print what happened on disk."""
        self.say(f"  on disk: {text}", "green")

    def show_file(self, path: Path) -> None:
        """Print a file's path and content, indented."""
        self.say(f"  {self.rel(path)}:", "green")
        for line in path.read_text(encoding="utf-8").splitlines():
            self.say(f"    | {line}")

    def rel(self, path: Path) -> str:
        """Return `path` relative to the demo directory."""
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)
