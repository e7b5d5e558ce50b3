"""`:AgentAssist filehistory` in a real headless Neovim against the real server (#42): the
picker of a file's changes, the diff of one in a new tab page, restoring its "before"."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI

from .test_nvim_plugin import ERROR, find_or_install_nvim, make_project, notes

V1 = "name: demo\n"
V2 = "name: demo\nlevel: 1\n"


def write(content: str) -> dict[str, Any]:
    call = {"name": "write_file", "arguments": {"path": "config.yaml", "content": content}}
    return {"tool_calls": [call]}


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    nvim = find_or_install_nvim()
    with FakeOpenAI() as server:
        server.add(write(V1), "Wrote the config.", write(V2), "Added the level.")
        project = make_project(tmp_path_factory.mktemp("nvim-file-history"), server, nvim)
        yield project.launch("file_history_spec")


def test_the_picker_lists_both_changes_newest_first(observed: dict[str, Any]) -> None:
    assert observed["config_after_turns"] == V2.splitlines()
    [picker] = [s for s in observed["selects"] if "changes of config.yaml" in s["prompt"]]
    assert picker["prompt"] == "Agent Assist: changes of config.yaml"
    newest, oldest = picker["items"]
    for row, turn, message in ((newest, 2, "add the level"), (oldest, 1, "write the config")):
        assert "  write (write_file)  " in row
        assert row.endswith(f"  turn {turn} · step 1  {message}")
        assert "  write the config  " in row  # the session's title: its first message
    assert picker["choice"] == newest


def test_the_diff_opens_in_a_new_tab_with_both_sides(observed: dict[str, Any]) -> None:
    before, after = observed["before"], observed["after"]
    assert before["lines"] == V1.splitlines() and after["lines"] == V2.splitlines()
    for shown in (before, after):
        assert shown["diff"] is True and shown["modifiable"] is False and shown["readonly"]
        assert shown["filetype"] == "yaml" and shown["restore_key"]
        assert shown["tab"] == 2
    assert observed["tabs_after"] == observed["tabs_before"] + 1
    assert observed["current"] == "agent-assist://config.yaml@turn2.step1:after"


def test_restore_asks_and_writes_the_before(observed: dict[str, Any]) -> None:
    question = "Restore config.yaml as it was before turn 2 · step 1 (write the config)?"
    assert observed["confirm_cancelled"] == [question]  # gR, answered Cancel
    assert observed["config_after_cancel"] == V2.splitlines()  # nothing was sent
    assert observed["confirms"] == [question, question]
    assert observed["restored"].startswith(
        "Agent Assist: restored config.yaml as it was before turn 2 · step 1"
    )
    assert observed["config_restored"] == V1.splitlines()
    assert observed["config_disk"] == V1.splitlines()
    assert observed["not_in_diff"].startswith("Agent Assist: not in a file-history diff")
    assert observed["diff_buffers_left"] is False  # :tabclose wiped the scratch buffers


def test_nothing_recorded_and_errors_are_notified(observed: dict[str, Any]) -> None:
    assert observed["nothing"] == "Agent Assist: no change of agent_spec.md is recorded"
    [outside] = observed["outside"]
    assert outside["msg"].startswith("Agent Assist: ") and "outside" in outside["msg"]
    assert outside["level"] == ERROR
    assert [n for n in notes(observed, ERROR) if "Traceback" in n] == []


def test_a_drift_and_a_created_file_are_worded(observed: dict[str, Any]) -> None:
    assert observed["drift_row"] == "2026-12-05 14:30  drift  (untitled)  outside a turn"
    assert observed["drift_name"] == "agent-assist://conf/app.yaml@drift.2026-12-05T14:30:07:after"
    assert observed["delete_question"] == (
        "Delete a.txt? It did not exist before turn 1 · step 2 (t)."
    )


def test_completion_offers_restore_and_files(observed: dict[str, Any]) -> None:
    assert observed["completion"] == ["config.yaml"]
    assert observed["completion_restore"] == ["restore"]
