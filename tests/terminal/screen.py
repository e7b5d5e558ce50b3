"""A real terminal for the chat: tmux runs it in a pty of a given size; we read its screen.

Everything waits on what the screen shows (with a generous deadline), never on time.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.cli.conftest import REPO

DEADLINE = 90.0  # seconds: a loaded 2-core machine starts the server and the model slowly
TMUX = shutil.which("tmux")


class Terminal:
    """One `agent-assist chat` in a tmux pane; `text()` is its whole scrollback and screen."""

    def __init__(self, tmp_path: Path, columns: int, rows: int) -> None:
        number = sum(1 for _ in tmp_path.glob("tmux-*"))
        self.dir = tmp_path / f"tmux-{number}-{columns}x{rows}"  # a tmux server each
        self.dir.mkdir(parents=True)
        self.socket = self.dir / "sock"
        self.columns, self.rows = columns, rows
        self.started = False

    def _tmux(self, *args: str, check: bool = True) -> str:
        assert TMUX is not None
        done = subprocess.run(
            [TMUX, "-S", str(self.socket), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"tmux {args}: {done.stderr}")
        return done.stdout

    def start(self, workspace: Path, env: dict[str, str], *extra: str) -> None:
        """Run `agent-assist chat --workspace WORKSPACE EXTRA…` in a fresh pane."""
        argv = [sys.executable, "-m", "lsp_server.cli", "chat", "--workspace", str(workspace)]
        env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
        env["TERM"] = "xterm-256color"
        script = self.dir / "run.sh"
        # `env -i`: tmux's own environment (a COLUMNS of the shell that started it) stays out.
        pairs = [f"{k}={v}" for k, v in env.items()]
        command = shlex.join(["env", "-i", *pairs, *argv, *extra])
        script.write_text(f"cd {shlex.quote(str(REPO))}\nexec {command}\n")
        conf = self.dir / "tmux.conf"
        conf.write_text("set -g history-limit 50000\nset -g remain-on-exit on\nset -g status off\n")
        if self.started:
            self._tmux("kill-server", check=False)
        self._tmux(
            "-f", str(conf), "new-session", "-d", "-s", "chat",
            "-x", str(self.columns), "-y", str(self.rows), f"sh {shlex.quote(str(script))}",
        )  # fmt: skip
        self.started = True

    def text(self) -> str:
        """Return the scrollback and the screen, a row a line, trailing blanks dropped."""
        return self._tmux("capture-pane", "-p", "-t", "chat", "-S", "-", "-E", "-")

    def screen(self) -> str:
        """Return the screen only (no scrollback)."""
        return self._tmux("capture-pane", "-p", "-t", "chat")

    def rows_shown(self) -> list[str]:
        """Return the non-blank rows of scrollback and screen."""
        return [row.rstrip() for row in self.text().split("\n") if row.strip()]

    def wait(self, ready: Callable[[str], bool], what: str, timeout: float = DEADLINE) -> str:
        """Return the text once `ready(text)` holds; fail naming `what` after the deadline."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if ready(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"never saw {what}; the terminal shows:\n{text}")
            time.sleep(0.1)

    def wait_for(self, needle: str, timeout: float = DEADLINE, count: int = 1) -> str:
        """Return the text once `needle` shows (at least `count` times)."""
        return self.wait(lambda t: t.count(needle) >= count, repr(needle), timeout)

    def wait_prompt(self) -> str:
        """Return the text once the prompt waits for a line (the last row shown is `›`)."""
        return self.wait(lambda t: self.rows_shown()[-1:] == ["›"], "the prompt")

    def type(self, text: str) -> None:
        """Type text (literally, no Enter)."""
        self._tmux("send-keys", "-t", "chat", "-l", text)

    def key(self, *keys: str) -> None:
        """Press keys by tmux name: Enter, C-c, C-d, M-Enter."""
        self._tmux("send-keys", "-t", "chat", *keys)

    def line(self, text: str) -> None:
        """Type a line and Enter."""
        self.type(text)
        self.key("Enter")

    def paste(self, text: str) -> None:
        """Paste text as a terminal does (bracketed when the program asked for it)."""
        self._tmux("set-buffer", "-b", "paste", text)
        self._tmux("paste-buffer", "-p", "-d", "-b", "paste", "-t", "chat")

    def resize(self, columns: int, rows: int) -> None:
        """Resize the terminal (the program gets SIGWINCH)."""
        self._tmux("resize-window", "-t", "chat", "-x", str(columns), "-y", str(rows))

    def exit_status(self, timeout: float = DEADLINE) -> int:
        """Wait for the program to end; return its exit status."""
        deadline = time.monotonic() + timeout
        while True:
            dead, _, status = (
                self._tmux(
                    "display-message", "-p", "-t", "chat", "#{pane_dead} #{pane_dead_status}"
                )
                .strip()
                .partition(" ")
            )
            if dead == "1":
                return int(status or 0)
            if time.monotonic() > deadline:
                raise AssertionError(f"the chat did not end; the terminal shows:\n{self.text()}")
            time.sleep(0.1)

    def close(self) -> None:
        """Stop tmux (and the chat in it, if still running)."""
        if self.started:
            self._tmux("kill-server", check=False)
            self.started = False
