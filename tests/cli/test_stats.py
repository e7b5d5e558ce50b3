"""`agent-assist sessions stats`: the figures equal sums computed from the exported events.

Real turns run through the server (`agent-assist chat` on a pipe, the loopback model): tool
calls, a failed tool, a cut stream and an empty answer retried, a reply without usage, two
models. Then every session is exported (`sessions export --format json`) and the figures are
computed here from those events alone, and compared with `sessions stats --json`. On the
local files and on PostgreSQL (`AGENT_ASSIST_TEST_PG`; a schema of its own).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI
from session.local.manager import SessionManager
from session.store.backend import SessionStore
from session.store.choose import open_store

from .conftest import clean_env, model_env, run_cli
from .test_admin import record_session


def opened(workspace: Path, home: Path, env: dict[str, str]) -> SessionStore:
    spec = env.get("AGENT_ASSIST_STORE")
    if spec is None:
        return SessionManager(workspace, home=home)
    return open_store(spec, workspace, home=home, schema=env["AGENT_ASSIST_STORE_SCHEMA"])


def chat(workspace: Path, env: dict[str, str], model: str, *lines: str) -> None:
    """Run `agent-assist chat` on a pipe: each line one turn, then end of input."""
    done = run_cli(
        "chat", "--workspace", str(workspace), "--model", model,
        env=env, input="".join(f"{line}\n" for line in lines),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def exported(workspace: Path, env: dict[str, str], session_id: str) -> list[dict[str, Any]]:
    done = run_cli(
        "sessions", "export", session_id, "--format", "json", "--workspace", str(workspace),
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout)["events"])


def when(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(event["ts"].replace("Z", "+00:00"))


def figures(turns: int = 0) -> dict[str, Any]:
    return {
        "turns": turns, "steps": 0, "toolCalls": Counter(), "toolErrors": 0, "inputTokens": 0,
        "outputTokens": 0, "estimated": False, "modelSeconds": 0.0, "retries": Counter(),
    }  # fmt: skip


def expected(sessions: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The figures as the documented rules give them, from exported events alone."""
    totals = figures()
    groups: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for session_id, events in sessions.items():
        by_turn: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for event in events:
            if event.get("turn") is not None:
                by_turn[event["turn"]].append(event)
        for turn_events in by_turn.values():
            start = next(e for e in turn_events if e["type"] == "turn/start")
            ends = [e for e in turn_events if e["type"] == "turn/end"]
            turn_end = when(ends[0]) if ends and not ends[0]["data"].get("synthesized") else None
            steps = sorted({e["step"] for e in turn_events if e["step"] is not None})
            model_of = {
                e["step"]: e["data"]["model"] for e in turn_events if e["type"] == "request/header"
            }
            seen: dict[str, dict[str, Any]] = {}
            for event in turn_events:
                number = event["step"] if event["step"] is not None else min(steps, default=0)
                model = model_of.get(number, "(unknown)")
                if event["type"] not in ("step/start", "step/retry", "step/end", "tool/call",
                                         "tool/result", "request/header"):  # fmt: skip
                    continue
                part = seen.setdefault(model, figures(1))
                data = event["data"]
                if event["type"] == "step/retry":
                    part["retries"][data["kind"]] += 1
                elif event["type"] == "tool/call":
                    part["toolCalls"][data["name"]] += 1
                elif event["type"] == "tool/result":
                    part["toolErrors"] += bool(data.get("is_error"))
                elif event["type"] == "step/end":
                    part["inputTokens"] += data["usage"].get("input_tokens", 0)
                    part["outputTokens"] += data["usage"].get("output_tokens", 0)
                    part["estimated"] |= bool(data["usage"].get("estimated"))
                elif event["type"] == "step/start":
                    retried = any(
                        e["type"] == "step/retry" and e["step"] == number for e in turn_events
                    )
                    ends = ("step/end", "step/retry")
                    answers = ("assistant/message",) if not retried else ()
                    closing = [
                        when(e) for e in turn_events if e["type"] in answers and e["step"] == number
                    ] + [
                        when(e) for e in turn_events if e["type"] in ends and e["step"] == number
                    ]  # fmt: skip  # the model's answer, else the step's end or its retry
                    part["steps"] += not retried
                    until = closing[0] if closing else turn_end
                    if until is not None:
                        part["modelSeconds"] += (until - when(event)).total_seconds()
            whole = figures(1)
            for model, part in seen.items():
                add(groups["model"].setdefault(model, figures()), part)
                add(whole, part)
            whole["turns"] = 1
            day = when(start).astimezone(UTC).date().isoformat()
            for kind, key in (("session", session_id), ("day", day)):
                add(groups[kind].setdefault(key, figures()), whole)
            add(totals, whole)
    return {"totals": totals, **groups}


def add(into: dict[str, Any], part: dict[str, Any]) -> None:
    for name, value in part.items():
        if name == "estimated":
            into[name] = into[name] or value
        else:
            into[name] += value


def same(reported: dict[str, Any], computed: dict[str, Any]) -> None:
    """Compare one set of figures (the seconds to the millisecond the command rounds to)."""
    assert reported["modelSeconds"] == pytest.approx(computed["modelSeconds"], abs=0.002)
    rest = {k: v for k, v in computed.items() if k != "modelSeconds"}
    assert {k: reported[k] for k in rest} == {k: dict(v) if isinstance(v, Counter) else v
                                              for k, v in rest.items()}  # fmt: skip


