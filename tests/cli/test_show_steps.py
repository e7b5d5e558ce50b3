"""Steps you can see: `sessions show ID --steps` and the terminal's `/history --steps`.

Real turns run through the server (`agent-assist chat` on a pipe, the loopback model): a
tool call, a cut stream retried, a turn with a failure; the same chat then prints
`/history --steps`, and `sessions show --steps` reads the store. On the local files and on
PostgreSQL (`AGENT_ASSIST_TEST_PG`; a schema of its own).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from lsp_server.fake_model import FakeOpenAI

from .conftest import clean_env, model_env, run_cli

HOSTILE = "\x1b]0;pwned\x07\x1b[31m"  # a title change and a colour, in a file the model reads
STEP = re.compile(r"step (\d+) · \d\d:\d\d:\d\d–\d\d:\d\d:\d\d \([\d.]+ s\) · (\S+) · ([\d,]+) in")


def show(workspace: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    done = run_cli("sessions", "show", *args, "--workspace", str(workspace), env=env)
    return done.returncode, done.stdout, done.stderr


def test_steps_in_the_terminal_and_in_sessions_show(
    workspace: Path, home: Path, fake: FakeOpenAI, store_env: dict[str, str]
) -> None:
    env = clean_env(home, {**model_env(fake), **store_env})
    (workspace / "notes.txt").write_text("line\n" * 600 + HOSTILE + "\n")  # 3,000+ bytes
    read = {"name": "read_file", "arguments": {"path": "notes.txt"}, "id": "call_notes"}
    fake.add(
        {"text": "Reading.", "tool_calls": [read]},
        {"cut": "abandoned words "},
        "Notes read.",
        {"error": 400, "message": "refused for good"},
    )
    lines = ["read my notes", "and again", "/history --steps", "/history --bogus"]
    chat = run_cli("chat", "--workspace", str(workspace), env=env, input="\n".join(lines) + "\n")
    assert chat.returncode == 0, chat.stderr
    out = chat.stdout
    terminal = out[out.index("You (turn 1) · ") :]
    assert [m[:2] for m in STEP.findall(terminal)] == [("1", fake.model_id), ("3", fake.model_id)]
    assert 'tool read_file {"path": "notes.txt"}' in terminal
    assert "retry: attempt 1 abandoned (cut)" in terminal and "abandoned words" not in terminal
    assert "end: tool-calls" in terminal and "end: answered" in terminal
    assert "more lines" in terminal  # a long result is not printed whole in the chat
    assert "You (turn 2) · " in terminal and "end: error" in terminal
    assert "[turn 2 error]" in terminal and "Usage: /history [--steps]" in terminal
    assert "\x1b]0;" not in out and "\x07" not in out

    listed = run_cli("sessions", "list", "--json", "--workspace", str(workspace), env=env)
    session_id = json.loads(listed.stdout)["sessions"][0]["sessionId"]

    code, text, err = show(workspace, env, session_id, "--steps", "--fold", "100")
    assert code == 0, err
    assert [m[:2] for m in STEP.findall(text)] == [("1", fake.model_id), ("3", fake.model_id)]
    assert "You (turn 1) · " in text and ": read my notes" in text
    assert "      │ line" in text and "… cut: 3,0" in text  # folded at 100 bytes
    assert text.count("      │ line") <= 20
    assert "\x1b" not in text and "\x07" not in text  # inert
    assert "retry: attempt 1 abandoned (cut)" in text and "Notes read." in text
    assert "[turn 2 error]" in text

    code, text, err = show(workspace, env, session_id, "--steps", "--fold", "0")
    assert code == 0 and "… cut:" not in text and text.count("      │ line") == 600

    code, text, err = show(workspace, env, session_id, "--steps", "--fold", "100", "--json")
    assert code == 0, err
    data = json.loads(text)
    first, second = data["turns"]
    assert [s["step"] for s in first["steps"]] == [1, 3]
    tool = first["steps"][0]["tools"][0]
    assert tool["folded"] is True and tool["resultBytes"] > 3000 and len(tool["result"]) == 100
    assert first["steps"][1]["retries"][0]["kind"] == "cut"
    assert (second["endReason"], second["steps"][0]["endReason"]) == ("error", "error")
    assert data["items"][0]["text"] == "read my notes"  # the transcript is still there

    code, _, err = show(workspace, env, session_id, "--steps", "--fold", "-1")
    assert code == 2 and err.strip().count("\n") == 0 and "--fold" in err
    code, _, err = show(workspace, env, "../../etc", "--steps")
    assert code == 2 and "invalid session id" in err
