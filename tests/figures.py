"""Figures the suites collect while they run, printed once at the end of the run.

`FIGURES` counts the reliability suite's runs, kills, cases and escapes; `EXIT_SECONDS` holds
the process suite's exit latencies. With pytest-xdist each worker collects its own and hands
them to the controller when it ends (`workeroutput`); the controller prints the sum
(tests/conftest.py). Set AGENT_ASSIST_RELIABILITY_REPORT=path.json to also write `FIGURES`.
"""

from __future__ import annotations

import json
import os
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

FIGURES: Counter[str] = Counter()
EXIT_SECONDS: list[tuple[str, float]] = []  # (ending/state, seconds from ending to gone)


def hand_over(workeroutput: dict[str, Any]) -> None:
    """A worker's figures, for the controller."""
    workeroutput["agent_assist_figures"] = json.dumps(
        {"figures": dict(FIGURES), "exits": EXIT_SECONDS}
    )


def take_over(workeroutput: dict[str, Any]) -> None:
    """Add a worker's figures to this process's."""
    data = json.loads(workeroutput.get("agent_assist_figures", "{}"))
    FIGURES.update(data.get("figures", {}))
    EXIT_SECONDS.extend((str(what), float(seconds)) for what, seconds in data.get("exits", []))


def summarise(reporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        reporter.section("reliability figures")
        for key in sorted(FIGURES):
            reporter.write_line(f"{key}: {FIGURES[key]}")
        target = os.environ.get("AGENT_ASSIST_RELIABILITY_REPORT")
        if target:
            Path(target).write_text(json.dumps(dict(sorted(FIGURES.items())), indent=2) + "\n")
    if EXIT_SECONDS:
        times = sorted(t for _, t in EXIT_SECONDS)
        worst = max(EXIT_SECONDS, key=lambda item: item[1])
        reporter.section("exit latency")
        reporter.write_line(
            f"{len(times)} endings: median {statistics.median(times) * 1000:.0f} ms, "
            f"max {times[-1] * 1000:.0f} ms ({worst[0]})"
        )
