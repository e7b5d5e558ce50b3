"""Process tests: exit latencies are collected and summarised at the end of the run."""

from __future__ import annotations

import statistics

import pytest

EXIT_SECONDS: list[tuple[str, float]] = []  # (ending/state, seconds from ending to gone)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not EXIT_SECONDS:
        return
    times = sorted(t for _, t in EXIT_SECONDS)
    worst = max(EXIT_SECONDS, key=lambda item: item[1])
    terminalreporter.section("exit latency")
    terminalreporter.write_line(
        f"{len(times)} endings: median {statistics.median(times) * 1000:.0f} ms, "
        f"max {times[-1] * 1000:.0f} ms ({worst[0]})"
    )
