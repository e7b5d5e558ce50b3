"""Crash torture: the real server and the loopback model, SIGKILLed at random moments.

Each run starts the server on one long-lived project (resuming its previous session), does
zero to two complete chats, then starts one operation — a streamed reply, a tool call, a
save, a compaction, a fork or a checkpoint restore — and kills the server with SIGKILL a
seeded-random moment after a notification or request shows that operation under way.
After each kill the store is checked in-process: every session opens (writable), every
turn whose chat result the editor received is in the log and intact, an open turn is
closed as `interrupted`, every snapshot parses, and search finds every completed turn.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_server.fake_model import FakeOpenAI
from session.derive.transcript import transcript
from session.events import AssistantMessageEvent, ChunkEvent, TurnEndEvent, TurnStartEvent
from session.local.manager import SessionManager
from session.search import SearchIndex
from session.snapshot import SessionState, migrate_snapshot
from session.storage import read_json_file
from tests.e2e.harness import Editor

from .conftest import FIGURES, SECRET_TEXT, clear_queue, model_options, register_store

SEED = int(os.environ.get("AGENT_ASSIST_RELIABILITY_SEED", "20260331"))
CI_KILLS = 30
LONG_KILLS = 200
SCENARIOS = ("stream", "tool", "save", "compact", "fork", "restore")


@dataclass
class Completed:
    session_id: str
    turn: int
    text: str
    token: str
    reply: str


@dataclass
class Ledger:
    completed: list[Completed] = field(default_factory=list)
    counter: int = 0
    problems: list[str] = field(default_factory=list)

    def token(self) -> str:
        self.counter += 1
        return f"zqk{self.counter}x"


@dataclass
class Run:
    editor: Editor
    fake: FakeOpenAI
    rng: random.Random
    ledger: Ledger
    workspace: Path
    pending: list[tuple[str, str, str, asyncio.Future[Any]]] = field(default_factory=list)

    async def chat(self, reply: Any | None = None, secret: bool = False) -> None:
        token = self.ledger.token()
        text = f"question {token} about the design " + ("lorem " * self.rng.randint(1, 30))
        if secret:
            text += " " + SECRET_TEXT
        answer = f"answer {token} " + "ipsum " * self.rng.randint(1, 40)
        self.fake.add(reply if reply is not None else answer)
        result = await self.editor.request("agentAssist/chat", {"text": text})
        self.record(result, text, token)

    def record(self, result: dict[str, Any], text: str, token: str) -> None:
        self.ledger.completed.append(
            Completed(result["sessionId"], result["turn"], text, token, result["text"])
        )

    def start_chat(self, reply: Any) -> None:
        token = self.ledger.token()
        text = f"killed question {token}"
        self.fake.add(reply)
        _, future = self.editor.start_request("agentAssist/chat", {"text": text})
        self.pending.append((text, token, "chat", future))

    async def pause(self, top: float) -> None:
        await asyncio.sleep(self.rng.uniform(0, top))

    def harvest(self) -> None:
        """Record chats whose result arrived before the kill."""
        for text, token, kind, future in self.pending:
            if kind == "chat" and future.done() and not future.cancelled():
                if future.exception() is None:
                    self.record(future.result(), text, token)


async def kill_mid_stream(run: Run) -> None:
    seen = len(run.editor.notifications["agentAssist/chatDelta"])
    text = "streamed " + "word " * run.rng.randint(40, 160)
    run.start_chat({"text": text, "chunk": run.rng.randint(3, 12), "delay": 0.004})
    await run.editor.wait_for("agentAssist/chatDelta", seen + 1)
    await run.pause(0.3)


async def kill_mid_tool(run: Run) -> None:
    seen = len(run.editor.notifications["agentAssist/toolCall"])
    name = run.rng.choice(["write_file", "read_file", "record_decision"])
    args: dict[str, Any] = {
        "write_file": {"path": f"notes/n{run.ledger.counter}.md", "content": "x" * 200},
        "read_file": {"path": "agent_spec.md"},
        "record_decision": {"decision": "use the blue queue"},
    }[name]
    run.start_chat({"tool_calls": [{"name": name, "arguments": args}], "delay": 0.002})
    run.fake.add({"text": "done with the tool " * 10, "chunk": 5, "delay": 0.003})
    await run.editor.wait_for("agentAssist/toolCall", seen + 1)
    await run.pause(0.15)


async def kill_mid_save(run: Run) -> None:
    _, future = run.editor.start_request("agentAssist/save", {})
    run.pending.append(("", "", "save", future))
    await run.pause(0.06)


async def kill_mid_compaction(run: Run) -> None:
    for _ in range(3):
        await run.chat()
    run.fake.add(
        {
            "tool_calls": [
                {
                    "name": "final_result",
                    "arguments": {"summary": "The user asked design questions.", "decisions": []},
                }
            ]
        }
    )
    _, future = run.editor.start_request("agentAssist/compact", {})
    run.pending.append(("", "", "compact", future))
    await run.pause(0.4)


async def kill_mid_fork(run: Run) -> None:
    if run.rng.random() < 0.5:
        await run.chat()
    _, future = run.editor.start_request("agentAssist/fork", {})
    run.pending.append(("", "", "fork", future))
    await run.pause(0.08)


async def kill_mid_restore(run: Run) -> None:
    await run.editor.request("agentAssist/save", {})
    spec = run.workspace / "agent_spec.md"
    run.fake.add(
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "agent_spec.md", "content": f"# v{run.ledger.counter}\n"},
                }
            ]
        }
    )
    await run.chat()
    assert spec.exists()
    listing = await run.editor.request("agentAssist/checkpoint", {})
    number = run.rng.choice([c["number"] for c in listing["checkpoints"]])
    _, future = run.editor.start_request("agentAssist/checkpoint", {"number": number})
    run.pending.append(("", "", "restore", future))
    await run.pause(0.08)


KILLERS: dict[str, Callable[[Run], Awaitable[None]]] = {
    "stream": kill_mid_stream,
    "tool": kill_mid_tool,
    "save": kill_mid_save,
    "compact": kill_mid_compaction,
    "fork": kill_mid_fork,
    "restore": kill_mid_restore,
}


def check_store(workspace: Path, home: Path, ledger: Ledger) -> dict[str, int]:
    """Open every session in-process and check the ledger; return counts of failures."""
    manager = SessionManager(workspace, home=home)
    bad = {"unreadable": 0, "bad_snapshots": 0, "lost_turns": 0, "unfound": 0, "open_turns": 0}
    events_by_session: dict[str, list[Any]] = {}
    for session_id in sorted(manager.layout.session_ids()):
        snapshot = manager.layout.snapshot_path(session_id)
        if snapshot.exists():
            try:
                raw = read_json_file(snapshot)
                data, _ = migrate_snapshot(raw)
                SessionState.model_validate(data)
            except Exception as exc:
                bad["bad_snapshots"] += 1
                ledger.problems.append(f"{snapshot.name}: {exc}")
        try:
            session = manager.open_session(session_id)
        except Exception as exc:
            bad["unreadable"] += 1
            ledger.problems.append(f"{session_id}: cannot open: {exc!r}")
            continue
        try:
            if session.read_only:
                bad["unreadable"] += 1
                ledger.problems.append(f"{session_id}: read-only: {session.read_only_reason}")
        finally:
            session.close()
        scan = manager.read_events(session_id)
        if scan.read_only_reason:
            bad["unreadable"] += 1
            ledger.problems.append(f"{session_id}: {scan.read_only_reason}")
        events = scan.events
        events_by_session[session_id] = events
        opened: dict[int, int] = {}
        for event in events:
            if isinstance(event, TurnStartEvent) and event.turn is not None:
                opened[event.turn] = opened.get(event.turn, 0) + 1
            elif isinstance(event, TurnEndEvent) and event.turn is not None:
                opened[event.turn] = opened.get(event.turn, 0) - 1
        if any(v > 0 for v in opened.values()):
            bad["open_turns"] += 1
            ledger.problems.append(f"{session_id}: turns left open {opened}")
        transcript(events)  # must not raise
    for done in ledger.completed:
        events = events_by_session.get(done.session_id, [])
        turn = [e for e in events if e.turn == done.turn]
        starts = [e for e in turn if isinstance(e, TurnStartEvent)]
        ends = [e for e in turn if isinstance(e, TurnEndEvent)]
        chunks = "".join(e.data.delta for e in turn if isinstance(e, ChunkEvent))
        messages = [e for e in turn if isinstance(e, AssistantMessageEvent)]
        texts = "".join(
            p.get("content", "")
            for m in messages
            for p in m.data.message.get("parts", [])
            if p.get("part_kind") == "text"
        )
        intact = (
            len(starts) == 1
            and starts[0].data.input.startswith(done.text.split(" my token")[0])
            and len(ends) == 1
            and ends[0].data.reason == "completed"
            and done.reply in (texts + chunks + texts)
        )
        if not intact:
            bad["lost_turns"] += 1
            ledger.problems.append(f"lost turn {done.session_id}#{done.turn} ({done.token})")
    with SearchIndex.for_project(manager.layout) as index:
        index.sync(manager.layout)
        for done in ledger.completed:
            hits = index.search(done.token, limit=1000)
            if not any(h.session_id == done.session_id and h.turn == done.turn for h in hits):
                bad["unfound"] += 1
                ledger.problems.append(f"search misses {done.session_id}#{done.turn}")
    return bad


TIMES: dict[str, float] = {"start": 0.0, "run": 0.0, "check": 0.0}
CHAINS = 2  # independent projects killed in parallel (each with its own model)


async def torture_chain(
    chain: int, workspace: Path, home: Path, kills: int, totals: dict[str, int]
) -> tuple[Ledger, dict[str, int]]:
    rng = random.Random(SEED * 31 + chain)
    ledger = Ledger()
    by_scenario: dict[str, int] = {}
    with FakeOpenAI() as fake:
        options = {
            "instanceId": "torture",
            "autoResume": "always",
            "contextWindow": 4000,
            "compactAt": 0.9,
            "model": model_options(fake),
        }
        for index in range(kills):
            clear_queue(fake)
            scenario = SCENARIOS[index % len(SCENARIOS)] if index < 6 else rng.choice(SCENARIOS)
            editor = Editor(workspace, home, options=dict(options), resume_answer="Resume")
            run = Run(editor, fake, rng, ledger, workspace)
            pointer = SessionManager(workspace, home=home).layout.pointer_path("torture")
            had_pointer = pointer.exists()
            t0 = time.monotonic()
            await editor.start()
            changed = await editor.ready()
            status = await editor.request("agentAssist/status", {})
            TIMES["start"] += time.monotonic() - t0
            if (changed["reason"] == "resumed") != had_pointer or status["readOnly"]:
                totals["relaunch"] += 1
                ledger.problems.append(f"run {index}: relaunch gave {changed} {status}")
            for _ in range(rng.randint(0, 2)):
                await run.chat(secret=rng.random() < 0.2)
            await KILLERS[scenario](run)
            run.harvest()
            await editor.kill()
            t1 = time.monotonic()
            TIMES["run"] += t1 - t0
            clear_queue(fake)
            by_scenario[scenario] = by_scenario.get(scenario, 0) + 1
            for key, value in check_store(workspace, home, ledger).items():
                totals[key] += value
            TIMES["check"] += time.monotonic() - t1
    return ledger, by_scenario


async def test_crash_torture(tmp_path: Path, long_mode: bool) -> None:
    kills = LONG_KILLS if long_mode else CI_KILLS
    totals = dict.fromkeys(
        ("unreadable", "bad_snapshots", "lost_turns", "unfound", "open_turns", "relaunch"), 0
    )
    jobs = []
    for chain in range(CHAINS):
        workspace = tmp_path / f"project{chain}"
        workspace.mkdir()
        (workspace / "agent_spec.md").write_text("# Support agent\nthree tools\n")
        (workspace / "templates").mkdir()
        (workspace / "templates" / "reply.txt").write_text("Dear {name},\n")
        home = register_store(tmp_path / f"store{chain}")
        share = kills // CHAINS + (1 if chain < kills % CHAINS else 0)
        jobs.append(torture_chain(chain, workspace, home, share, totals))
    results = await asyncio.gather(*jobs)
    problems = [p for ledger, _ in results for p in ledger.problems]
    completed = sum(len(ledger.completed) for ledger, _ in results)
    FIGURES["crash.runs"] += kills
    FIGURES["crash.kills"] += kills
    FIGURES["crash.completed_turns_checked"] += completed
    FIGURES["crash.unreadable_sessions"] += totals["unreadable"]
    FIGURES["crash.lost_completed_turns"] += totals["lost_turns"]
    FIGURES["crash.bad_snapshots"] += totals["bad_snapshots"]
    FIGURES["crash.search_misses"] += totals["unfound"]
    FIGURES["crash.turns_left_open"] += totals["open_turns"]
    FIGURES["crash.failed_relaunches"] += totals["relaunch"]
    for _, by_scenario in results:
        for name, count in by_scenario.items():
            FIGURES[f"crash.kills.{name}"] += count
    assert not problems, "\n".join(problems[:40])
    assert completed >= kills // 2
