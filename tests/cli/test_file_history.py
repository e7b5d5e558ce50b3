"""`agent-assist sessions file-history PATH` (#42): the listing, --json, the filters, errors.

The session is written in-process through the store's own append path with the event clock
injected: day one two days ago, day two yesterday (local days), so `--since yesterday`
keeps day two only. The command runs as a subprocess over the same store.
"""

from __future__ import annotations

import json
from datetime import datetime, time, timedelta
from pathlib import Path

import pytest

from session.local.manager import SessionManager
from tests.cli.conftest import clean_env, run_cli
from tests.file_timeline import write_history
from tests.search_timeline import injected_clock


def local_noon(days_ago: int) -> datetime:
    today = datetime.now().astimezone()
    day = today.date() - timedelta(days=days_ago)
    return datetime.combine(day, time(12), tzinfo=today.tzinfo)


@pytest.fixture
def project(workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    manager = SessionManager(workspace, home=home)
    writer = manager.create_session()
    write_history(writer, manager, injected_clock(monkeypatch), (local_noon(2), local_noon(1)))
    writer.close()
    return clean_env(home)


def history(workspace: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    done = run_cli("sessions", "file-history", *args, "--workspace", str(workspace), env=env)
    return done.returncode, done.stdout, done.stderr


def listed(workspace: Path, env: dict[str, str], *args: str) -> list[tuple[str, int | None]]:
    code, out, err = history(workspace, env, *args, "--json")
    assert code == 0, err
    return [(c["kind"], c["turn"]) for c in json.loads(out)["changes"]]


def test_the_listing_shows_each_change_with_its_diff(
    project: dict[str, str], workspace: Path
) -> None:
    code, out, err = history(workspace, project, "config.yaml")
    assert code == 0, err
    assert out.index("restore") < out.index("turn 2 step 1") < out.index("drift")
    assert out.index("drift") < out.index("turn 1 step 2") < out.index("turn 1 step 1")
    assert "write (write_file)" in out and "“make the config”" in out
    assert "> add the port" in out and "> make the config" in out
    assert "--- a/config.yaml" in out and "+port: 8080" in out
    code, out, _ = history(workspace, project, "config.yaml", "--no-diff")
    assert code == 0 and "turn 2 step 1" in out and "+port" not in out and "a/config" not in out
    code, out, _ = history(workspace, project, "nothing.txt")
    assert code == 0 and "No recorded changes of nothing.txt." in out


def test_json_filters_and_limit(project: dict[str, str], workspace: Path) -> None:
    code, out, err = history(workspace, project, str(workspace / "config.yaml"), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["path"] == "config.yaml" and data["truncated"] is False
    first = data["changes"][1]
    assert (first["kind"], first["turn"], first["step"], first["tool"]) == (
        "write",
        2,
        1,
        "write_file",
    )
    assert first["userMessage"] == "add the port" and first["sessionTitle"] == "make the config"
    assert "+port: 8080" in first["diff"] and len(first["afterSha256"]) == 64
    assert listed(workspace, project, "config.yaml", "--since", "yesterday") == [
        ("restore", None),
        ("write", 2),
        ("drift", None),
    ]
    day_one = local_noon(2).date().isoformat()  # until a day: its end
    assert listed(workspace, project, "config.yaml", "--until", day_one) == [
        ("write", 1),
        ("write", 1),
    ]
    assert listed(workspace, project, "config.yaml", "--line", "level: 1") == [
        ("drift", None),
        ("write", 1),
    ]
    code, out, _ = history(workspace, project, "config.yaml", "--limit", "2", "--json")
    assert json.loads(out)["truncated"] is True and len(json.loads(out)["changes"]) == 2
    code, out, _ = history(workspace, project, "config.yaml", "--json", "--no-diff")
    assert all("diff" not in c for c in json.loads(out)["changes"])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["../outside.txt"], "leaves the workspace"),
        (["/etc/passwd"], "outside the workspace"),
        (["config.yaml", "--since", "someday"], "--since"),
        (["config.yaml", "--limit", "0"], "--limit"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    project: dict[str, str], workspace: Path, args: list[str], says: str
) -> None:
    code, out, err = history(workspace, project, *args)
    assert code == 2 and says in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1
