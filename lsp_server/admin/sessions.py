"""`sessions list`: the newest sessions of the project (or of all), a table or JSON."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .output import short, utc, write_json
from .running import OK
from .table import render, terminal_columns
from .targets import layouts, open_database, store_spec

if TYPE_CHECKING:
    from session.store.layout import ProjectLayout
    from session.store.listing import SessionInfo


def info_json(info: SessionInfo, project: str, workspace: str, busy: bool) -> dict[str, Any]:
    """Return one row of `sessions list --json` (times as UTC datetimes: see `write_json`)."""
    row: dict[str, Any] = {
        "sessionId": info.session_id,
        "title": info.title,
        "createdAt": utc(info.created_at),
        "updatedAt": utc(info.updated_at),
        "turns": info.turns,
        "phase": info.phase,
        "inUse": busy,
        "project": project,
        "workspace": workspace,
    }
    if info.parent_session_id:
        row["parentSessionId"] = info.parent_session_id
    return row


TABLE_LIMIT = 50  # rows in the table unless --limit says otherwise


def local_listing(args: argparse.Namespace, limit: int | None) -> tuple[list[dict[str, Any]], int]:
    """Return the rows of the local listing (this project, or all) and how many there are."""
    found: list[tuple[SessionInfo, ProjectLayout]] = []
    total = 0
    held: set[tuple[int, str]] = set()  # (id of the layout, session id)
    for layout in layouts(args):
        page, count, busy = layout.list_sessions_in_use(0, limit)
        found += [(info, layout) for info in page]
        held.update((id(layout), session_id) for session_id in busy)
        total += count
    found.sort(key=lambda pair: pair[0].updated_at, reverse=True)
    found = found[:limit] if limit is not None else found
    projects = {id(layout): layout for _, layout in found}.values()
    names = {id(p): (p.project_dir.name, str(p.workspace_root)) for p in projects}
    rows = [info_json(i, *names[id(p)], (id(p), i.session_id) in held) for i, p in found]
    return rows, total


def database_listing(
    args: argparse.Namespace, spec: str, limit: int | None
) -> tuple[list[dict[str, Any]], int]:
    """Return the rows of the PostgreSQL listing (this project, or all the role's)."""
    from session.store.listing import SessionInfo

    with open_database(args, spec) as store:
        if not args.all_projects:
            page, total = store.list_sessions_page(0, limit)
            busy = store.held_locks(i.session_id for i in page)
            here = str(store.workspace_root)
            return [info_json(i, store.project, here, i.session_id in busy) for i in page], total
        every = store.pg.list_sessions(None)  # one query: the role's sessions of every project
        chosen = every[:limit] if limit is not None else every
        busy = store.held_locks(r.session_id for r in chosen)
        rows = []
        for r in chosen:
            info = SessionInfo(
                r.session_id,
                r.title,
                r.created_at,
                r.updated_at,
                r.turns,
                r.parent_session_id,
                r.phase,
            )
            rows.append(info_json(info, r.project, r.workspace_root or "", r.session_id in busy))
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
        write_json({"sessions": rows, "total": total}, utc_datetimes=True)
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
                short(row["updatedAt"]),
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
