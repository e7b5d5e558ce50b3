"""`agent-assist chat` in a pseudo-terminal (pexpect) against the real server and loopback model."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pexpect
import pytest

from lsp_server.fake_model import FakeOpenAI
from lsp_server.terminal.command import default_instance_id
from session.local.manager import SessionManager

from .conftest import REPO, clean_env, model_env, run_cli

PROMPT = "›"
BANNER = re.compile(r"session ([a-f0-9]{12}) \((new|resumed)\)")


def spawn_chat(
    workspace: Path, home: Path, fake: FakeOpenAI | None, *extra: str, log: Path | None = None
) -> pexpect.spawn:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "lsp_server.cli", "chat", "--workspace", str(workspace), *extra],
        env=clean_env(home, model_env(fake) if fake is not None else None),
        cwd=str(REPO),
        encoding="utf-8",
        timeout=40,
        dimensions=(50, 160),
    )
    if log is not None:
        child.logfile_read = log.open("a", encoding="utf-8")
    return child


def command(child: pexpect.spawn, line: str) -> None:
    """Type a line at the prompt (Enter is a carriage return in a raw terminal)."""
    child.expect_exact(PROMPT)
    child.send(line + "\r")


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None
    return child.exitstatus


def test_chat_streams_cancels_and_runs_every_slash_command(
    workspace: Path, home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    child = spawn_chat(workspace, home, fake, "--context-window", "1000", log=tmp_path / "tty")
    child.expect(BANNER)
    session_id, how = child.match.group(1), child.match.group(2)
    assert how == "new"

    command(child, "/help")
    child.expect_exact("/checkpoint [n]")
    child.expect_exact("/search <text>")

    # Streaming: the first delta is on screen while the model is still answering.
    fake.add({"hang": "Streaming first part"})
    command(child, "hello")
    child.expect_exact("Thinking")  # the spinner until the first delta
    child.expect_exact("Streaming first part")
    assert fake.wait_hanging(10)
    fake.release()
    child.expect(r"turn 1 · \d+ in / \d+ out tokens")

    # Ctrl+C during a reply cancels the turn; the session goes on.
    fake.add({"hang": "slow start"})
    command(child, "slow please")
    child.expect_exact("slow start")
    child.sendintr()
    child.expect_exact("Turn cancelled (recorded as aborted); the session continues.")
    events = SessionManager(workspace, home=home).read_events(session_id).events
    ends = [(e.turn, e.data.reason) for e in events if e.type == "turn/end"]
    assert ends == [(1, "completed"), (2, "aborted")]

    fake.add("Yes, the session continues.")
    command(child, "still there?")
    child.expect_exact("Yes, the session continues.")
    child.expect_exact("turn 3 ·")

    command(child, "/status")
    child.expect(rf"instance\s+{re.escape(default_instance_id(workspace))}")
    shown = str(child.before)  # yes/no fields in words; a "no" is left out
    assert re.search(r"turns\s+3", shown)
    assert "read-only" not in shown and "resumed" not in shown
    assert "True" not in shown and "False" not in shown

    command(child, "/save")
    child.expect(rf"Saved: checkpoint 1 of session {session_id}")

    command(child, "/checkpoint")
    child.expect_exact(f"Checkpoints of {session_id}")

    command(child, "/history")
    child.expect_exact("You (turn 1): hello")
    child.expect_exact("[turn 2 aborted: incomplete]")
    child.expect_exact("You (turn 3): still there?")

    command(child, "/search continues")
    index = child.expect_exact(["Matches for 'continues'", "Search is not available"])
    if index == 0:  # served: the hit names the session
        child.expect_exact(session_id)

    command(child, "/sessions")
    child.expect_exact("Sessions of this project")
    child.expect_exact(session_id)

    command(child, "/resume")
    child.expect_exact("No resume context: this session was not resumed.")

    # Enough history for /compact: the older turns get summarised, progress is shown.
    fake.add({"text": "A long answer. " * 45})
    command(child, "tell me more")
    child.expect(r"turn 4 · ")
    fake.add({"tool_calls": [{"name": "final_result", "arguments": {"summary": "We said hello."}}]})
    command(child, "/compact")
    child.expect_exact("Compacting the conversation")
    child.expect(r"Compacted( \(extractive summary\))?: \d+ → \d+ messages")

    command(child, "/checkpoint 1")
    child.expect_exact("Restored checkpoint 1.")

    command(child, "/fork 99999")  # a boundary the server refuses, with a readable reason
    child.expect_exact("✗ ")
    child.expect_exact("out of range")
    command(child, "/fork")
    child.expect(r"Forked ([a-f0-9]{12}) at seq \d+: now in session ([a-f0-9]{12})\.")
    parent, forked = child.match.group(1), child.match.group(2)
    assert parent == session_id and forked != session_id

    command(child, f"/open {session_id[:6]}")
    child.expect_exact(f"Opened session {session_id}.")

    command(child, "/bogus")
    child.expect_exact("Unknown command /bogus — type /help for the list.")

    # /reset asks before deleting the spec file and templates/: Ctrl+C cancels,
    command(child, "/reset")
    child.expect_exact("[y/N]")
    child.sendintr()
    child.expect_exact("Reset cancelled; nothing was changed.")
    # Enter keeps the files.
    command(child, "/reset")
    child.expect_exact("Also delete agent_spec.md and templates/? [y/N]")
    child.send("\r")
    child.expect(r"New session ([a-f0-9]{12})\.")
    assert (workspace / "agent_spec.md").exists()

    command(child, "/new")
    child.expect_exact("[y/N]")
    child.send("y\r")
    child.expect_exact("(deleted agent_spec.md, templates)")
    assert not (workspace / "agent_spec.md").exists()
    assert not (workspace / "templates").exists()

    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    child.expect_exact("Bye (no turns since the reset: nothing to keep).")
    assert finish(child) == 0


def test_resume_question_enter_resumes_and_n_starts_fresh(
    workspace: Path, home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    log = tmp_path / "tty"
    fake.add("first answer")
    child = spawn_chat(workspace, home, fake, log=log)
    child.expect(BANNER)
    old_id = child.match.group(1)
    command(child, "first question")
    child.expect_exact("first answer")
    child.expect_exact(PROMPT)
    child.sendintr()  # Ctrl+C at the prompt: a clean exit, the server autosaves
    child.expect_exact(f"Closed session {old_id}. Bye.")
    assert finish(child) == 0
    pointer = SessionManager(workspace, home=home).read_pointer(default_instance_id(workspace))
    assert pointer == old_id

    (workspace / "agent_spec.md").write_text("# Support agent\nfour tools now\n")

    child = spawn_chat(workspace, home, fake, log=log)
    child.expect(r"Previous session found \(last active: \d{4}-\d\d-\d\d \d\d:\d\d UTC\)")
    child.expect_exact("Resume previous session? [Y/n]")
    child.send("\r")
    child.expect_exact("Drift since the last session: agent_spec.md (modified)")
    child.expect(BANNER)
    assert child.match.group(1) == old_id and child.match.group(2) == "resumed"
    command(child, "/resume")
    child.expect_exact("# Resumed Session Context")
    child.expect_exact("- agent_spec.md: modified")
    command(child, "/status")
    child.expect(r"resumed\s+yes")
    child.expect_exact(PROMPT)
    # Edited while the chat waits at the prompt: the warning is printed as it arrives.
    (workspace / "templates" / "reply.txt").write_text("Hi {name},\n")
    child.expect_exact("Drift: changed outside the assistant: templates/reply.txt (modified)")
    child.sendcontrol("d")
    assert finish(child) == 0

    child = spawn_chat(workspace, home, fake, log=log)
    child.expect_exact("Resume previous session? [Y/n]")
    child.send("n\r")
    child.expect(BANNER)
    new_id, how = child.match.group(1), child.match.group(2)
    assert how == "new" and new_id != old_id
    command(child, "/sessions")
    child.expect_exact(old_id)  # the declined session stays on disk
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    assert finish(child) == 0
    tty = log.read_text(encoding="utf-8")
    assert tty.count("Drift since the last session") == 1  # shown once, from the notice
    assert "Files changed since the last session" not in tty  # no server message to dedupe


def test_a_retried_reply_starts_over_and_usage_estimates_are_marked(
    workspace: Path, home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.add({"cut": "Half an answer "}, {"text": "The whole answer.", "usage": False})
    child = spawn_chat(workspace, home, fake, log=tmp_path / "tty")
    child.expect(BANNER)
    command(child, "go")
    child.expect_exact("↻ retrying (attempt 2): the answer was incomplete")
    child.expect_exact("The whole answer.")
    child.expect(r"turn 1 · ≈\d+ in / ≈\d+ out tokens \(estimated\) · 2 attempts")
    command(child, "/history")
    child.expect_exact("You (turn 1): go")
    child.expect_exact("The whole answer.")
    child.expect_exact(PROMPT)
    assert "Half an answer" not in str(child.before)  # the abandoned attempt is not shown
    child.sendcontrol("d")
    assert finish(child) == 0


def wait_for_bytes(path: Path, needle: bytes, timeout: float = 30) -> bytes:
    """Return the file's bytes once they contain `needle` (written by the server meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        data = path.read_bytes() if path.exists() else b""
        if needle in data or time.monotonic() > deadline:
            assert needle in data, f"{needle!r} never reached {path}"
            return data
        time.sleep(0.1)


