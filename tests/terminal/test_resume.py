"""Starting where you left off: --continue, --resume ID, the picker, and the recap."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI
from tests.cli.conftest import clean_env, model_env

from .screen import TMUX, Terminal

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

MakeTerminal = Callable[[int, int], Terminal]
BANNER = re.compile(r"session ([a-f0-9]{12}) \((new|resumed)\)")


def banner(term: Terminal, nth: int = 1) -> tuple[str, str]:
    """Wait for the `nth` banner; return its session id and how it started."""
    term.wait(lambda t: len(BANNER.findall(t.replace("\n", ""))) >= nth, f"banner {nth}")
    found = BANNER.findall(term.text().replace("\n", ""))
    return found[nth - 1][0], found[nth - 1][1]


def one_session(
    term: Terminal, workspace: Path, env: dict[str, str], question: str, *, decline: bool = False
) -> str:
    """Run a chat with one turn (in a new session); return its id once it has ended."""
    term.start(workspace, env)
    if decline:  # the previous session is offered: a new one instead
        term.wait_for("Resume previous session? [Y/n]")
        term.line("n")
    session_id, how = banner(term)
    assert how == "new"
    term.wait_prompt()
    term.line(question)
    term.wait_for("turn 1 ·")
    term.wait_prompt()
    term.key("C-d")
    assert term.exit_status() == 0
    return session_id


def test_continue_resumes_the_latest_and_shows_the_last_exchange_and_drift(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    env = clean_env(home, model_env(fake))
    fake.add("The first answer, about quokkas.")
    first = one_session(terminal(100, 40), workspace, env, "tell me about quokkas")
    (workspace / "agent_spec.md").write_text("# Support agent\nfour tools\n")

    term = terminal(100, 40)
    term.start(workspace, env, "--continue")
    session_id, how = banner(term)
    assert (session_id, how) == (first, "resumed")
    term.wait_for("Resumed ")
    text = term.wait_for("1 file changed since")
    assert "Resume previous session?" not in text  # --continue does not ask
    assert re.search(r"Resumed .* · 1 turn · last active \d{4}-\d\d-\d\d \d\d:\d\d UTC", text)
    assert "You: tell me about quokkas" in text
    assert "Assistant: The first answer, about quokkas." in text
    assert "Drift since the last session: agent_spec.md (modified)" in text
    term.wait_prompt()
    fake.add("Still about quokkas.")
    term.line("go on")
    term.wait_for("turn 2 ·")  # the turn numbers go on: the same session
    term.wait_prompt()
    term.key("C-d")
    assert term.exit_status() == 0


def test_resume_id_and_the_picker_open_the_session_asked_for(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    env = clean_env(home, model_env(fake))
    fake.add("Answer A.")
    older = one_session(terminal(100, 40), workspace, env, "question A")
    fake.add("Answer B.")
    newer = one_session(terminal(100, 40), workspace, env, "question B", decline=True)
    assert older != newer

    term = terminal(100, 40)
    term.start(workspace, env, "--resume", older[:6])
    assert banner(term) == (older, "resumed")
    term.wait_for("You: question A")
    term.wait_prompt()
    term.key("C-d")
    assert term.exit_status() == 0

    term = terminal(100, 40)
    term.start(workspace, env, "--resume")
    text = term.wait_for("Resume which? (number, Enter: a new session)")
    rows = [row for row in text.split("\n") if re.match(r"\s+\d+\. [a-f0-9]{12} ", row)]
    assert rows and older in rows[0] and "1 turn" in rows[0], text
    term.line("1")
    assert banner(term) == (older, "resumed")
    term.wait_for("Assistant: Answer A.")
    term.wait_prompt()
    term.key("C-d")
    assert term.exit_status() == 0

    term = terminal(100, 40)
    term.start(workspace, env, "--resume", "ffffffffffff")
    term.wait_for("--resume ffffffffffff matches no session of this project")
    assert banner(term)[1] == "new"
    term.wait_prompt()
    term.key("C-d")
    assert term.exit_status() == 0


def test_an_interrupted_last_turn_is_said_at_resume(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    env = clean_env(home, model_env(fake))
    term = terminal(100, 40)
    term.start(workspace, env)
    first, _ = banner(term)
    term.wait_prompt()
    fake.add({"hang": "Half of an answer"})
    term.line("a long question")
    term.wait_for("Half of an answer")
    assert fake.wait_hanging(30)
    term.key("C-c")
    term.wait_for("Turn cancelled")
    fake.release()
    term.wait_prompt()
    term.key("C-d")
    assert term.exit_status() == 0

    term = terminal(100, 40)
    term.start(workspace, env, "--continue")
    assert banner(term) == (first, "resumed")
    term.wait_for("You: a long question")
    term.wait_for("Assistant: Half of an answer")
    term.wait_for("The last turn was aborted before its end.")
    term.wait_prompt()
    term.key("C-d")
    assert term.exit_status() == 0

    term = terminal(100, 40)
    term.start(workspace, env)  # asked: the question says what it would resume
    term.wait_for("Resume previous session? [Y/n]")
    assert "\u201ca long question\u201d · 1 turn · its last turn was cancelled" in term.text()
    term.line("y")
    term.wait_prompt()
    term.key("C-d")
    assert term.exit_status() == 0
