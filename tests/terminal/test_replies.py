"""Streamed replies in a real terminal: whole, each row once, during the stream and after."""

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


def paragraph(name: str, words: int) -> str:
    return " ".join(f"{name}w{i}" for i in range(words)) + "."


# Longer than a 24-row screen at 80 and at 120 columns: paragraphs, a code block, a list,
# and last a code block taller than the screen (drawn cut while it streams, then whole).
CODE = ["def greet(name):", '    """Say hello."""', "    return f'hello {name}'", "", "greet('x')"]
TALL = [f"row{i} = {i}" for i in range(30)]
REPLY = "\n\n".join(
    [
        paragraph("pa", 60),
        "```python\n" + "\n".join(CODE) + "\n```",
        paragraph("pb", 45),
        "- " + paragraph("la", 12) + "\n- " + paragraph("lb", 12),
        paragraph("pc", 70),
        "```\n" + "\n".join(TALL) + "\n```",
    ]
)
TOKENS = re.findall(r"\b(?:pa|pb|pc|la|lb)w\d+\b|\brow\d+\b", REPLY)


def count(text: str, token: str) -> int:
    return len(re.findall(rf"\b{re.escape(token)}\b", text))


def assert_whole_and_once(text: str) -> None:
    """Every word and code line of the reply is shown exactly once, in order."""
    for token in TOKENS:
        assert count(text, token) == 1, f"{token} shown {count(text, token)} times:\n{text}"
    for line in CODE[:3] + CODE[4:]:
        assert text.count(line) == 1, f"{line!r} shown {text.count(line)} times:\n{text}"
    positions = [text.index(f"{name}w0") for name in ("pa", "pb", "la", "lb", "pc")]
    assert positions == sorted(positions)
    assert text.index("pa" + "w59") < text.index("def greet(name):") < text.index("pbw0")
    assert text.index("pcw69.") < text.index("row0 = 0") < text.index("row29 = 29")


@pytest.mark.parametrize("columns", [80, 120])
def test_a_long_streamed_reply_appears_whole_and_once(
    columns: int, terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    term = terminal(columns, 24)
    term.start(workspace, clean_env(home, model_env(fake)))
    term.wait_prompt()
    fake.add({"text": REPLY, "chunk": 9})
    term.line("tell me everything")
    text = term.wait_for("turn 1 ·")
    assert_whole_and_once(text)
    # Wrapped by the chat at the terminal's width: no word is cut by the terminal's wrap.
    rows = term.rows_shown()
    assert len([r for r in rows if r.startswith("pcw")]) > 1
    # The usage line follows the reply's last row; the prompt is back.
    assert text.index("row29 = 29") < text.index("turn 1 ·")
    term.wait_prompt()
    term.key("C-d")
    assert term.exit_status() == 0
    assert_whole_and_once(term.text())


def test_ctrl_c_mid_stream_leaves_what_was_shown_once(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    term = terminal(100, 30)
    term.start(workspace, clean_env(home, model_env(fake)))
    term.wait_prompt()
    shown = paragraph("pa", 50) + "\n\n" + paragraph("pb", 30)
    fake.add({"hang": shown})  # all of it at once, then the stream waits
    term.line("go on")
    term.wait_for("pbw29.")
    assert fake.wait_hanging(30)
    term.key("C-c")
    text = term.wait_for("Turn cancelled (recorded as aborted); the session continues.")
    term.wait_prompt()
    text = term.text()
    for token in re.findall(r"\bp[ab]w\d+\b", shown):
        assert count(text, token) == 1, f"{token} shown {count(text, token)} times:\n{text}"
    fake.release()
    fake.add("Still here.")
    term.line("next")
    term.wait_for("Still here.")
    term.wait_for("turn 2 ·")


def test_a_resized_terminal_wraps_the_reply_anew(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    term = terminal(120, 30)
    term.start(workspace, clean_env(home, model_env(fake)))
    term.wait_prompt()
    term.resize(70, 30)
    fake.add({"text": paragraph("pa", 40) + "\n\n" + paragraph("pb", 40), "chunk": 11})
    term.line("after the resize")
    text = term.wait_for("turn 1 ·")
    for token in [f"pa{'w'}{i}" for i in range(40)] + [f"pbw{i}" for i in range(40)]:
        assert count(text, token) == 1, text
