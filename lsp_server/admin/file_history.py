"""`sessions file-history PATH`: every recorded change of a file, newest first, with diffs.

Answered by `session.timeline` from the project's store: locally its index (caught up
first), on PostgreSQL the events the database holds. The same answer as
`agentAssist/fileHistory`; `--json` prints it with the contract's names.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from session.search import when
from session.terminal_text import inert

from .output import plain_console, write_json
from .running import OK, ProblemError, UsageError
from .targets import project_store, workspace_of


def _when(flag: str, text: str | None, *, end: bool = False) -> datetime | None:
    if text is None:
        return None
    try:
        return when.parse_when(text, end=end, now=lambda: when.local_now())
    except ValueError as exc:
        raise UsageError(f"--{flag}: {exc}") from None


def change_json(change: Any) -> dict[str, Any]:
    """Return one change as `agentAssist/fileHistory` puts it on the wire."""
    from ..protocol.lookback import FileChange

    wire: dict[str, Any] = FileChange(**vars(change)).wire()
    return wire


def _shown_time(moment: datetime) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _heading(change: Any) -> str:
    where = ""
    if change.turn is not None:
        where = f"turn {change.turn}" + (f" step {change.step}" if change.step else "")
    parts = [
        _shown_time(change.ts),
        change.session_id,
        f"“{' '.join((change.session_title or '(untitled)').split())}”",
        where,
        change.kind + (f" ({change.tool})" if change.tool else ""),
    ]
    return "  ".join(p for p in parts if p)


def cmd_file_history(args: argparse.Namespace) -> int:
    """`sessions file-history PATH`."""
    from session.storage import StorageError
    from session.timeline import TimelinePathError, file_history
    from session.timeline.index import TimelineError

    if args.limit < 1:
        raise UsageError("--limit: must be at least 1")
    since = _when("since", args.since)
    until = _when("until", args.until, end=True)
    root = workspace_of(args)
    with project_store(args) as store:
        try:
            found = file_history(
                store, root, args.path, since=since, until=until, line=args.line, limit=args.limit
            )
        except TimelinePathError as exc:
            raise UsageError(str(exc)) from None
        except (TimelineError, StorageError) as exc:
            raise ProblemError(str(exc)) from None
        except OSError as exc:
            raise ProblemError(f"the file history is unavailable: {exc}") from None
    if args.json:
        changes = [change_json(c) for c in found.changes]
        if args.no_diff:
            for item in changes:
                item.pop("diff", None)
        write_json({"path": found.path, "changes": changes, "truncated": found.truncated})
        return OK
    console = plain_console()
    if not found.changes:
        console.print(f"No recorded changes of {inert(found.path)}.", markup=False)
        return OK
    for change in found.changes:
        console.print(inert(_heading(change)), markup=False, style="bold")
        if change.user_message:
            message = " ".join(change.user_message.split())
            shown = message if len(message) <= 200 else message[:199] + "…"
            console.print(f"  > {inert(shown)}", markup=False)
        if not args.no_diff:
            if change.diff:
                console.print(inert(change.diff.rstrip("\n")), markup=False, highlight=False)
            elif change.diff is None:
                console.print(f"  (no diff: {inert(change.reason or 'not kept')})", markup=False)
            else:
                console.print("  (no difference)", markup=False)
        console.print()
    if found.truncated:
        console.print(
            f"… more changes than --limit {args.limit}; narrow with --since/--until/--line",
            markup=False,
        )
    return OK
