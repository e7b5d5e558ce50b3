"""Shared helpers for the benchmarks: modes, timing, result rows and formatting."""

from __future__ import annotations

import gc
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Mode = Literal["smoke", "default", "long"]


@dataclass
class Row:
    """One line of the results table; `ratio` is always ours ÷ baseline of what is shown."""

    measure: str
    ours: str
    baseline: str = "—"
    ratio: float | None = None
    target: str = "report only"
    ok: bool | None = None

    @property
    def verdict(self) -> str:
        """Return PASS, FAIL or — (no target)."""
        return "—" if self.ok is None else ("PASS" if self.ok else "FAIL")


@dataclass
class Curve:
    """One line of a cost-vs-size plot: (size, seconds) points, a colour and a line style."""

    label: str
    color: str = "C0"  # matplotlib colour cycle: ours C0, baselines C1, C2, ...
    linestyle: str = "-"
    points: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class Plot:
    """A log-log panel of cost vs size for one benchmark (drawn by bench/plot.py)."""

    title: str
    xlabel: str
    xunit: Literal["count", "bytes"] = "count"
    ylabel: str = "time"
    curves: list[Curve] = field(default_factory=list)
    targets: list[tuple[float, str]] = field(default_factory=list)  # horizontal lines (y, label)

    def add(
        self, label: str, size: float, value: float, *, color: str = "C0", linestyle: str = "-"
    ) -> None:
        """Add the point (size, value) to the curve called `label` (made on first use)."""
        for curve in self.curves:
            if curve.label == label:
                break
        else:
            curve = Curve(label, color, linestyle)
            self.curves.append(curve)
        curve.points.append((size, value))


@dataclass
class Result:
    """What one benchmark measured: table rows, free-text details and an optional plot."""

    name: str
    rows: list[Row] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    seconds: float = 0.0
    plot: Plot | None = None


def timed_runs(fn: Callable[[], object], repeats: int) -> list[float]:
    """Run `fn` `repeats` times and return each wall time in seconds (GC settled first)."""
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def median(values: list[float]) -> float:
    """Return the median of `values`."""
    return statistics.median(values)


def spread(values: list[float]) -> str:
    """Describe a sample of times: median, min-max and n."""
    return (
        f"median {fmt_s(median(values))}, min {fmt_s(min(values))}, "
        f"max {fmt_s(max(values))}, n={len(values)}"
    )


def fmt_s(seconds: float) -> str:
    """Format a duration (or a difference of two, maybe negative) with a readable unit."""
    if abs(seconds) >= 1:
        return f"{seconds:.2f} s"
    if abs(seconds) >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} µs"


def fmt_bytes(size: float) -> str:
    """Format a byte count with a binary-ish unit (KB = 1000 B here, like the targets)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{int(size)} B"


def ratio_row(
    measure: str, ours: float, baseline: float, limit: float | None, *, unit: str = "s"
) -> Row:
    """Build a row comparing two times (lower is better); target is ours/baseline ≤ limit."""
    ratio = ours / baseline if baseline > 0 else float("inf")
    fmt = fmt_s if unit == "s" else (lambda v: f"{v:,.0f} {unit}")
    if limit is None:
        return Row(measure, fmt(ours), fmt(baseline), ratio)
    return Row(measure, fmt(ours), fmt(baseline), ratio, f"≤ {limit:g}×", ratio <= limit)


@contextmanager
def scratch_dir(name: str) -> Iterator[Path]:
    """Yield a fresh temporary directory that is removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=f"agent-assist-bench-{name}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


DSN_ENV = "AGENT_ASSIST_TEST_PG"  # the PostgreSQL server the database benchmarks use


def database_dsn(result: Result, dsn: str | None) -> str | None:
    """Return the server to measure (`dsn`, else `$AGENT_ASSIST_TEST_PG`); None: say skipped."""
    dsn = dsn or os.environ.get(DSN_ENV)
    if not dsn:
        result.details.append(f"skipped: no PostgreSQL server (set {DSN_ENV} or pass --dsn)")
    return dsn or None
