"""A seeded campaign of model faults against one long-lived server: no turn is ever lost.

Each turn draws 0-3 faults (cut, dropped, corrupted and stalled streams, slow first tokens,
429, 503, a window overflow) before the model answers. A turn whose faults fit in the retry
budget must complete with the answer alone; one with more must end `error`, with the next
turn unaffected. At the end the log must rebuild every request the model received, and no
text of an abandoned attempt may be in the history of a turn that completed.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from lsp_server.fake_model import FakeOpenAI
from session.derive.history import build_history
from session.local.manager import SessionManager

from ..e2e.harness import Editor
from ..e2e.test_chat import assert_requests_rebuildable
from .conftest import FIGURES, model_options, register_store

MAX_RETRIES = 2
MARK = "ABANDONED-ATTEMPT"


def fault(kind: str, n: int) -> dict[str, Any]:
    """A scripted fault whose streamed text, if any, is marked as abandoned."""
    text = f"{MARK} {n} "
    return {
        "cut": {"cut": text},
        "drop": {"drop": text},
        "corrupt": {"corrupt": text},
        "stall": {"stall": text, "seconds": 30},
        "slow-first-token": {"text": text, "first_delay": 30},
        "429": {"error": 429, "message": "slow down", "retry_after": 0},
        "503": {"error": 503, "message": "overloaded"},
    }[kind]


async def test_a_campaign_of_model_faults_loses_no_turn(tmp_path: Path, long_mode: bool) -> None:
    seed = int(os.environ.get("AGENT_ASSIST_RELIABILITY_SEED", "13"))
    rng = random.Random(seed)
    turns = 120 if long_mode else 20
    kinds = ("cut", "drop", "corrupt", "stall", "slow-first-token", "429", "503")
    workspace = tmp_path / "project"
    workspace.mkdir()
    home = register_store(tmp_path / "store")
    with FakeOpenAI() as fake:
        options = {
            "instanceId": "faults",
            "model": {
                **model_options(fake),
                "streamTimeout": 1,
                "firstTokenTimeout": 1,
                "maxRetries": MAX_RETRIES,
            },
        }
        editor = Editor(workspace, home, options=options)
        await editor.start()
        session_id = (await editor.ready())["sessionId"]
        completed = failed = notices = 0
        recovered: list[int] = []  # turns that completed after abandoning attempts
        try:
            for n in range(1, turns + 1):
                if n <= len(kinds):  # each kind once on its own, then at random
                    drawn = [kinds[n - 1]]
                else:
                    count = rng.choices((0, 1, 2, 3), weights=(2, 5, 3, 1))[0]
                    drawn = [rng.choice(kinds) for _ in range(count)]
                count = len(drawn)
                fake.add(*(fault(kind, n) for kind in drawn), f"answer {n}")
                before = len(editor.notifications["agentAssist/chatRetry"])
                try:
                    reply = await editor.request("agentAssist/chat", {"text": f"question {n}"})
                except Exception as exc:
                    assert count > MAX_RETRIES, f"turn {n} ({drawn}) failed: {exc}"
                    failed += 1
                    # The answer the budget never reached is left in the queue: drop it.
                    with fake._lock:
                        fake._queue.clear()
                else:
                    assert count <= MAX_RETRIES, f"turn {n} ({drawn}) should have failed"
                    assert reply["text"] == f"answer {n}" and reply["attempts"] == count + 1
                    completed += 1
                    recovered += [n] if count else []
                notices += len(editor.notifications["agentAssist/chatRetry"]) - before
                for kind in drawn[: MAX_RETRIES + 1]:
                    FIGURES[f"model_faults.injected.{kind}"] += 1
        finally:
            await editor.stop()
    events = SessionManager(workspace, home=home).read_events(session_id).events
    ends = [e.data.reason for e in events if e.type == "turn/end"]
    assert ends.count("completed") == completed and ends.count("error") == failed
    assert len(ends) == turns  # every turn closed, none lost
    history = json.dumps(build_history(events).messages())
    # A turn that failed keeps what its last attempt streamed (the user saw it); a turn
    # that completed keeps nothing of the attempts it abandoned.
    assert not [n for n in recovered if f"{MARK} {n} " in history]
    assert_requests_rebuildable(fake, workspace, home, session_id)
    FIGURES["model_faults.turns"] += turns
    FIGURES["model_faults.turns_completed"] += completed
    FIGURES["model_faults.turns_failed_over_budget"] += failed
    FIGURES["model_faults.retries_recorded"] += sum(1 for e in events if e.type == "step/retry")
    FIGURES["model_faults.chat_retry_notices"] += notices
    FIGURES["model_faults.abandoned_text_in_history"] += 0  # asserted above
