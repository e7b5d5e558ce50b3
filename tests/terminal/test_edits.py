"""The model's file edits in the terminal: the diff first, then yes / always / no; --yes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI
from tests.cli.conftest import clean_env, model_env

from .screen import TMUX, Terminal

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

MakeTerminal = Callable[[int, int], Terminal]
QUESTION = "Write it? [y]es / [a]lways this chat / [n]o:"
SPEC = "# Support agent\nthree tools\n"


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def tool_results(fake: FakeOpenAI) -> list[str]:
    """Return the tool results the model was sent (in its last request)."""
    messages = fake.requests[-1].body.get("messages", [])
    return [str(m.get("content")) for m in messages if m.get("role") == "tool"]


def test_an_approved_edit_is_written_after_its_diff_was_shown(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    term = terminal(100, 40)
    term.start(workspace, clean_env(home, model_env(fake)))
    term.wait_prompt()
    fake.add(write("notes.txt", "hello\n\x1b]0;pwned\x07\n"), "Wrote the notes.")
    term.line("write my notes")
    term.wait_for("✎ The model wants to write notes.txt:")
    term.wait_for(QUESTION)
    term.wait_for("+++ b/notes.txt")
    term.wait_for("+hello")
    term.wait_for("+␛]0;pwned␇")  # the model's control characters are shown, not obeyed
    assert not (workspace / "notes.txt").exists()  # nothing is written before the answer
    term.line("y")
    term.wait_for("Wrote the notes.")
    term.wait_for("turn 1 ·")
    assert (workspace / "notes.txt").read_text() == "hello\n\x1b]0;pwned\x07\n"
    assert any("edit applied in the editor" in r for r in tool_results(fake))

    # "always": this edit and the next ones of this chat are written without a question.
    fake.add(write("templates/reply.txt", "Hi {name},\n"), write("b.txt", "b\n"), "Both done.")
    term.line("two more")
    term.wait_for("-Dear {name},")
    term.wait_for("+Hi {name},")
    term.wait_for(QUESTION)
    term.line("a")
    term.wait_for("✎ writing b.txt (approved for this chat)")
    term.wait_for("Both done.")
    assert (workspace / "templates" / "reply.txt").read_text() == "Hi {name},\n"
    assert (workspace / "b.txt").read_text() == "b\n"
    assert term.text().count(QUESTION) == 2
    term.wait_prompt()
    term.key("C-d")
    assert term.exit_status() == 0


def test_a_rejected_edit_is_not_written_and_the_model_is_told(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    term = terminal(100, 40)
    term.start(workspace, clean_env(home, model_env(fake)))
    term.wait_prompt()
    fake.add(write("agent_spec.md", "# Support agent\nfour tools\n"), "I tried.")
    term.line("change the spec")
    term.wait_for("-three tools")
    term.wait_for("+four tools")
    term.wait_for(QUESTION)
    term.line("n")
    term.wait_for("Rejected: agent_spec.md not written.")
    term.wait_for("tool write_file agent_spec.md (failed)")
    term.wait_for("turn 1 ·")
    assert (workspace / "agent_spec.md").read_text() == SPEC
    told = " ".join(tool_results(fake))
    assert "the user rejected the edit in the terminal" in told


def test_yes_writes_without_asking(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    term = terminal(100, 30)
    term.start(workspace, clean_env(home, model_env(fake)), "--yes")
    term.wait_prompt()
    fake.add(write("notes.txt", "quick\n"), "Done.")
    term.line("write it")
    term.wait_for("✎ writing notes.txt (approved for this chat)")
    term.wait_for("turn 1 ·")
    assert QUESTION not in term.text()
    assert (workspace / "notes.txt").read_text() == "quick\n"


def test_a_write_into_git_needs_its_own_yes_to_its_diff_even_after_always(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    term = terminal(120, 40)
    term.start(workspace, clean_env(home, model_env(fake)))
    term.wait_prompt()
    fake.add(write("notes.txt", "first\n"), "Noted.")
    term.line("take a note")
    term.wait_for("[a]lways this chat")
    term.line("a")  # every later edit of this chat approved…
    term.wait_for("turn 1 ·")
    hook = "[core]\n\tfsmonitor = touch pwned\n"
    fake.add(write(".git/config", hook), "Understood.", write(".git/config", hook), "Done.")
    term.line("configure git")
    term.wait_for("Allow this write? [y/N]")
    term.line("y")
    term.wait_for("inside .git, where git runs what config and hooks say")
    term.wait_for("Write it? [y]es / [n]o:")  # …but not one into .git
    term.line("n")
    term.wait_for("turn 2 ·")
    assert not (workspace / ".git" / "config").exists()
    assert "the user rejected the edit" in " ".join(tool_results(fake))
    term.line("configure git, I mean it")
    term.wait_for("Allow this write? [y/N]", count=2)
    term.line("y")
    term.wait_for("Write it? [y]es / [n]o:", count=2)
    term.line("y")
    term.wait_for("turn 3 ·")
    assert (workspace / ".git" / "config").read_text() == hook
