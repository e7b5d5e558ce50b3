"""`agent-assist sessions request` and `doctor --verify`: requests rebuilt from the log and
checked against the digest recorded when they were sent, on the local store and PostgreSQL.

Sessions are recorded by the real server (`agent-assist chat` on a pipe) against the
loopback model; the commands run as subprocesses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from lsp_server.fake_model import FakeOpenAI

from .conftest import clean_env, model_env, run_cli

SECRET = "sk-proj-" + "R8t2" * 10  # secret-looking: never in the log, the digest or the output
SESSION = re.compile(r"session ([a-f0-9]{12}) \(new\)")


def chat(workspace: Path, home: Path, fake: FakeOpenAI, env: dict[str, str], *lines: str) -> str:
    """Run `agent-assist chat` with `lines` typed; return the session's id."""
    out = run_cli(
        "chat",
        "--workspace",
        str(workspace),
        env=clean_env(home, {**model_env(fake), **env}),
        input="".join(f"{line}\n" for line in lines),
    )
    assert out.returncode == 0, out.stderr
    found = SESSION.search(out.stdout)
    assert found, out.stdout
    return found.group(1)


def test_a_request_is_rebuilt_redacted_and_every_one_verified(
    workspace: Path, home: Path, fake: FakeOpenAI, store_env: dict[str, str]
) -> None:
    (workspace / "todo.md").write_text("- milk\n")
    fake.add(
        "Noted.",
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "todo.md"}}]},
        {"cut": "half an "},
        "Milk is on the list.",
    )
    session_id = chat(
        workspace, home, fake, store_env, f"my key is {SECRET}", "what is on todo.md?"
    )
    env = clean_env(home, store_env)
    where = ("--workspace", str(workspace))

    out = run_cli("sessions", "request", session_id, "--turn", "2", "--step", "2", *where, env=env)
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert shown["matches"] and shown["recordedSha256"] == shown["rebuiltSha256"]
    request = shown["request"]
    assert request["stream"] is True
    assert [t["function"]["name"] for t in request["tools"]][:2] == ["read_file", "list_files"]
    roles = [m["role"] for m in request["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert "- milk" in request["messages"][-1]["content"]
    assert "matches the digest recorded" in out.stderr
    first = run_cli("sessions", "request", session_id, "--turn", "1", *where, env=env)
    assert first.returncode == 0 and "[REDACTED]" in first.stdout
    assert SECRET not in first.stdout + out.stdout

    verified = run_cli("doctor", "--verify", session_id, *where, env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    # 1 + 2 + a retry
    assert f"session {session_id}: 4 requests, 4 checked, each matching" in verified.stdout

    missing = run_cli("sessions", "request", session_id, "--turn", "9", *where, env=env)
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"agent-assist: session {session_id} has no step 1 in turn 9"
    bad = run_cli("sessions", "request", session_id, "--turn", "0", *where, env=env)
    assert bad.returncode == 2 and "count from 1" in bad.stderr


def test_a_tampered_message_fails_verify_naming_its_step(
    workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    fake.add("First answer.", "Second answer.")
    session_id = chat(workspace, home, fake, {}, "first question", "second question")
    where = ("--workspace", str(workspace))
    env = clean_env(home)
    assert run_cli("doctor", "--verify", session_id, *where, env=env).returncode == 0
    (log,) = home.glob(f"projects/*/sessions/{session_id}.events.jsonl")
    text = log.read_text()
    assert text.count('"content":"second question"') == 1
    log.write_text(text.replace('"content":"second question"', '"content":"second answer?"'))

    out = run_cli("doctor", "--verify", session_id, *where, env=env)
    assert out.returncode == 1, out.stdout
    lines = out.stdout.splitlines()
    assert lines[0].startswith("turn 2 step 1: ")
    assert lines[-1] == f"session {session_id}: 1 of 2 requests do not match"
    as_json = run_cli("doctor", "--verify", session_id, "--json", *where, env=env)
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["requests"] == 2 and [(d["turn"], d["step"]) for d in report["differ"]] == [
        (2, 1)
    ]
    one = run_cli("sessions", "request", session_id, "--turn", "2", *where, env=env)
    assert one.returncode == 1 and not json.loads(one.stdout)["matches"]
    assert "turn 2 step 1: the rebuilt request differs" in one.stderr
