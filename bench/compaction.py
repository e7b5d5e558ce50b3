"""Tokens sent to the model per turn in a long session, with and without compaction."""

from __future__ import annotations

import random
import time

from session.compaction import extractive_summary, history_tokens
from session.lifecycle import LifecycleConfig, SessionLifecycle
from session.local.manager import SessionManager

from .common import Mode, Result, Row, scratch_dir

TURNS: dict[Mode, int] = {"smoke": 30, "default": 200, "long": 1000}
CONTEXT_WINDOW = 128_000
THRESHOLD = int(CONTEXT_WINDOW * 0.6)  # the server's defaults: compactAt 0.6
KEEP = THRESHOLD // 4
WORDS = "design agent tool spec template route model deploy review test cache index".split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _session(home_dir: str, workspace: object, compact: bool, turns: int) -> tuple[list[int], int]:
    from pathlib import Path

    manager = SessionManager(Path(str(workspace)), home=Path(home_dir))
    config = LifecycleConfig(history_tokens=10**9 if not compact else int(CONTEXT_WINDOW * 0.85))
    lifecycle = SessionLifecycle(manager, "bench", config)
    rng = random.Random(3)
    sent: list[int] = []
    compactions = 0
    for number in range(1, turns + 1):
        history = lifecycle.message_history()
        if compact and history_tokens(history) > THRESHOLD:
            plan = lifecycle.plan_compaction(KEEP)
            if plan is not None:
                summary = extractive_summary(plan.old, lifecycle.current.state.decisions)
                lifecycle.compact(plan, summary, fallback=True)
                compactions += 1
                history = lifecycle.message_history()
        question = f"question {number}: " + _text(rng, 60)
        answer = f"answer {number}: " + _text(rng, 400)
        request = {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": question}]}
        sent.append(history_tokens([*history, request]))
        turn = lifecycle.begin_turn(question)
        turn.start_step([request])
        turn.assistant_message(
            {"kind": "response", "parts": [{"part_kind": "text", "content": answer}]}
        )
        turn.end("completed")
    lifecycle.close()
    return sent, compactions


def run(mode: Mode) -> Result:
    """Run a long session twice: history sent in full vs compacted at the default threshold."""
    result = Result("compaction")
    turns = TURNS[mode]
    start = time.perf_counter()
    with scratch_dir("compaction") as tmp:
        workspace = tmp / "ws"
        workspace.mkdir()
        full, _ = _session(str(tmp / "home-full"), workspace, compact=False, turns=turns)
        compacted, count = _session(str(tmp / "home-compact"), workspace, compact=True, turns=turns)
    last_full, last_compact = full[-1], compacted[-1]
    result.rows.append(
        Row(
            f"tokens sent at turn {turns}, compaction vs none",
            f"{last_compact:,}",
            f"{last_full:,}",
            last_compact / last_full,
            f"≤ {THRESHOLD:,} tokens",
            last_compact <= THRESHOLD,
        )
    )
    result.rows.append(
        Row(
            f"tokens sent over {turns} turns, compaction vs none",
            f"{sum(compacted):,}",
            f"{sum(full):,}",
            sum(compacted) / sum(full),
        )
    )
    result.details.append(
        f"{turns} turns of ~60-word questions and ~400-word answers; estimated tokens "
        f"(4 bytes each); threshold {THRESHOLD:,} tokens (0.6 × {CONTEXT_WINDOW:,}), "
        f"tail kept {KEEP:,}; {count} compactions (extractive summaries, no model); "
        f"peak sent with compaction {max(compacted):,}, without {max(full):,}"
    )
    result.seconds = time.perf_counter() - start
    return result