def test_stats_equal_the_sums_of_the_exported_events(
    workspace: Path, home: Path, fake: FakeOpenAI, store_env: dict[str, str], tmp_path: Path
) -> None:
    env = clean_env(home, {**model_env(fake), **store_env})
    (workspace / "notes.txt").write_text("the notes\n")
    reads = [
        {"name": "read_file", "arguments": {"path": "notes.txt"}},
        {"name": "read_file", "arguments": {"path": "missing.txt"}},  # fails
    ]
    fake.add({"tool_calls": reads}, "read them", {"cut": "half an "}, "a whole answer")
    chat(workspace, env, "model-a", "read the notes", "tell me more")
    slow = {"error": 429, "message": "slow down", "retry_after": 0}
    fake.add(slow, {"text": "no usage from this server", "usage": False})
    chat(workspace, env, "model-b", "n", "estimate it")  # not resumed: a session of its own

    store = opened(workspace, home, store_env)
    try:
        ids = [info.session_id for info in store.list_sessions()]
        other = tmp_path / "other-project"
        other.mkdir()
        elsewhere = opened(other, home, store_env)
        try:
            record_session(elsewhere, [("elsewhere", "another project's answer")])
        finally:
            elsewhere.close()
    finally:
        store.close()
    assert len(ids) == 2
    events = {session_id: exported(workspace, env, session_id) for session_id in ids}
    computed = expected(events)

    done = run_cli("sessions", "stats", "--json", "--workspace", str(workspace), env=env)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    same(stats["totals"], computed["totals"])
    for name, kind in (("bySession", "session"), ("byDay", "day"), ("byModel", "model")):
        assert {g["key"] for g in stats[name]} == set(computed[kind]), name
        for group in stats[name]:
            same(group, computed[kind][group["key"]])
    days = [g["key"] for g in stats["byDay"]]
    assert days == sorted(days, reverse=True)
    # What the turns did, to be sure the sums are of something.
    totals = stats["totals"]
    assert totals["turns"] == 3 and totals["steps"] == 4
    assert totals["toolCalls"] == {"read_file": 2} and totals["toolErrors"] == 1
    assert totals["retries"] == {"cut": 1, "rate-limit": 1} and totals["estimated"] is True
    assert totals["modelSeconds"] > 0 and totals["inputTokens"] > 0
    assert {g["key"] for g in stats["byModel"]} == {"model-a", "model-b"}

    one = ids[0]
    done = run_cli(
        "sessions", "stats", "--json", "--session", one[:6], "--workspace", str(workspace),
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    alone = json.loads(done.stdout)
    assert [g["key"] for g in alone["bySession"]] == [one]
    same(alone["totals"], computed["session"][one])

    every = run_cli("sessions", "stats", "--json", "--all-projects", "--workspace",
                    str(workspace), env=env)  # fmt: skip
    assert every.returncode == 0, every.stderr
    assert json.loads(every.stdout)["totals"]["turns"] == 4  # the other project's turn too

    later = run_cli("sessions", "stats", "--json", "--since", "1h", "--until", "30m",
                    "--workspace", str(workspace), env=env)  # fmt: skip
    assert later.returncode == 0 and json.loads(later.stdout)["totals"]["turns"] == 0
    recent = run_cli("sessions", "stats", "--json", "--since", "today", "--workspace",
                     str(workspace), env=env)  # fmt: skip
    assert json.loads(recent.stdout)["totals"] == stats["totals"]

    table = run_cli("sessions", "stats", "--workspace", str(workspace), env=env)
    assert table.returncode == 0, table.stderr
    assert "model-a" in table.stdout and "model-b" in table.stdout and one in table.stdout
    assert "Tool calls: read_file 2" in table.stdout
    assert "Retries: cut 1, rate-limit 1" in table.stdout and "~" in table.stdout


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--since", "garbage"], 2, "--since: 'garbage' is not a time"),
        (["--until", "2026-13-45"], 2, "--until: '2026-13-45' is not a date"),
        (["--session", "not-an-id!"], 2, "--session: invalid session id"),
        (["--session", "0123456789ab"], 1, "no session 0123456789ab in project"),
    ],
)
def test_bad_input_is_one_line_and_its_exit_code(
    workspace: Path, home: Path, args: list[str], code: int, says: str
) -> None:
    done = run_cli("sessions", "stats", "--workspace", str(workspace), *args, env=clean_env(home))
    assert done.returncode == code
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_no_turns_says_so(workspace: Path, home: Path) -> None:
    done = run_cli("sessions", "stats", "--workspace", str(workspace), env=clean_env(home))
    assert done.returncode == 0 and done.stdout.startswith("No turns")
    empty = run_cli("sessions", "stats", "--json", "--workspace", str(workspace),
                    env=clean_env(home))  # fmt: skip
    assert json.loads(empty.stdout) == {
        "totals": {
            "turns": 0, "steps": 0, "toolCalls": {}, "toolErrors": 0, "inputTokens": 0,
            "outputTokens": 0, "estimated": False, "modelSeconds": 0.0, "retries": {},
        },
        "bySession": [], "byDay": [], "byModel": [],
    }  # fmt: skip
