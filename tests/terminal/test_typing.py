"""Typing while a reply runs: queued above the prompt (never in the spinner), withdrawn,
several lines in one message (Alt+Enter, a paste), and /clear."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI
from tests.cli.conftest import clean_env, model_env

from .screen import TMUX, Terminal

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

MakeTerminal = Callable[[int, int], Terminal]


def user_texts(fake: FakeOpenAI) -> list[str]:
    """Return the last user message of every chat request the model received."""
    texts = []
    for request in fake.requests:
        users = [m for m in request.body.get("messages", []) if m.get("role") == "user"]
        content = users[-1]["content"] if users else ""
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        texts.append(str(content))
    return texts


def test_a_line_typed_during_a_reply_is_queued_and_can_be_withdrawn(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    term = terminal(100, 30)
    term.start(workspace, clean_env(home, model_env(fake)))
    term.wait_prompt()
    fake.add({"hang": "Working on the first one"})
    term.line("first message")
    term.wait_for("Working on the first one")
    assert fake.wait_hanging(30)

    term.line("clear")  # a shell habit, typed while the reply runs
    text = term.wait_for("queued: clear")
    spinner = [row for row in text.split("\n") if "Replying" in row or "Thinking" in row]
    assert spinner and all("clear" not in row for row in spinner), text
    term.line("/withdraw")
    term.wait_for("Withdrew 1 queued message (back in the input line; Ctrl+U clears it).")
    term.wait(lambda t: "queued: clear" not in term.screen(), "the queue emptied")
    term.wait(lambda t: term.rows_shown()[-1] == "› clear", "the withdrawn line to edit")
    term.key("C-u")
    term.wait(lambda t: term.rows_shown()[-1] == "›", "an empty input line")

    term.line("second message")
    term.wait_for("queued: second message")
    fake.add("Second answer.")
    fake.release()
    term.wait_for("turn 2 ·")
    text = term.text()
    assert text.index("Working on the first one") < text.index("› second message")
    assert text.index("› second message") < text.index("Second answer.")
    assert "queued:" not in term.screen()  # sent: no longer shown as queued
    assert user_texts(fake) == ["first message", "second message"]  # "clear" never sent

    term.line("/withdraw")
    term.wait_for("Nothing is queued.")
    term.wait_prompt()
    term.key("C-d")
    assert term.exit_status() == 0


def test_alt_enter_and_a_paste_make_one_message_and_clear_clears_the_screen(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    term = terminal(100, 30)
    term.start(workspace, clean_env(home, model_env(fake)))
    term.wait_prompt()
    fake.add("Got two lines.", "Got the paste.")
    term.type("line one")
    term.key("M-Enter")
    term.type("line two")
    term.key("Enter")
    term.wait_for("Got two lines.")
    term.wait_for("turn 1 ·")
    term.wait_prompt()
    term.paste("pasted a\npasted b\n")
    term.wait_for("pasted b")
    term.key("Enter")
    term.wait_for("Got the paste.")
    term.wait_for("turn 2 ·")
    assert user_texts(fake) == ["line one\nline two", "pasted a\npasted b"]
    term.wait_prompt()
    term.line("/clear")
    term.wait(lambda t: "Got the paste." not in term.screen(), "a cleared screen")
    assert term.screen().strip() == "›"
    term.key("C-d")
    assert term.exit_status() == 0


def test_a_line_typed_before_the_prompt_is_sent_not_echoed_into_the_output(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    term = terminal(100, 30)
    fake.add("Early answer.")
    term.start(workspace, clean_env(home, model_env(fake)))
    term.wait_for("agent-assist chat ·")  # the chat runs; its prompt may not be up yet
    term.line("early bird")
    term.wait_for("Early answer.")
    term.wait_for("turn 1 ·")
    rows = term.rows_shown()
    assert "› early bird" in rows
    assert "early bird" not in rows  # no bare echo of the typed line
    assert user_texts(fake) == ["early bird"]
