"""Every way a server can be told to end, in every state it can be in: it ends promptly.

For each ending (shutdown+exit, exit alone, end of stdin, a broken stdout, SIGTERM, SIGINT,
SIGHUP, the editor killed with SIGKILL) and each state (idle, streaming, a stalled stream, a
tool waiting on the editor, the resume prompt open): the process is gone within 2 s, stderr
stays small, the turn in flight is recorded as ended, and nothing reaches stdout after
`exit`. As the seed's exit: a session started without a turn is saved and the pointer names
it; with the resume question still open, nothing is created and the pointer stays. Every
ending in a state with a session written to leaves it saved: autosaved, its snapshot current,
its lock gone, no SQLite journal beside the search index or the session list.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI
from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from session.search import INDEX_FILE
from tests.e2e.harness import REPO, server_env
from tests.figures import EXIT_SECONDS
from tests.unit.conftest import run_turn

from .driver import SAVED_STATES, STATES, LspProcess, bring_into, script_for

SIGNALS = {"sigterm": signal.SIGTERM, "sigint": signal.SIGINT, "sighup": signal.SIGHUP}
ENDINGS = ("shutdown+exit", "exit", "eof", "stdout-closed", *SIGNALS)
EXIT_DEADLINE = 2.0  # seconds, from the ending to the process being gone
STDERR_LIMIT = 32 * 1024
INSTANCE = "proc"
JOURNALS = ("-wal", "-shm", "-journal")  # what SQLite leaves beside a database not closed


def previous_session(workspace: Path, home: Path) -> str:
    """Leave a finished session behind, so the next start asks to resume it."""
    lifecycle = SessionLifecycle(SessionManager(workspace, home=home), INSTANCE)
    run_turn(lifecycle, "an earlier question", "an earlier answer")
    session_id = lifecycle.session_id
    lifecycle.close()
    return session_id


def logs(home: Path) -> set[str]:
    return {p.name for p in home.rglob("*.events.jsonl")}


def end_server(client: LspProcess, ending: str) -> float:
    """Deliver `ending`; return the moment it was delivered."""
    if ending == "shutdown+exit":
        moment = time.monotonic()
        client.request("bye", "shutdown")
        client.wait_response("bye", timeout=EXIT_DEADLINE)
        client.notify("exit")
    elif ending == "exit":
        moment = time.monotonic()
        client.notify("exit")
    elif ending == "eof":
        moment = time.monotonic()
        assert client.proc.stdin is not None
        client.proc.stdin.close()
    elif ending == "stdout-closed":
        moment = time.monotonic()
        client.close_stdout()
    else:
        moment = time.monotonic()
        client.proc.send_signal(SIGNALS[ending])
    return moment


def assert_ended_cleanly(
    workspace: Path, home: Path, state: str, before: set[str], session_id: str | None, stderr: Path
) -> None:
    """What every ending must leave behind."""
    text = stderr.read_text(errors="replace")
    assert len(text) < STDERR_LIMIT, f"stderr grew to {len(text)} bytes"
    assert "Traceback" not in text, text[-4000:]
    assert text.count("the connection to the editor is lost") <= 1  # said once, never again
    after = logs(home)
    manager = SessionManager(workspace, home=home)
    if state == "prompt":
        assert after == before, "a session was created with the resume question unanswered"
        assert manager.read_pointer(INSTANCE) == session_id
    elif state == "idle":
        (new,) = after - before  # the seed's exit saves the session started without a turn
        new_id = new.removesuffix(".events.jsonl")
        assert new_id == session_id and manager.layout.snapshot_path(new_id).exists()
        assert manager.read_pointer(INSTANCE) == new_id
    else:
        assert len(after - before) <= 1 and len(after) == len(before | after)
    if session_id is None:
        return
    events = manager.read_events(session_id).events if manager.exists(session_id) else []
    if state in ("streaming", "stalled", "tool"):
        ends = [e for e in events if e.type == "turn/end"]
        assert ends and ends[-1].data.reason in ("aborted", "interrupted")
        assert [e.seq for e in events] == list(range(len(events)))


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("ending", ENDINGS)
def test_every_ending_in_every_state_is_prompt(
    workspace: Path, home: Path, fake: FakeOpenAI, tmp_path: Path, ending: str, state: str
) -> None:
    previous = previous_session(workspace, home) if state == "prompt" else None
    before = logs(home)
    fake.add(*script_for(state))
    options = {"instanceId": INSTANCE, "model": {"name": "m", "baseUrl": fake.base_url}}
    stderr = tmp_path / "stderr.log"
    client = LspProcess(workspace, home, options, stderr)
    try:
        client.initialize()
        bring_into(client, state)
        if state == "prompt":
            session_id = previous
        else:
            session_id = client.wait_method("agentAssist/sessionChanged")["params"]["sessionId"]
        moment = end_server(client, ending)
        try:
            client.proc.wait(timeout=EXIT_DEADLINE)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the server still runs {EXIT_DEADLINE} s after {ending} in {state}")
        EXIT_SECONDS.append((f"{ending}/{state}", time.monotonic() - moment))
        if ending in ("exit", "shutdown+exit"):
            late = [
                f for f in client.frames_after(moment) if f.get("method") != "agentAssist/chatDelta"
            ]
            if ending == "shutdown+exit":  # the shutdown answer, and the cancelled chat's
                late = [f for f in late if f.get("id") not in ("bye", "chat-1")]
            assert late == [], f"written after {ending}: {late}"
    finally:
        client.stop()
    assert_ended_cleanly(workspace, home, state, before, session_id, stderr)


@pytest.mark.parametrize("state", SAVED_STATES)
@pytest.mark.parametrize("ending", ENDINGS)
def test_every_ending_leaves_the_session_saved(
    workspace: Path, home: Path, fake: FakeOpenAI, tmp_path: Path, ending: str, state: str
) -> None:
    fake.add(*script_for(state))
    options = {"instanceId": INSTANCE, "model": {"name": "m", "baseUrl": fake.base_url}}
    stderr = tmp_path / "stderr.log"
    client = LspProcess(workspace, home, options, stderr)
    try:
        client.initialize()
        bring_into(client, state)
        session_id = client.wait_method("agentAssist/sessionChanged")["params"]["sessionId"]
        end_server(client, ending)
        client.proc.wait(timeout=30)  # a guard against a hang; the time is the test above's
    finally:
        client.stop()
    manager = SessionManager(workspace, home=home)
    events = manager.read_events(session_id).events
    assert re.search(r"autosave on [^\n]*: written", stderr.read_text())
    snapshot, _ = manager.read_snapshot(session_id)
    assert snapshot is not None and snapshot.last_seq == events[-1].seq
    assert not manager.layout.lock_path(session_id).exists()
    if state == "answered":
        assert (manager.layout.project_dir / INDEX_FILE).exists()  # the turn was indexed
    journals = [p.name for p in manager.layout.project_dir.iterdir() if p.name.endswith(JOURNALS)]
    assert journals == [], f"left beside the databases after {ending} in {state}: {journals}"


@pytest.mark.parametrize("state", STATES)
def test_a_killed_editor_never_leaves_a_server_behind(
    workspace: Path, home: Path, fake: FakeOpenAI, tmp_path: Path, state: str
) -> None:
    previous = previous_session(workspace, home) if state == "prompt" else None
    before = logs(home)
    fake.add(*script_for(state))
    stderr = tmp_path / "stderr.log"
    editor = subprocess.Popen(
        [sys.executable, "-m", "tests.process.driver", "--workspace", str(workspace)]
        + ["--home", str(home), "--state", state, "--stderr", str(stderr)]
        + ["--model-url", fake.base_url],
        stdout=subprocess.PIPE,
        env=server_env(home),
        cwd=str(REPO),
    )
    try:
        assert editor.stdout is not None
        line = editor.stdout.readline()
        assert line.strip().isdigit(), "the editor process did not reach its state"
        server_pid = int(line)
        editor.kill()
        editor.wait()
        deadline = time.monotonic() + EXIT_DEADLINE
        while time.monotonic() < deadline and process_exists(server_pid):
            time.sleep(0.02)
        assert not process_exists(server_pid), f"the server outlived its editor in {state}"
        EXIT_SECONDS.append((f"editor-killed/{state}", time.monotonic() - deadline + EXIT_DEADLINE))
    finally:
        if editor.poll() is None:
            editor.kill()
            editor.wait()
    session_id = previous
    if session_id is None:
        created = logs(home) - before
        session_id = next(iter(created)).removesuffix(".events.jsonl") if created else None
    assert_ended_cleanly(workspace, home, state, before, session_id, stderr)


def process_exists(pid: int) -> bool:
    """True while `pid` runs (a zombie of ours counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
