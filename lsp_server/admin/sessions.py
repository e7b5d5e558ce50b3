"""`sessions list`: the newest sessions of the project (or of all), a table or JSON."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .output import write_json
from .running import OK
from .table import render, terminal_columns
from .targets import layouts, open_database, store_spec

if TYPE_CHECKING:
    from session.store.listing_files import ListedRow


def row_json(row: ListedRow, project: str, workspace: str, busy: bool) -> dict[str, Any]:
    """Return one row of `sessions list --json` (times as the listing keeps them: RFC 3339)."""
    session_id, title, created_at, updated_at, turns, parent_session_id, phase, _ = row
    found: dict[str, Any] = {
        "sessionId": session_id,
        "title": title,
        "createdAt": created_at,
        "updatedAt": updated_at,
        "turns": turns,
        "phase": phase,
        "inUse": busy,
        "project": project,
        "workspace": workspace,
    }
    if parent_session_id:
        found["parentSessionId"] = parent_session_id
    return found


TABLE_LIMIT = 50  # rows in the table unless --limit says otherwise


def local_listing(args: argparse.Namespace, limit: int | None) -> tuple[list[dict[str, Any]], int]:
    """Return the rows of the local listing (this project, or all) and how many there are."""
    found: list[tuple[ListedRow, int, bool]] = []  # (row, index of its project, in use)
    projects: list[tuple[str, str]] = []
    total = 0
    for layout in layouts(args):
        page, count, held = layout.list_rows_in_use(0, limit)
        n = len(projects)
        projects.append((layout.project_dir.name, str(layout.workspace_root)))
        found += [(row, n, row[0] in held) for row in page]
        total += count
    if len(projects) > 1:  # each project's page is in order already
        found.sort(key=lambda listed: listed[0][7], reverse=True)
        found = found[:limit] if limit is not None else found
    return [row_json(row, *projects[n], busy) for row, n, busy in found], total


def database_listing(
    args: argparse.Namespace, spec: str, limit: int | None
) -> tuple[list[dict[str, Any]], int]:
    """Return the rows of the PostgreSQL listing (this project, or all the role's)."""
    from session.store.listing_files import listed_row

    with open_database(args, spec) as store:
        if not args.all_projects:
            infos, total = store.list_sessions_page(0, limit)
            page = [listed_row(info) for info in infos]
            busy = store.held_locks(row[0] for row in page)
            here = str(store.workspace_root)
            return [row_json(row, store.project, here, row[0] in busy) for row in page], total
        every = store.pg.list_sessions(None)  # one query: the role's sessions of every project
        chosen = every[:limit] if limit is not None else every
        busy = store.held_locks(r.session_id for r in chosen)
        rows = []
        for r in chosen:
            busy_here = r.session_id in busy
            rows.append(row_json(listed_row(r), r.project, r.workspace_root or "", busy_here))
        return rows, len(every)


def cmd_list(args: argparse.Namespace) -> int:
    """`sessions list`: the newest first (a page of them by default in the table)."""
    limit = args.limit if args.limit is not None else (None if args.json else TABLE_LIMIT)
    if limit is not None and limit <= 0:
        limit = None
    spec = store_spec(args)
    if spec is None:
        rows, total = local_listing(args, limit)
    else:
        rows, total = database_listing(args, spec, limit)
    if args.json:
        write_json({"sessions": rows, "total": total})
        return OK
    if not rows:
        sys.stdout.write("No sessions.\n")
        return OK
    sys.stdout.write(list_table(rows, args.all_projects))
    if len(rows) < total:
        sys.stdout.write(f"{len(rows)} of {total} sessions (--limit 0 for all)\n")
    return OK


def list_table(rows: list[dict[str, Any]], all_projects: bool) -> str:
    """Return the table `sessions list` prints: the title is cut to fit a terminal."""
    headers = ["id", "updated (UTC)", "turns", "phase", "title", "status"]
    cells = []
    for row in rows:
        title = row["title"] or "(untitled)"
        if row.get("parentSessionId"):
            title = f"{title} (fork of {row['parentSessionId']})"
        cells.append(
            [
                row["sessionId"],
                f"{row['updatedAt'][:10]} {row['updatedAt'][11:16]}",
                str(row["turns"]),
                row["phase"] or "",
                title,
                "in use" if row["inUse"] else "",
            ]
        )
    if all_projects:
        headers.insert(0, "project")
        for row, line in zip(rows, cells, strict=True):
            line.insert(0, row["project"])
    turns = headers.index("turns")
    return render(
        headers, cells, shrink=headers.index("title"), right=[turns], columns=terminal_columns()
    )
