"""`python -m bench [--smoke|--long] [--only NAME] [--dsn DSN] [--write-readme] [--plot PNG]`.

Runs the benchmarks. Those on PostgreSQL (`DATABASE_BENCHMARKS`) run only when named with
`--only` (CI's smoke run may have no database); they use `--dsn`, else
`$AGENT_ASSIST_TEST_PG`, and without either they say so and skip.

`--write-readme` rewrites the results below the marker of bench/README.md and draws the
cost-vs-size plot into bench/results.png. In smoke mode the plot is drawn into a temporary
directory (then removed) unless `--plot` says where, so CI runs the plotting code too.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from . import (
    acp,
    append,
    bounded,
    compaction,
    drift,
    file_changes,
    resume,
    search,
    server,
    sessions,
    timeline,
)
from .common import Mode, Result, fmt_s
from .plot import write_plot

BENCHMARKS: dict[str, Callable[[Mode], Result]] = {
    "drift": drift.run,
    "resume": resume.run,
    "append": append.run,
    "compaction": compaction.run,
    "server": server.run,
    "search": search.run,
    "sessions": sessions.run,
    "bounded": bounded.run,
    "acp": acp.run,
    "timeline": timeline.run,
    "file_changes": file_changes.run,
}
# name -> module with `run(mode, dsn)`, imported only when named (they need psycopg and a server)
DATABASE_BENCHMARKS = {
    "pg_store": "bench.pg_store",
    "pg_search": "bench.pg_search",
    "pg_spool": "bench.pg_spool",
    "pg_file_changes": "bench.pg_file_changes",
    "pg_listing": "bench.pg_listing",
}
README = Path(__file__).with_name("README.md")
PLOT = README.with_name("results.png")
PLOT_ALT = "Cost vs size, log-log: resume, drift and search, ours and the baselines"
MARKER = "<!-- results -->"
HEADER = ("benchmark", "measure", "ours", "baseline", "ratio", "target", "result")


def table(results: list[Result]) -> list[tuple[str, ...]]:
    """Return the table rows (header first) as strings."""
    rows: list[tuple[str, ...]] = [HEADER]
    for result in results:
        for row in result.rows:
            ratio = "—" if row.ratio is None else f"{row.ratio:.2f}×"
            rows.append(
                (result.name, row.measure, row.ours, row.baseline, ratio, row.target, row.verdict)
            )
    return rows


def text_table(rows: list[tuple[str, ...]]) -> str:
    """Format rows as an aligned plain-text table."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def markdown_table(rows: list[tuple[str, ...]]) -> str:
    """Format rows as a Markdown table."""
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows[1:]]
    return "\n".join(out)


def machine_line(mode: Mode, elapsed: float) -> str:
    """Describe where and when the figures were measured."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, mode `{mode}`, on {cpus} CPU(s) "
        f"(nproc), Python {platform.python_version()}, {platform.system()} "
        f"{platform.release()} ({platform.machine()}); whole run {fmt_s(elapsed)}."
    )


def write_readme(results: list[Result], mode: Mode, elapsed: float, plot: bool) -> None:
    """Replace everything below the results marker of bench/README.md."""
    intro = README.read_text() if README.exists() else "# Benchmarks\n\n"
    head = intro.split(MARKER, 1)[0].rstrip() + "\n\n" + MARKER + "\n"
    body = [
        "",
        "## Results",
        "",
        machine_line(mode, elapsed),
        "",
        markdown_table(table(results)),
        "",
    ]
    if plot:
        body += [f"![{PLOT_ALT}]({PLOT.name})", ""]
    body += [
        "### Details",
        "",
    ]
    for result in results:
        body.append(f"**{result.name}** ({fmt_s(result.seconds)})")
        body.append("")
        body += [f"- {line}" for line in result.details]
        body.append("")
    README.write_text(head + "\n".join(body))


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks, print the table and optionally update the README."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--smoke", action="store_true", help="tiny sizes, a few seconds (CI)")
    size.add_argument("--long", action="store_true", help="bigger sizes (minutes)")
    parser.add_argument(
        "--only",
        choices=sorted([*BENCHMARKS, *DATABASE_BENCHMARKS]),
        action="append",
        help="repeatable; the only way to run the PostgreSQL ones",
    )
    parser.add_argument("--dsn", help="PostgreSQL server for pg_* (default: $AGENT_ASSIST_TEST_PG)")
    parser.add_argument(
        "--write-readme", action="store_true", help=f"rewrite README results and {PLOT.name}"
    )
    parser.add_argument("--plot", type=Path, metavar="PNG", help="draw the plot into this file")
    args = parser.parse_args(argv)
    mode: Mode = "smoke" if args.smoke else "long" if args.long else "default"
    # Expected warnings (e.g. the first open of a generated log has no snapshot) are noise.
    logging.getLogger("session").setLevel(logging.ERROR)

    results = []
    started = time.perf_counter()
    for name in args.only or list(BENCHMARKS):
        print(f"running {name} ({mode})...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        if name in DATABASE_BENCHMARKS:
            module = importlib.import_module(DATABASE_BENCHMARKS[name])
            result = cast(Result, module.run(mode, args.dsn))
        else:
            result = BENCHMARKS[name](mode)
        result.seconds = time.perf_counter() - start
        results.append(result)
    elapsed = time.perf_counter() - started

    print(machine_line(mode, elapsed))
    print()
    print(text_table(table(results)))
    for result in results:
        print(f"\n{result.name} ({fmt_s(result.seconds)}):")
        for line in result.details:
            print(f"  - {line}")
    plotted = False
    target: Path | None = args.plot or (PLOT if args.write_readme else None)
    scratch = None
    if target is None and mode == "smoke":
        scratch = Path(tempfile.mkdtemp(prefix="agent-assist-bench-plot-"))
        target = scratch / PLOT.name
    if target is not None:
        title = f"agent-assist benchmarks, mode {mode}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
        try:
            plotted = write_plot(results, target, title)
        except ImportError as exc:
            print(f"\nno plot: {exc} (install the dev extra: matplotlib)", file=sys.stderr)
        else:
            if plotted:
                head = target.read_bytes()[:8]
                assert head == b"\x89PNG\r\n\x1a\n", head
                where = "a temporary directory (removed)" if scratch else str(target)
                print(f"\nplot: {target.stat().st_size:,} B PNG written to {where}")
        finally:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
    if args.write_readme:
        embed = plotted and target is not None and target.resolve() == PLOT.resolve()
        write_readme(results, mode, elapsed, embed)
        print(f"\nwrote {README}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
