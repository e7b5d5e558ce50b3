"""`/file-history PATH [--line TEXT]` in the terminal chat: a file's recorded changes, newest
first, each with its diff; a filter by a line's text; bad input is one line (#42)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI
from lsp_server.terminal.file_history import USAGE, file_history_words, what, where
from tests.cli.conftest import clean_env, model_env, run_cli

from .screen import TMUX, Terminal

MakeTerminal = Callable[[int, int], Terminal]


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def write_steps(workspace: Path, env: dict[str, str]) -> list[int]:
    """The step of each turn's `write_file` call, as `sessions show --steps` has it."""
    where = ["--workspace", str(workspace)]
    listed = run_cli("sessions", "list", "--json", *where, env=env)
    session_id = json.loads(listed.stdout)["sessions"][0]["sessionId"]
    shown = run_cli("sessions", "show", session_id, "--steps", "--json", *where, env=env)
    assert shown.returncode == 0, shown.stderr
    return [
        step["step"]
        for turn in json.loads(shown.stdout)["turns"]
        for step in turn["steps"]
        if any(tool["name"] == "write_file" for tool in step["tools"])
    ]


def test_the_words_of_the_command() -> None:
    assert file_history_words("conf/app.yaml") == ("conf/app.yaml", {})
    assert file_history_words('conf/app.yaml --line "port: 80" --since=1d') == (
        "conf/app.yaml",
        {"line": "port: 80", "since": "1d"},
    )
    assert file_history_words("'my notes.txt'") == ("my notes.txt", {})
    for bad in ("", "a b", "a --line", "a --line=", "'open quote"):
        assert file_history_words(bad) is None, bad


def test_the_words_of_a_change() -> None:
    step = {"turn": 2, "step": 1, "kind": "edit", "tool": "write_file"}
    assert (where(step), what(step)) == ("turn 2 · step 1", "edit (write_file)")
    drift = {"turn": None, "step": None, "kind": "drift", "tool": None}
    assert (where(drift), what(drift)) == (
        "outside a turn",
        "drift (changed outside the assistant)",
    )


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_file_history_prints_each_change_with_its_diff_newest_first(
    terminal: MakeTerminal, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    term = terminal(120, 50)
    term.start(workspace, clean_env(home, model_env(fake)), "--yes")
    term.wait_prompt()
    fake.add(write("notes.txt", "alpha\n"), "Wrote the notes.")
    term.line("start my notes")
    term.wait_for("turn 1 ·")
    term.wait_prompt()
    fake.add(write("notes.txt", "alpha\nbeta gamma\n"), "Added beta.")
    term.line("add beta to the notes")
    term.wait_for("turn 2 ·")
    term.wait_prompt()

    term.line("/file-history notes.txt")
    text = term.wait_for("History of notes.txt: 2 changes, newest first")
    text = term.wait(lambda t: t.count("+alpha") >= 1 and "+beta gamma" in t, "both diffs")
    shown = text[text.index("History of notes.txt") :]
    rows = [row.strip() for row in shown.splitlines()]
    heads = [row for row in rows if "write_file" in row]
    assert len(heads) == 2
    # newest first, each at the step the steps projection gives its write (a retried
    # request, which a loaded machine can cause, keeps its last attempt's number)
    turn1, turn2 = write_steps(workspace, clean_env(home, model_env(fake)))
    assert f"turn 2 · step {turn2}" in heads[0] and f"turn 1 · step {turn1}" in heads[1]
    assert all("start my notes" in h or "add beta" in h for h in heads)  # the session title
    assert "You: add beta to the notes" in rows and "You: start my notes" in rows
    newest = rows[rows.index(heads[0]) : rows.index(heads[1])]
    assert "alpha" in newest  # the context line of the second write's diff
    assert "+beta gamma" in newest and "+alpha" not in newest
    assert "+alpha" in rows[rows.index(heads[1]) :]
    term.wait_prompt()

    term.line("/file-history notes.txt --line gamma")
    text = term.wait_for("History of notes.txt: 1 change, newest first")
    term.wait_prompt()
    term.line("/file-history notes.txt --line nowhere")
    term.wait_for("No recorded change of notes.txt with a line containing 'nowhere'.")
    term.wait_prompt()

    term.line("/file-history ../outside.txt")
    text = term.wait(lambda t: t.count("⚠") >= 1, "the refusal of a path outside")
    [warning] = [row for row in text.splitlines() if "⚠" in row]
    assert "outside" in warning and "Traceback" not in text
    term.wait_prompt()
    term.line("/file-history")
    term.wait_for(USAGE)
    term.wait_prompt()
    term.key("C-d")
    assert term.exit_status() == 0
