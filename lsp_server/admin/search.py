"""`sessions search TEXT` and `sessions reindex`, through the project's search index.

With a PostgreSQL store the database searches its own rows (`StoreSearch`), and keeps them
indexed itself (each search first indexes what was appended since): reindex has nothing to do.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any

from session.terminal_text import counted, inert

from .output import plain_console, write_json
from .running import OK, PROBLEM, ProblemError, UsageError
from .table import quoted
from .targets import projects, store_spec

NOT_AVAILABLE = "search is not available in this build (session/search/ is missing)"
DATABASE_INDEXES = (
    "Nothing to reindex: the store is PostgreSQL, whose search index is kept by the database "
    "(each server's search first indexes what was appended since; this command's search "
    "reads what is not indexed yet from the events). The local index files are only "
    "rebuilt with the local store (--store local)."
)


def search_index() -> Any:
    """Return `session.search.SearchIndex`, or None in a build without search."""
    import importlib

    try:
        search = importlib.import_module("session.search")
    except ImportError:
        return None
    return getattr(search, "SearchIndex", None)


def hit_json(project: str, hit: Any) -> dict[str, Any]:
    """Return one result of `sessions search --json`."""
    return {
        "project": project,
        "sessionId": hit.session_id,
        "seq": hit.seq,
        "turn": hit.turn,
        "step": hit.step,
        "ts": None if hit.ts is None else hit.ts.isoformat(),
        "type": hit.type,
        "snippet": hit.snippet,
    }


def filters_of(args: argparse.Namespace) -> Any:
    """Return the search's filters from its flags; a word not understood is a usage error."""
    from session.search import FilterError, search_filter

    try:
        return search_filter(
            since=args.since, until=args.until, kind=args.kind, tool=args.tool, path=args.path
        )
    except FilterError as exc:
        raise UsageError(f"--{exc.field}: {exc.reason}") from None


def shown_time(ts: str | None) -> str:
    """Return a hit's time for the table: local, to the second."""
    if ts is None:
        return ""
    return datetime.fromisoformat(ts).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def found_hits(args: argparse.Namespace, filters: Any) -> tuple[list[dict[str, Any]], int]:
    """Search this project (or every project), and say how many events were not indexed.

    A database is only read: what its index has not caught up yet (servers index it when
    they search) is read from the events, and counted.
    """
    with projects(args) as scope:
        found = scope.search(args.text, args.limit, filters)
        return [hit_json(project, hit) for project, hit in found], scope.unindexed


def cmd_search(args: argparse.Namespace) -> int:
    """`sessions search TEXT`."""
    index_cls = search_index()
    if index_cls is None:
        raise ProblemError(NOT_AVAILABLE)
    if not args.text.strip():
        raise UsageError("search text is empty")
    filters = filters_of(args)
    spec = store_spec(args)
    results, unindexed = found_hits(args, filters)
    if args.json:
        found: dict[str, Any] = {"query": args.text, "results": results}
        if spec is not None:
            found["notIndexed"] = unindexed
        write_json(found)
        return OK
    if unindexed:
        sys.stderr.write(
            f"note: {counted(unindexed, 'event')} not indexed yet: searched from the events\n"
        )
    console = plain_console()
    if not results:
        console.print(f"No matches for {quoted(args.text)}.", markup=False)
        return OK
    from rich.table import Table
    from rich.text import Text

    table = Table()
    columns = ["session", "turn", "step", "time", "seq", "type", "snippet"]
    if args.all_projects:
        columns.insert(0, "project")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in results:
        cells = [
            row["sessionId"],
            "" if row["turn"] is None else str(row["turn"]),
            "" if row["step"] is None else str(row["step"]),
            shown_time(row["ts"]),
            str(row["seq"]),
            row["type"],
            row["snippet"],
        ]
        if args.all_projects:
            cells.insert(0, row["project"])
        table.add_row(*(Text(inert(c)) for c in cells))
    console.print(table)
    return OK


def cmd_reindex(args: argparse.Namespace) -> int:
    """`sessions reindex`: rebuild the search index from the logs."""
    index_cls = search_index()
    if index_cls is None:
        raise ProblemError(NOT_AVAILABLE)
    if store_spec(args) is not None:  # not connected to: nothing would be done there
        if args.json:
            write_json({"projects": [], "store": "postgresql", "message": DATABASE_INDEXES})
        else:
            sys.stdout.write(DATABASE_INDEXES + "\n")
        return OK
    with projects(args) as scope:
        done = scope.reindex() or []
    reports = [
        {
            "project": r.project,
            "sessions": r.sessions,
            "events": r.events,
            "rows": r.rows,
            "skipped": r.skipped,
            "problems": list(r.problems),
        }
        for r in done
    ]
    if args.json:
        write_json({"projects": reports})
    else:
        for r in done:
            sys.stdout.write(
                f"{r.project}: {counted(r.sessions, 'session')}, "
                f"{counted(r.events, 'event')}, {r.rows} text rows indexed\n"
            )
            for problem in r.problems:
                sys.stdout.write(f"  ⚠ {problem}\n")
        if not done:
            sys.stdout.write("Nothing to index.\n")
    return PROBLEM if any(r.skipped for r in done) else OK
