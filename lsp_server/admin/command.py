"""`agent-assist sessions …` and `agent-assist doctor`: the store, read (and pruned) directly.

Nothing here ever touches a project other than the one asked about, and nothing is deleted
without a confirmation (or `--yes`). Exit codes: 0 ok, 1 problem, 2 usage (`running.py`).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

from .options import add_store_options
from .running import run_command


def lazy(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """Return a `func` that imports `lsp_server.admin.<module>` only when its command runs.

    Building the parser imports no command's body (deletion, doctor, search, rich, …):
    `sessions list` at 10,000 sessions pays only for what it uses.
    """

    def run(args: argparse.Namespace) -> int:
        body = getattr(importlib.import_module(f"{__package__}.{module}"), name)
        return run_command(args, body)

    return run


def register(subparsers: Any) -> None:
    """Add `agent-assist sessions …` and `agent-assist doctor`."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", metavar="DIR", help="project directory (default: .)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    # The store, as the server chooses it (`migrate` names its database itself).
    stored = argparse.ArgumentParser(add_help=False)
    add_store_options(stored, workspace=False, to="use")

    sessions = subparsers.add_parser(
        "sessions",
        help="list, show, search, export and delete stored sessions",
        description="Work with the stored sessions of this project, in the store the server "
        "uses: --store, else AGENT_ASSIST_STORE (local files, or a PostgreSQL database). "
        "Exit codes: 0 ok, 1 problem, 2 usage.",
    )
    sub = sessions.add_subparsers(dest="sessions_command", required=True, metavar="COMMAND")

    p = sub.add_parser("list", parents=[common, stored], help="list sessions (newest first)")
    p.add_argument("--all-projects", action="store_true", help="every project in the store")
    p.add_argument(
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help="the N newest (default: 50 in the table, all with --json; 0: all)",
    )
    p.add_argument(
        "--offset",
        type=int,
        default=0,
        metavar="N",
        help="skip the N newest first (the next page: --offset 50)",
    )
    p.add_argument(
        "--empty",
        action="store_true",
        help="list the sessions without a turn too (saved at an exit without one)",
    )
    p.set_defaults(func=lazy("sessions", "cmd_list"))

    p = sub.add_parser("show", parents=[common, stored], help="print a session's transcript")
    p.add_argument("id", help="session id (or a unique prefix)")
    p.add_argument(
        "--steps",
        action="store_true",
        help="every step: times, model, usage, tool calls with their results (folded)",
    )
    p.add_argument(
        "--fold", type=int, default=2000, metavar="BYTES", help="cut results longer (0: never)"
    )
    p.set_defaults(func=lazy("show", "cmd_show"))

    p = sub.add_parser(
        "search",
        parents=[common, stored],
        help="find a text in the sessions",
        description="Find every event whose text contains the given text, taken literally "
        "(no search syntax), in any script, inside words and paths; case and width are "
        "ignored (Unicode NFKC and case folding). Whole-word matches come first.",
    )
    p.add_argument("text", help="the text to find (quote it if it has spaces)")
    p.add_argument("--all-projects", action="store_true", help="every project in the store")
    p.add_argument("--limit", type=int, default=20, help="most results per project")
    when = "an ISO date or time, a duration ago (30m, 12h, 1d, 2w), today or yesterday"
    p.add_argument("--since", metavar="WHEN", help=f"events at or after: {when}")
    p.add_argument("--until", metavar="WHEN", help=f"events before ({when}; a day: its end)")
    p.add_argument(
        "--kind",
        help="user, assistant, tool-call, tool-result, drift, decision, summary "
        "(several comma-separated)",
    )
    p.add_argument("--tool", help="tool calls and results of this tool")
    p.add_argument(
        "--path",
        help="tool calls naming this workspace path (or under it), drift events listing it",
    )
    p.set_defaults(func=lazy("search", "cmd_search"))

    p = sub.add_parser(
        "export", parents=[common, stored], help="export a session as Markdown or JSON"
    )
    p.add_argument("id", help="session id (or a unique prefix)")
    p.add_argument("--format", choices=("md", "json"), default="md")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    p.set_defaults(func=lazy("show", "cmd_export"))

    p = sub.add_parser("rm", parents=[common, stored], help="delete a session (asks first)")
    p.add_argument("id", help="session id (or a unique prefix)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask")
    p.set_defaults(func=lazy("deletion", "cmd_rm"))

    p = sub.add_parser(
        "prune",
        parents=[common, stored],
        help="delete sessions not used for a while, or without a turn",
        description="Delete this project's sessions older than AGE (--older-than), or without "
        "a turn (--empty), or both (those without a turn older than AGE). A session a running "
        "agent-assist holds is never deleted.",
    )
    p.add_argument("--older-than", metavar="AGE", help="e.g. 90d, 12h, 2w")
    p.add_argument(
        "--empty",
        action="store_true",
        help="sessions without a turn (saved at an exit without one) that no process holds",
    )
    p.add_argument("--dry-run", action="store_true", help="only list what would be deleted")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask")
    p.set_defaults(func=lazy("deletion", "cmd_prune"))

    p = sub.add_parser(
        "reindex", parents=[common, stored], help="rebuild the search index from the logs"
    )
    p.add_argument("--all-projects", action="store_true", help="every project in the store")
    p.set_defaults(func=lazy("search", "cmd_reindex"))

    from .lookback_commands import register_lookback
    from .migrate import register_migrate
    from .seed_import import register_import

    register_migrate(sub, common)
    register_import(sub, common)
    register_lookback(sub, [common, stored], lazy)

    doctor = subparsers.add_parser(
        "doctor",
        help="check the store, the logs, the index and the model",
        description="Check the storage root, every project's logs, snapshots and pointers, "
        "the search index and the model configuration; with a PostgreSQL store (--store, else "
        "AGENT_ASSIST_STORE) the database instead of the local files: reachable, latency, "
        "schema version, row-level security. Exit 1 if a problem is found.",
    )
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument("--offline", action="store_true", help="skip the model round trip")
    doctor.add_argument(
        "--timeout", type=float, default=10.0, help="seconds for the model round trip"
    )
    doctor.add_argument(
        "--verify",
        metavar="ID",
        help="rebuild every request of session ID from the log and check it against the "
        "digest recorded when it was sent (exit 1 naming each step that differs)",
    )
    add_store_options(doctor)
    doctor.set_defaults(func=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    """`doctor`, or `doctor --verify ID`."""
    if getattr(args, "verify", None):
        return lazy("request", "cmd_verify")(args)
    return lazy("doctor", "cmd_doctor")(args)
