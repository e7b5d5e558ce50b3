"""The look-back commands' parsers: `sessions show --steps`, `file-history`, `request`, `stats`.

Their bodies live in `file_history.py`, `request.py` and `stats.py`, imported only when the
command runs (`command.lazy`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

Lazy = Callable[[str, str], Callable[[argparse.Namespace], int]]

WHEN = "an ISO date or time, a duration ago (30m, 12h, 1d, 2w), today or yesterday"


def register_lookback(sub: Any, parents: list[argparse.ArgumentParser], lazy: Lazy) -> None:
    """Add `sessions file-history`, `sessions request` and `sessions stats`.

    `lazy`: `command.lazy` (passed in: this module is imported by `command`).
    """
    p = sub.add_parser(
        "file-history",
        parents=parents,
        help="every recorded change of a file, newest first, with diffs",
        description="List, across this project's sessions, every step that wrote, edited, "
        "restored or deleted PATH and every drift that saw it change behind the assistant's "
        "back, newest first: session, turn, step, time, the user's message of that turn and "
        "a unified diff of the file before and after.",
    )
    p.add_argument("path", help="the file (workspace-relative, or absolute inside it)")
    p.add_argument("--since", metavar="WHEN", help=f"changes at or after: {WHEN}")
    p.add_argument("--until", metavar="WHEN", help=f"changes before ({WHEN}; a day: its end)")
    p.add_argument(
        "--line",
        metavar="TEXT",
        help="only the changes whose diff adds or removes a line containing TEXT",
    )
    p.add_argument("--limit", type=int, default=200, metavar="N", help="at most N changes")
    p.add_argument("--no-diff", action="store_true", help="the entries without their diffs")
    p.set_defaults(func=lazy("file_history", "cmd_file_history"))

    p = sub.add_parser(
        "request",
        parents=parents,
        help="rebuild the request a step sent to the model, from the log",
        description="Rebuild from the log the request step S of turn T sent to the model "
        "(messages, tools, settings; secrets redacted), print it as JSON and say whether "
        "its digest matches the one recorded when it was sent. Exit 1 on a mismatch.",
    )
    p.add_argument("id", help="session id (or a unique prefix)")
    p.add_argument("--turn", type=int, required=True, metavar="T")
    p.add_argument("--step", type=int, default=1, metavar="S", help="default: 1")
    p.set_defaults(func=lazy("request", "cmd_request"))

    p = sub.add_parser(
        "stats",
        parents=parents,
        help="turns, steps, tools, tokens, model time and retries, from the logs",
        description="Sum, from the logs alone, the turns, steps, tool calls by tool, tokens "
        "in and out (estimates marked), time waiting on the model and retries by kind: in "
        "total, by session, by day and by model. Nothing is sent anywhere.",
    )
    p.add_argument("--all-projects", action="store_true", help="every project in the store")
    p.add_argument("--session", metavar="ID", help="only this session (or a unique prefix)")
    p.add_argument("--since", metavar="WHEN", help=f"turns started at or after: {WHEN}")
    p.add_argument("--until", metavar="WHEN", help=f"turns started before: {WHEN}")
    p.set_defaults(func=lazy("stats", "cmd_stats"))
