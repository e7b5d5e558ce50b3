"""The README's eglot configuration in a real GNU Emacs (28 + eglot 1.9), against the real server.

One `emacs --batch -l eglot_driver.el` runs in a temporary git project (eglot's project
root) with the README's elisp snippet loaded exactly as README.md has it: it visits
`templates/reply.txt`, runs M-x eglot (`agent-assist serve` from the venv on PATH), asks
twice with the README's `agent-assist-chat` (`workspace/executeCommand agentAssist.chat`,
`async: true`, the reply in `agentAssist/turnEnded`), saves the buffer, asks
`agentAssist/status`, types on until Emacs auto-saves (`#reply.txt#`), asks again and quits
with `kill-emacs`. The model is the loopback `FakeOpenAI`;
its base URL and key come from the environment, its name from the snippet's
`initializationOptions`. The driver writes what Emacs saw (every JSON-RPC message each way,
buffer text) as JSON; the tests below read it, the fake model's requests and the store.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI
from lsp_server.fake_model.replies import is_summary_request
from session.local.manager import SessionManager

REPO = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
API_KEY = "sk-test-EGLOT-0123456789abcdef"
REPLY = "templates/reply.txt"
ORIGINAL = "Dear {name},\n"
WRITTEN = "Dear {name},\nThank you for writing.\n"
ANSWER_1 = "I thanked them in templates/reply.txt."
ANSWER_2 = "It says thank you."
WAIT_SECONDS = 180  # for each event the driver waits on (a loaded CI machine is slow)


# -- Emacs and eglot --------------------------------------------------------------------------


def eglot_library(emacs: str) -> str | None:
    """Return where Emacs loads eglot from, or None if it has none."""
    try:
        result = subprocess.run(
            [
                emacs,
                "--batch",
                "--eval",
                '(progn (require (quote eglot)) (princ (locate-library "eglot")))',
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    return result.stdout.strip() or None


@pytest.fixture(scope="module")
def emacs() -> str:
    found = shutil.which("emacs")
    if found is None:
        pytest.skip("no emacs on PATH (Debian: apt-get install emacs-nox elpa-eglot)")
    if eglot_library(found) is None:
        pytest.skip("emacs has no eglot (Debian: apt-get install elpa-eglot)")
    if shutil.which("git") is None:
        pytest.skip("no git: the test project is a git repository, eglot's project root")
    return found


def readme_eglot_config() -> str:
    """The elisp of README.md's "Emacs (eglot)" snippet, verbatim."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^Emacs \(eglot\).*?\n```elisp\n(.*?)^```", readme, re.S | re.M)
    assert match, "README.md has no ```elisp block after 'Emacs (eglot)'"
    return match.group(1)


# -- the run ----------------------------------------------------------------------------------


@dataclass
class Run:
    """One Emacs session and what it left behind."""

    root: Path
    home: Path
    fake: FakeOpenAI
    observed: dict[str, Any]
    emacs_stderr: str
    server_gone: bool

    def manager(self) -> SessionManager:
        return SessionManager(self.root, home=self.home)

    def received(self, method: str) -> list[Any]:
        return [m["params"] for m in self.observed["received"] if m["method"] == method]

    def sent(self, method: str) -> list[Any]:
        return [m["params"] for m in self.observed["sent"] if m["method"] == method]

    @property
    def session_id(self) -> str:
        return str(self.observed["turn1"]["sessionId"])


