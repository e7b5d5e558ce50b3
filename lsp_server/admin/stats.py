"""`sessions stats`: turns, steps, tools, tokens, model time and retries, summed from the logs.

The logs are read as they are stored (`session/derive/stats.py` says what counts); nothing
is sent anywhere. `--json` is the shape of `agentAssist/stats` (`StatsResult`).
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from session.terminal_text import counted

from .output import write_json
from .running import OK, ProblemError, UsageError
from .table import quoted, render, terminal_columns
from .targets import projects, where

if TYPE_CHECKING:
    from session.derive.stats import Stats, StatsFold
    from session.store.backend import SessionStore

COLUMNS = ("turns", "steps", "tool calls", "tool errors", "tokens in", "tokens out", "model time")


def bounds(args: argparse.Namespace) -> tuple[datetime | None, datetime | None]:
    """Return `--since` and `--until` as moments; a word not understood is a usage error."""
    from session.search.when import parse_when

    found: list[datetime | None] = []
    for name in ("since", "until"):
        text = getattr(args, name, None)
        try:
            found.append(None if text is None else parse_when(text, end=name == "until"))
        except ValueError as exc:
            raise UsageError(f"--{name}: {exc}") from None
    return found[0], found[1]


def fold_sessions(args: argparse.Namespace, fold: StatsFold) -> None:
    """Fold this project's sessions (or every project's) as they are stored."""
    from session.derive.stats import fold_store

    with projects(args) as scope:
        groups: dict[int, tuple[SessionStore, set[str]]] = {}  # by the store that reads them
        for session_id, _project, store in scope.sessions():
            groups.setdefault(id(store), (store, set()))[1].add(session_id)
        wanted = None
        if args.session is not None:
            held = set().union(*(ids for _, ids in groups.values()))
            here = next(iter(scope.stores().values()), None)
            place = "any project" if args.all_projects or here is None else where(here)
            wanted = among(held, args.session, place)
        for store, known in groups.values():
            ids = sorted(known) if wanted is None else [wanted] if wanted in known else []
            fold_store(fold, store, ids, known)


def among(ids: set[str], wanted: str, where: str) -> str:
    """Return the id matching `wanted` exactly or as a unique prefix (as `resolve_session`)."""
    if not re.fullmatch(r"[a-f0-9]{1,12}", wanted):
        raise UsageError(f"--session: invalid session id {quoted(wanted)} (12 hex characters)")
    if wanted in ids:
        return wanted
    matches = sorted(i for i in ids if i.startswith(wanted)) if len(wanted) >= 4 else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ProblemError(f"{wanted!r} matches several sessions: {', '.join(matches)}")
    raise ProblemError(f"no session {wanted} in {where}")


def cmd_stats(args: argparse.Namespace) -> int:
    """`sessions stats`: a table, or with `--json` the LSP result's shape."""
    from session.derive.stats import StatsFold

    since, until = bounds(args)
    if args.session is not None:
        args.session = args.session.strip().lower()
    fold = StatsFold(since, until)
    fold_sessions(args, fold)
    stats = fold.result()
    if args.json:
        write_json(stats_json(stats))
    else:
        sys.stdout.write(stats_text(stats))
    return OK


def stats_json(stats: Stats) -> dict[str, Any]:
    """Return the figures as `agentAssist/stats` answers them (camelCase)."""
    from ..protocol.lookback import StatsResult

    result = StatsResult.model_validate(stats, from_attributes=True)
    return result.model_dump(mode="json", by_alias=True)


def duration(seconds: float) -> str:
    """Return `4.2 s`, `3 m 05 s`, `2 h 07 m`."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} m {rest:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} m"


def tokens(count: int, estimated: bool) -> str:
    """Return a token count, `~` before it when some of it was estimated."""
    return f"{'~' if estimated else ''}{count:,}"


def cells(figures: Any) -> list[str]:
    """Return a group's (or the totals') cells under `COLUMNS`, then its retries."""
    return [
        f"{figures.turns:,}",
        f"{figures.steps:,}",
        f"{sum(figures.tool_calls.values()):,}",
        f"{figures.tool_errors:,}",
        tokens(figures.input_tokens, figures.estimated),
        tokens(figures.output_tokens, figures.estimated),
        duration(figures.model_seconds),
        f"{sum(figures.retries.values()):,}",
    ]


def by_name(counts: dict[str, int]) -> str:
    """Return `read_file 3, write_file 1` (most first)."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{name or '?'} {count:,}" for name, count in ranked)


def stats_text(stats: Stats) -> str:
    """Return the readable report: totals, a table per grouping, tools and retries by name."""
    totals = stats.totals
    if not totals.turns:
        return "No turns in these sessions (for the period asked).\n"
    headers = ["", *COLUMNS, "retries"]
    right = range(1, len(headers))
    columns = terminal_columns()
    parts = [
        render(headers, [["total", *cells(totals)]], shrink=0, right=right, columns=columns),
    ]
    for title, groups in (
        ("session", stats.by_session),
        ("day (UTC)", stats.by_day),
        ("model", stats.by_model),
    ):
        rows = [[group.key, *cells(group)] for group in groups]
        parts.append(
            "\n" + render([title, *headers[1:]], rows, shrink=0, right=right, columns=columns)
        )
    if totals.tool_calls:
        parts.append(f"\nTool calls: {by_name(totals.tool_calls)}\n")
    if totals.retries:
        parts.append(f"Retries: {by_name(totals.retries)}\n")
    if totals.estimated:
        parts.append("~ some token counts are estimates (the model server sent no usage)\n")
    parts.append(
        f"{counted(len(stats.by_session), 'session')}; model time runs from each "
        "request to the model's answer (the tools after it not included)\n"
    )
    return "".join(parts)
