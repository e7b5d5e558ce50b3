"""`sessions list`, `sessions show ID` and `sessions export ID`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .dump import load_session, session_meta
from .output import iso, plain_console, write_json
from .running import OK
from .targets import layouts, open_database, project_store, resolve_session, store_spec
from .transcript import print_item, transcript_markdown

if TYPE_CHECKING:
    from session.store.layout import ProjectLayout
    from session.store.listing import SessionInfo


def info_json(info: SessionInfo, project: str, workspace: str, busy: bool) -> dict[str, Any]:
    """Return one row of `sessions list --json`."""
    row: dict[str, Any] = {
        "sessionId": info.session_id,
        "title": info.title,
        "createdAt": iso(info.created_at),
        "updatedAt": iso(info.updated_at),
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
    for layout in layouts(args):
        page, count = layout.list_sessions_page(0, limit)
        found += [(info, layout) for info in page]
        total += count
    found.sort(key=lambda pair: pair[0].updated_at, reverse=True)
    found = found[:limit] if limit is not None else found
    projects = {id(layout): layout for _, layout in found}.values()
    held = {
        id(layout): layout.held_locks(i.session_id for i, p in found if p is layout)
        for layout in projects
    }
    rows = [
        info_json(i, p.project_dir.name, str(p.workspace_root), i.session_id in held[id(p)])
        for i, p in found
    ]
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
        write_json({"sessions": rows, "total": total})
        return OK
    console = plain_console()
    if not rows:
        console.print("No sessions.", markup=False)
        return OK
    from rich.table import Table
    from rich.text import Text

    table = Table()
    columns = ["id", "updated (UTC)", "turns", "phase", "title", "status"]
    if args.all_projects:
        columns.insert(0, "project")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        title = row["title"] or ""
        if row.get("parentSessionId"):
            title = f"{title} (fork of {row['parentSessionId']})".strip()
        cells = [
            row["sessionId"],
            row["updatedAt"].replace("T", " ")[:16],
            str(row["turns"]),
            row["phase"] or "",
            title,
            "in use" if row["inUse"] else "",
        ]
        if args.all_projects:
            cells.insert(0, row["project"])
        table.add_row(*(Text(c) for c in cells))
    console.print(table)
    if len(rows) < total:
        console.print(f"{len(rows)} of {total} sessions (--limit 0 for all)", markup=False)
    return OK


def cmd_show(args: argparse.Namespace) -> int:
    """`sessions show ID`: metadata and transcript."""
    with project_store(args) as manager:
        session_id = resolve_session(manager, args.id)
        dump = load_session(manager, session_id)
        meta = session_meta(dump, manager)
    if args.json:
        write_json({**meta, "items": dump.items})
        return OK
    console = plain_console()
    console.print(f"Session {session_id}: {meta['title'] or '(untitled)'}", markup=False)
    console.print(
        f"created {meta['createdAt']} · updated {meta['updatedAt']} · {meta['turns']} turns · "
        f"{meta['events']} events",
        markup=False,
        style="dim",
    )
    if meta["parentSessionId"]:
        console.print(f"fork of {meta['parentSessionId']}", markup=False, style="dim")
    console.print(f"log: {meta['log']}", markup=False, style="dim")
    for problem in dump.problems:
        console.print(f"⚠ {problem}", markup=False, style="yellow")
    if dump.read_only:
        console.print(f"⚠ read-only: {dump.read_only}", markup=False, style="yellow")
    console.print()
    for item in dump.items:
        print_item(console, item)
    return OK


def cmd_export(args: argparse.Namespace) -> int:
    """`sessions export ID --format md|json [-o FILE]`."""
    with project_store(args) as manager:
        session_id = resolve_session(manager, args.id)
        dump = load_session(manager, session_id)
        if args.format == "md":
            text = transcript_markdown(dump, manager)
        else:
            payload = {
                "session": session_meta(dump, manager),
                "transcript": dump.items,
                "events": [event.model_dump(mode="json") for event in dump.events],
            }
            text = json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n"
    if args.output and args.output != "-":
        out = Path(args.output).expanduser()
        out.write_text(text, encoding="utf-8")
        sys.stderr.write(f"Exported session {session_id} to {out} ({len(text)} characters)\n")
    else:
        sys.stdout.write(text)
    return OK