def test_fresh_keeps_the_session_and_help_says_which_deletes(
    workspace: Path, home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.add("kept answer")
    child = spawn_chat(workspace, home, fake, log=tmp_path / "tty")
    child.expect(BANNER)
    old_id = child.match.group(1)
    command(child, "/help")
    child.expect_exact("delete this session")
    child.expect_exact("this one stays on disk")
    command(child, "keep me")
    child.expect_exact("kept answer")
    child.expect_exact("turn 1 ·")
    manager = SessionManager(workspace, home=home)
    old_log = manager.layout.log_path(old_id)
    # The background summary is the last thing written after the turn: wait for it.
    before = wait_for_bytes(old_log, b'"session/summary"')
    command(child, "/fresh")
    child.expect(r"New session ([a-f0-9]{12}); ([a-f0-9]{12}) is kept")
    new_id = child.match.group(1)
    assert child.match.group(2) == old_id and new_id != old_id
    command(child, "/sessions")
    child.expect_exact("Sessions of this project")
    child.expect(rf"│\s+│ {old_id} │[^│]+│ 1\s+│[^│]*│ keep me\s+│")  # listed, not active
    child.expect_exact(PROMPT)
    assert old_log.read_bytes() == before  # the new session left the old log alone
    child.send(f"/open {old_id}\r")
    child.expect_exact(f"Opened session {old_id}.")
    command(child, "/history")
    child.expect_exact("You (turn 1): keep me")
    child.expect_exact("kept answer")
    command(child, "/status")
    child.expect(rf"session\s+{old_id}")
    child.expect(r"turns\s+1")
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    assert finish(child) == 0
    assert manager.exists(old_id)
    # Live again, it may append (an end of session): what was there stays byte for byte.
    assert old_log.read_bytes().startswith(before)
    events = manager.read_events(old_id).events
    assert [e.data.input for e in events if e.type == "turn/start"] == ["keep me"]


def test_untitled_sessions_turnless_hits_and_the_compaction_notice_render(
    workspace: Path, home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.add(
        "first answer",
        "second answer",
        {"tool_calls": [{"name": "final_result", "arguments": {"summary": "About a quokka."}}]},
    )
    child = spawn_chat(workspace, home, fake, log=tmp_path / "tty")
    child.expect(BANNER)
    session_id = child.match.group(1)
    # Saved before its first turn, the session is listed with `title: null`.
    command(child, "/save")
    child.expect_exact(f"Saved: checkpoint 1 of session {session_id}")
    command(child, "/sessions")
    child.expect(rf"│ ● │ {session_id} │[^│]+│ 0\s+│\s+│ \(untitled\)\s+│")
    child.expect_exact(PROMPT)

    child.send("first question\r")
    child.expect_exact("turn 1 ·")
    command(child, "second question")
    child.expect_exact("turn 2 ·")
    command(child, "/compact")
    child.expect(r"Compacted: \d+ → \d+ messages")
    # The compaction notice (`turn: null`) follows the turns it summarised.
    command(child, "/history")
    child.expect_exact("You (turn 2): second question")
    child.expect_exact("second answer")
    child.expect_exact("Older turns were compacted.")
    # The summary's text is a hit in no turn (`turn: null`): empty turn and step cells.
    command(child, "/search quokka")
    child.expect_exact("Matches for 'quokka'")
    when = r"\d{4}-\d\d-\d\d \d\d:\d\d"
    child.expect(rf"│ {session_id} │\s+│\s+│ {when} │ session/compact\s+│ About a \[quokka\]\.\s+│")
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    assert finish(child) == 0


def test_explicit_instance_keeps_its_own_session(
    workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    fake.add("noted")
    child = spawn_chat(workspace, home, fake, "--instance", "left-pane")
    child.expect(BANNER)
    command(child, "remember me")
    child.expect_exact("noted")
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    assert finish(child) == 0
    # Another instance id has no previous session: no question, a new session.
    child = spawn_chat(workspace, home, fake, "--instance", "right-pane")
    child.expect(BANNER)
    assert child.match.group(2) == "new"
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    assert finish(child) == 0


def test_without_a_model_the_terminal_says_how_and_saves_the_empty_session(
    workspace: Path, home: Path
) -> None:
    child = spawn_chat(workspace, home, None)
    child.expect(BANNER)
    child.expect_exact("No model is configured. Start `agent-assist chat --model NAME --base-url")
    child.expect_exact("`agent-assist demo` shows the whole flow without a model.")
    command(child, "hello")
    child.expect_exact("No model is configured (see above): nothing was sent.")
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    child.expect_exact("has no turns: saved, not offered to resume).")
    assert finish(child) == 0
    # The seed's exit: the session is saved and the pointer names it; it has nothing to resume.
    manager = SessionManager(workspace, home=home)
    (empty,) = manager.list_sessions_page(0, None, empty=True)[0]
    assert empty.turns == 0 and manager.layout.snapshot_path(empty.session_id).exists()


def test_the_model_and_its_server_given_on_the_command_line(
    workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    # No model in the environment: only the options name it (the key is the fake's own).
    child = spawn_chat(workspace, home, None, "--model", fake.model_id, "--base-url", fake.base_url)
    child.expect(BANNER)
    child.expect_exact(f"model {fake.model_id}")
    command(child, "hello from the flags")
    child.expect_exact("turn 1 ·")
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    child.expect_exact("Bye.")
    assert finish(child) == 0
    assert fake.requests, "the model named on the command line was never asked"


@pytest.mark.parametrize(
    "args",
    [
        ["--instance", "bad id!"],
        ["--workspace", "/nonexistent/agent-assist-test"],
        ["--base-url", "127.0.0.1:8080/v1"],
    ],
)
def test_chat_usage_errors_exit_2(args: list[str], home: Path) -> None:
    result = run_cli("chat", *args, env=clean_env(home))
    assert result.returncode == 2
    assert "agent-assist chat:" in result.stderr


@pytest.mark.parametrize("yes", [False, True])
def test_on_a_pipe_the_models_edit_is_refused_unless_yes(
    yes: bool, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    call = {"name": "write_file", "arguments": {"path": "notes.txt", "content": "piped\n"}}
    fake.add({"tool_calls": [call]}, "done")
    extra = ["--yes"] if yes else []
    result = run_cli(
        "chat", "--workspace", str(workspace), *extra,
        env=clean_env(home, model_env(fake)), input="write the notes\n",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    if yes:
        assert "✎ writing notes.txt (approved for this chat)" in result.stdout
        assert (workspace / "notes.txt").read_text() == "piped\n"
    else:
        assert "+piped" in result.stdout  # the diff is shown all the same
        assert "Not written: input is not a terminal" in result.stdout
        assert not (workspace / "notes.txt").exists()


def test_max_output_tokens_reaches_the_model_and_status_says_where_the_window_is_from(
    workspace: Path, home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    bad = spawn_chat(workspace, home, fake, "--max-output-tokens", "0")
    bad.expect_exact("--max-output-tokens must be 1-1000000")
    assert finish(bad) == 2
    fake.models_entry = {"max_model_len": 4096}  # vLLM states its window so
    child = spawn_chat(workspace, home, fake, "--max-output-tokens", "77", log=tmp_path / "tty")
    child.expect(BANNER)
    fake.add("Short.")
    command(child, "be brief")
    child.expect_exact("Short.")
    command(child, "/status")
    child.expect_exact("context window 4096 tokens (stated by the model server: /v1/models)")
    chats = [r.body for r in fake.requests if r.path.endswith("/chat/completions")]
    assert chats and chats[-1].get("max_tokens") == 77
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    assert finish(child) == 0
