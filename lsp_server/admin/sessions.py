"""`sessions list`: the newest sessions of the project (or of all), a table or JSON."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from session.paths import is_valid_session_id
from session.terminal_text import counted

from .output import write_json
from .running import OK, USAGE
from .table import render, terminal_columns
from .targets import open_database, projects, store_spec, workspace_of

if TYPE_CHECKING:
    from session.store.rows import ListedRow


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


SEED_SOURCE = "source: seed store"  # the status of a row of the seed's store (not imported)
TABLE_LIMIT = 50  # rows in the table unless --limit says otherwise


def listing(
    args: argparse.Namespace, limit: int | None, offset: int = 0
) -> tuple[list[dict[str, Any]], int, int]:
    """Return the rows of the listing (this project, or all), their total and the folded.

    The folded: how many sessions without a turn were left out (none with `--empty`).
    """
    with projects(args) as scope:
        page, total, folded = scope.rows(offset, limit, empty=args.empty)
    rows = [row_json(s.row, s.project, s.workspace, s.in_use) for s in page]
    return rows, total, folded


def without_turn(count: int) -> str:
    """Return "N sessions without a turn" (1 session)."""
    return f"{counted(count, 'session')} without a turn"


def cmd_list(args: argparse.Namespace) -> int:
    """`sessions list`: the newest first (a page of them by default in the table).

    Sessions without a turn (saved at an exit without one) are folded unless `--empty`:
    the table says how many; `--json` lists them only with `--empty`.
    """
    limit = args.limit if args.limit is not None else (None if args.json else TABLE_LIMIT)
    if limit is not None and limit <= 0:
        limit = None
    offset = args.offset
    if offset < 0:
        sys.stderr.write("agent-assist sessions list: --offset must be 0 or more\n")
        return USAGE
    spec = store_spec(args)
    seed: list[dict[str, Any]] = []
    rows, total, folded = listing(args, limit, offset)
    if not args.all_projects:  # the seed's sessions not imported yet, after ours
        seed = local_seed_rows(args) if spec is None else database_seed_rows(args, spec)
    last_page = offset + len(rows) >= total
    if args.json:
        write_json({"sessions": rows + (seed if last_page else []), "total": total})
        return OK
    if not rows and not (seed and last_page):
        sys.stdout.write(f"No sessions past the newest {total}.\n" if offset else "No sessions.\n")
        if not offset and not total and not args.all_projects:
            sys.stdout.write(elsewhere(args, spec))
    else:
        sys.stdout.write(list_table(rows + (seed if last_page else []), args.all_projects))
    last = offset + len(rows)
    if rows and offset:
        more = f"; --offset {last} for older" if last < total else ""
        sys.stdout.write(f"{offset + 1}–{last} of {total} sessions{more}\n")
    elif rows and len(rows) < total:
        sys.stdout.write(
            f"{len(rows)} of {total} sessions (--limit 0 for all, --offset {last} for older)\n"
        )
    if folded:
        sys.stdout.write(f"{without_turn(folded)} not shown (--empty shows them)\n")
    if seed:
        many = f"{len(seed)} session{'s' * (len(seed) != 1)}"
        sys.stdout.write(
            f"{many} in the seed's store not imported yet (agent-assist sessions import)\n"
        )
    return OK


def elsewhere(args: argparse.Namespace, spec: str | None) -> str:
    """Return a line on the sessions of other projects (`--all-projects`), or "" if none.

    Locally they are counted from file names (a directory listing per project, no log read);
    sessions without a turn are counted too. A database is not asked: only the hint.
    """
    if spec is not None:
        return "Sessions of other projects: agent-assist sessions list --all-projects\n"
    from session.local.catalog import project_dirs
    from session.local.scope import project_dir
    from session.paths import storage_root

    here = project_dir(workspace_of(args))
    counts = [n for d in project_dirs(storage_root()) if d != here and (n := saved_in(d))]
    if not counts:
        return ""
    projects = "another project" if len(counts) == 1 else f"{len(counts)} other projects"
    return (
        f"{counted(sum(counts), 'session')} in {projects}: "
        "agent-assist sessions list --all-projects lists them\n"
    )


def saved_in(project_dir: Path) -> int:
    """Return how many sessions a project directory holds (their logs and snapshots, by name)."""
    sessions = project_dir / "sessions"
    if sessions.is_symlink():
        return 0
    try:
        names = os.listdir(sessions)
    except OSError:
        return 0
    ids = {n.split(".", 1)[0] for n in names if n.endswith((".events.jsonl", ".json"))}
    return len({i for i in ids if is_valid_session_id(i)})


def local_seed_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Return the rows of the seed's sessions of this project not imported (`seed_import`)."""
    from session.store.seed_store import locate

    from .seed_import import seed_rows

    if locate(workspace_of(args)).sessions_dir is None:  # a stat or two without a seed store
        return []
    from session.local.scope import project_dir

    workspace = workspace_of(args)
    ours = project_dir(workspace) / "sessions"

    def imported(session_id: str) -> bool:
        names = (f"{session_id}.json", f"{session_id}.events.jsonl")
        return any((ours / name).exists() for name in names)

    return seed_rows(workspace, imported)


def database_seed_rows(args: argparse.Namespace, spec: str) -> list[dict[str, Any]]:
    """Return the rows of the seed's sessions of this project not in the database."""
    from session.store.seed_store import locate

    from .seed_import import seed_rows

    workspace = workspace_of(args)
    if locate(workspace).sessions_dir is None:  # a stat or two without a seed store
        return []
    with open_database(args, spec) as store:
        return seed_rows(workspace, store.exists)


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
                "" if row.get("source") == "seed" else str(row["turns"]),
                row["phase"] or "",
                title,
                SEED_SOURCE if row.get("source") == "seed" else "in use" if row["inUse"] else "",
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
