"""Diff-and-ask before the model's file edits are written (the terminal's `applyEdit`).

An editor gives the user an undo for the model's edit; the terminal shows the unified
diff first and asks: yes (once), always (for the rest of this chat), or no. `--yes`
(or AGENT_ASSIST_APPROVE_EDITS=1) writes without asking, except into `.git`: a file there
(which the server writes only after the user allowed the protected write) is shown and asked
about each time, and refused when no one can answer.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from session.terminal_text import inert

from ..client import PlannedWrite

if TYPE_CHECKING:
    from .chat_types import Asker

MAX_DIFF_LINES = 400
QUESTION = "Write it? [y]es / [a]lways this chat / [n]o: "
ONE_YES = "Write it? [y]es / [n]o: "  # into .git: never approved for the chat
REJECTED = "the user rejected the edit in the terminal"
NO_ONE_ASKED = "input is not a terminal: no one can approve the edit"


def unified_diff(write: PlannedWrite) -> list[str]:
    """Return the unified diff of one planned write, without line ends."""
    before = (write.before or "").splitlines(keepends=True)
    after = write.after.splitlines(keepends=True)
    old = "/dev/null" if write.before is None else f"a/{write.relative}"
    lines = difflib.unified_diff(before, after, old, f"b/{write.relative}")
    return [line.rstrip("\n") for line in lines]


def diff_style(line: str) -> str:
    """Return the colour of a diff line."""
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "cyan"
    return ""


class EditReview:
    """Asks before each edit, unless approved for the whole chat."""

    def __init__(self, chat: Asker, *, approve_all: bool = False) -> None:
        self.chat = chat
        self.approve_all = approve_all
        self._user_asked = 0

    @contextlib.contextmanager
    def asked_by_user(self) -> Iterator[None]:
        """Write without asking while a command the user typed runs (a checkpoint restore)."""
        self._user_asked += 1
        try:
            yield
        finally:
            self._user_asked -= 1

    def show(self, writes: list[PlannedWrite]) -> None:
        """Print the diff of every file, coloured; the model's text is made inert."""
        from rich.text import Text

        console = self.chat.console
        shown = 0
        for write in writes:
            lines = unified_diff(write)
            if not lines:
                self.chat.say(f"  {write.relative}: no change", "dim")
                continue
            for line in lines:
                if shown == MAX_DIFF_LINES:
                    rest = sum(len(unified_diff(w)) for w in writes) - shown
                    self.chat.say(f"  … {rest} more diff lines not shown", "dim")
                    return
                console.print(Text(inert(line), style=diff_style(line)), soft_wrap=True)
                shown += 1

    async def __call__(self, writes: list[PlannedWrite], label: str) -> str | None:
        """Return None to write the edit, else the reason it is refused."""
        chat = self.chat
        chat.flush_reply()
        names = ", ".join(w.relative for w in writes) or "nothing"
        git = [w.relative for w in writes if w.in_git]
        if self._user_asked and not git:
            return None
        if self.approve_all and not git:
            chat.say(f"✎ writing {names} (approved for this chat)", "dim")
            return None
        chat.say(f"✎ The model wants to write {names}:", "bold")
        if git:  # never approved in advance: its own yes, to its diff, each time
            chat.warn(f"{', '.join(git)}: inside .git, where git runs what config and hooks say.")
        self.show(writes)
        if not chat.reader.interactive:
            chat.warn(f"Not written: {NO_ONE_ASKED}.")
            return NO_ONE_ASKED
        question = ONE_YES if git else QUESTION
        while True:
            try:
                answer = await chat.read(question)
            except (EOFError, KeyboardInterrupt):
                answer = "n"
            answer = answer.strip().lower()
            if answer in ("y", "yes"):
                return None
            if answer in ("a", "always") and not git:
                self.approve_all = True
                chat.say("Edits are written without asking for the rest of this chat.", "dim")
                return None
            if answer in ("n", "no"):
                chat.warn(f"Rejected: {names} not written.")
                return REJECTED
            chat.say("Please answer y or n." if git else "Please answer y, a or n.", "dim")