def process_exists(pid: int) -> bool:
    """True while `pid` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while process_exists(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def make_project(tmp: Path) -> Path:
    root = tmp / "project"
    (root / "templates").mkdir(parents=True)
    (root / "agent_spec.md").write_text("# Support agent\nthree tools\n")
    (root / REPLY).write_text(ORIGINAL)
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


def emacs_env(tmp: Path, home: Path, fake: FakeOpenAI, out: Path, init: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_ASSIST_"))}
    user_home = tmp / "home"  # no user init, nothing written to the real ~/.emacs.d
    user_home.mkdir(exist_ok=True)
    path = str(VENV_BIN) + os.pathsep + env.get("PATH", "")  # the README runs `agent-assist`
    env.update(
        HOME=str(user_home),
        PATH=path,
        AGENT_ASSIST_HOME=str(home),
        AGENT_ASSIST_LLM_BASE_URL=fake.base_url,  # the model's name comes from the snippet
        AGENT_ASSIST_LLM_API_KEY=API_KEY,
        AGENT_ASSIST_TEST_OUT=str(out),
        AGENT_ASSIST_TEST_README_EL=str(init),
        AGENT_ASSIST_TEST_FILE=REPLY,
        AGENT_ASSIST_TEST_TIMEOUT=str(WAIT_SECONDS),
        PYDANTIC_AI_NO_BANNER="1",
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture(scope="module")
def run(emacs: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    assert (VENV_BIN / "agent-assist").exists(), "the venv has no agent-assist script"
    tmp = tmp_path_factory.mktemp("eglot")
    root = make_project(tmp)
    home = tmp / "store"
    init = tmp / "init.el"
    init.write_text(readme_eglot_config(), encoding="utf-8")
    out = tmp / "observed.json"
    with FakeOpenAI() as fake:
        fake.add(
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": REPLY, "content": WRITTEN}}
                ]
            },
            ANSWER_1,
            {"tool_calls": [{"name": "read_file", "arguments": {"path": REPLY}}]},
            ANSWER_2,
        )
        result = subprocess.run(
            [emacs, "--batch", "-l", str(HERE / "eglot_driver.el")],
            cwd=root,
            env=emacs_env(tmp, home, fake, out, init),
            capture_output=True,
            text=True,
            timeout=6 * WAIT_SECONDS,
            check=False,
        )
        assert out.exists(), f"the driver wrote nothing\n{result.stdout}\n{result.stderr}"
        observed: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        assert observed.get("error") is None, f"{observed['error']}\n{result.stderr[-6000:]}"
        assert result.returncode == 0, result.stderr[-6000:]
        server_gone = wait_gone(int(observed["server_pid"]), 30)
        yield Run(root, home, fake, observed, result.stderr, server_gone)


def chat_requests(fake: FakeOpenAI) -> list[Any]:
    return [r for r in fake.requests if not is_summary_request(r.body)]


def tool_results(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m.get("content")) for m in messages if m.get("role") == "tool"]


# -- 1. the chat ------------------------------------------------------------------------------


def test_eglot_starts_the_server_from_the_readme(run: Run) -> None:
    assert run.observed["major_mode"] == "text-mode"
    initialize = run.sent("initialize")[0]
    assert initialize["processId"] == run.observed["emacs_pid"]
    assert "clientInfo" not in initialize  # eglot 1.9 names no client
    assert initialize["initializationOptions"] == {"model": {"name": "gpt-4o-mini"}}
    assert initialize["rootUri"].rstrip("/").endswith("/project")
    request = chat_requests(run.fake)[0]
    assert request.body["model"] == "gpt-4o-mini"  # initializationOptions reached the model
    assert request.headers["authorization"] == f"Bearer {API_KEY}"  # the key from the env


def test_an_async_chat_command_answers_at_once_and_ends_in_turn_ended(run: Run) -> None:
    commands = [m for m in run.observed["sent"] if m["method"] == "workspace/executeCommand"]
    assert [c["params"] for c in commands] == [
        {"command": "agentAssist.chat", "arguments": [{"text": text, "async": True}]}
        for text in ("please thank them in the reply", "show me the reply")
    ]
    answers = {m["id"]: m["result"] for m in run.observed["received"] if m["method"] is None}
    first = answers[commands[0]["id"]]
    assert first == {"sessionId": run.session_id, "turn": 1, "status": "started"}
    ended = run.observed["turn1"]
    assert ended["turn"] == 1 and ended["endReason"] == "completed"
    assert ended["text"] == ANSWER_1 and ended["error"] is None
    assert run.observed["turn2"]["text"] == ANSWER_2
    # the README's handler showed each reply in the echo area (stderr in batch mode)
    lines = run.emacs_stderr.splitlines()
    assert ANSWER_1 in lines and ANSWER_2 in lines


# -- 2. the model's edit lands in the buffer, unsaved, and the next turn reads it -------------


def test_write_file_is_applied_in_the_buffer_unsaved(run: Run) -> None:
    (request,) = [m for m in run.observed["received"] if m["method"] == "workspace/applyEdit"]
    changes = request["params"]["edit"]["documentChanges"]
    assert [c["textDocument"]["uri"].endswith(REPLY) for c in changes] == [True]
    (answer,) = [m for m in run.observed["sent"] if m["id"] == request["id"] and not m["method"]]
    assert answer["error"] is None, answer
    assert run.observed["before"] == {"text": ORIGINAL, "modified": False}
    assert run.observed["after_write"] == {"text": WRITTEN, "modified": True}
    assert run.observed["on_disk_after_write"] == ORIGINAL


def test_the_next_turn_reads_the_unsaved_buffer(run: Run) -> None:
    last = chat_requests(run.fake)[-1].body["messages"]  # the one after read_file's result
    assert last[-1]["role"] == "tool" and "show me the reply" in json.dumps(last)
    assert tool_results(last)[-1] == WRITTEN


# -- 3. saving the assistant's edit is not drift ----------------------------------------------


def test_saving_the_buffer_is_not_drift(run: Run) -> None:
    assert run.observed["saved_disk"] == WRITTEN
    assert run.observed["after_save"] == {"text": WRITTEN, "modified": False}
    assert run.sent("textDocument/didSave"), "eglot sent no didSave"
    watched = [c["uri"] for p in run.sent("workspace/didChangeWatchedFiles") for c in p["changes"]]
    assert any(uri.endswith(REPLY) for uri in watched)
    until_status = run.observed["received"][: run.observed["received_at_status"]]
    drift = [m["params"] for m in until_status if m["method"] == "agentAssist/drift"]
    assert run.observed["status"]["drift"] == 0, drift
    assert drift == []
    shown = [m["params"]["message"] for m in until_status if m["method"] == "window/showMessage"]
    assert not [m for m in shown if "changed outside" in m], shown


def test_eglot_reports_the_auto_save_file(run: Run) -> None:
    assert run.observed["auto_save_file"].endswith("/templates/#reply.txt#")
    watched = [c["uri"] for p in run.sent("workspace/didChangeWatchedFiles") for c in p["changes"]]
    assert any(uri.endswith("/templates/%23reply.txt%23") for uri in watched)


def test_an_auto_save_file_is_not_drift(run: Run) -> None:
    later = run.observed["received"][run.observed["received_at_status"] :]
    assert [m["params"] for m in later if m["method"] == "agentAssist/drift"] == []
    assert run.observed["status_after_auto_save"]["drift"] == 0


# -- 4. quitting Emacs leaves the session saved -----------------------------------------------


def test_quitting_emacs_ends_the_server_and_leaves_the_session_saved(run: Run) -> None:
    assert run.server_gone, "the server outlived Emacs"
    # nothing is sent on the way out (no shutdown, no exit): the server learns of it from the
    # SIGHUP Emacs sends its subprocesses, and the end of its input
    assert len(run.observed["sent"]) == run.observed["sent_before_quit"]
    manager = run.manager()
    events = manager.read_events(run.session_id).events
    assert [e.data.reason for e in events if e.type == "turn/end"] == ["completed", "completed"]
    snapshot, _ = manager.read_snapshot(run.session_id)
    assert snapshot is not None and snapshot.last_seq == events[-1].seq
    assert not manager.layout.lock_path(run.session_id).exists()


def test_the_instance_is_derived_from_the_emacs_process(run: Run) -> None:
    emacs_pid = run.observed["emacs_pid"]
    assert run.manager().read_pointer(f"default-{emacs_pid}") == run.session_id
    assert f"instance default-{emacs_pid}" in run.observed["server_stderr"]
