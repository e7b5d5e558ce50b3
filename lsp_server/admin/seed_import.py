"""`sessions import`: the seed's own store, listed and copied into the local store.

The seed's tool keeps its sessions in `~/.config/datarobot/agent_assist/projects/<name>_<hash>/
sessions/` (`$AGENT_ASSIST_SEED_HOME`, or `--from PATH`: its root, a project directory or
its `sessions/`). Without `--all` or ids the command only lists what it finds; with them it
copies those sessions into this project's store (`session/store/seed_store.py`): never
over a session of the same id, never writing into the seed's store. Into PostgreSQL
(`--store DSN` or `AGENT_ASSIST_STORE`), each is made one of ours in a scratch local store
(its file, its log begun) and copied as `sessions migrate` copies, verified. A file there
that cannot be read is named (`damaged: …`) and skipped. Exit codes: 0 ok (damaged files only
warned about), 1 nothing found, an id not there, a session in use or not copied; 2 usage.
`sessions list` shows the seed's sessions not imported yet after ours.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .output import iso, short, write_json
from .running import OK, PROBLEM, ProblemError, UsageError, run_command
from .table import render, terminal_columns
from .targets import open_database, store_spec, workspace_of

if TYPE_CHECKING:
    from session.store.backend import SessionStore
    from session.store.seed_store import ImportOutcome, SeedScan, SeedSession

_STATUS_WORDS = {
    "imported": "imported",
    "would-import": "would be imported",
    "already-imported": "already imported",
    "not-imported": "not imported",
    "in-use": "in use",
    "failed": "not imported",
}


def register_import(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `agent-assist sessions import`."""
    p = sub.add_parser(
        "import",
        parents=[common],
        help="list and import the sessions the seed's tool saved for this project",
        description="Find this project's sessions in the seed's store (~/.config/datarobot/"
        "agent_assist, $AGENT_ASSIST_SEED_HOME, or --from) and copy them into the local "
        "store: the named ids, or all of them with --all; without either, only list them. "
        "The seed's files are only read; a session already here is never overwritten. "
        "Exit codes: 0 ok, 1 nothing found or a session not imported, 2 usage.",
    )
    p.add_argument(
        "--from",
        dest="source",
        metavar="PATH",
        help="the seed's store root, one of its projects/<dir>, or that dir's sessions/",
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="session ids (or unique prefixes)")
    p.add_argument("--all", action="store_true", help="import every session found")
    p.add_argument("--dry-run", action="store_true", help="only say what would be imported")
    p.add_argument("--store", metavar="DSN", help="the store: local (default) or postgresql://…")
    p.add_argument("--schema", help=argparse.SUPPRESS)  # the database schema (tests use their own)
    p.set_defaults(func=lambda a: run_command(a, cmd_import))


def _chosen(found: SeedScan, args: argparse.Namespace) -> list[SeedSession] | None:
    """Return the sessions to import (None: only list them); raise for an unknown id."""
    if args.all and args.ids:
        raise UsageError("name session ids or --all, not both")
    if args.all:
        return list(found.sessions)
    if not args.ids:
        return None
    chosen: list[SeedSession] = []
    for wanted in args.ids:
        if not re.fullmatch(r"[a-f0-9]{4,12}", wanted):
            raise UsageError(f"invalid session id {wanted!r} (12 lowercase hex characters)")
        matches = [s for s in found.sessions if s.session_id.startswith(wanted)]
        if len(matches) != 1:
            several = ", ".join(s.session_id for s in matches)
            where = found.location.sessions_dir
            raise ProblemError(
                f"{wanted!r} matches several sessions: {several}"
                if matches
                else f"no session {wanted} in the seed's store ({where})"
            )
        if matches[0] not in chosen:
            chosen.append(matches[0])
    return chosen


def cmd_import(args: argparse.Namespace) -> int:
    """`sessions import`: see the module docstring."""
    from session.store.choose import open_store, seed_destination
    from session.store.seed_store import scan

    workspace = workspace_of(args)
    found = scan(workspace, Path(args.source) if args.source else None)
    chosen = _chosen(found, args) if found.sessions else None
    spec = store_spec(args)
    if spec is not None:
        outcomes, statuses, into = _into_database(args, spec, found, chosen or [])
    else:
        store = open_store(None, workspace)
        outcomes, statuses = _import(store, found, chosen or [], dry_run=args.dry_run)
        into = seed_destination(store)
    if args.json:
        _report_json(args, found, statuses, outcomes)
    else:
        _report_text(args, found, statuses, chosen is not None, into)
    if found.note is not None and not found.problems:
        if not args.json:
            sys.stderr.write(f"agent-assist: {found.note}\n")
        return PROBLEM
    failed = any(o.status in ("in-use", "failed") for o in outcomes.values())
    return PROBLEM if failed else OK


def _import(
    store: SessionStore, found: SeedScan, chosen: list[SeedSession], *, dry_run: bool
) -> tuple[dict[str, ImportOutcome], dict[str, str]]:
    """Import `chosen` into `store`: (their outcomes, every session found's status)."""
    from session.store.choose import import_seed_session
    from session.store.seed_store import is_imported

    outcomes: dict[str, ImportOutcome] = {}
    for seed in chosen:
        outcomes[seed.session_id] = import_seed_session(store, seed, dry_run=dry_run)
    statuses = {
        s.session_id: outcomes[s.session_id].status
        if s.session_id in outcomes
        else ("already-imported" if is_imported(store, s.session_id) else "not-imported")
        for s in found.sessions
    }
    return outcomes, statuses


def _into_database(
    args: argparse.Namespace, spec: str, found: SeedScan, chosen: list[SeedSession]
) -> tuple[dict[str, ImportOutcome], dict[str, str], str]:
    """Import `chosen` into the PostgreSQL store: (outcomes, every session's status, where).

    Each as `import_seed_session` does; one already in the database is never overwritten.
    """
    from session.store.choose import seed_destination
    from session.store.seed_store import ImportOutcome

    there, label = _schema_there(args, spec) if args.dry_run else (True, "")
    if not there:  # a dry run, nothing stored yet: all would be
        outcomes = {s.session_id: ImportOutcome(s.session_id, "would-import", "") for s in chosen}
        statuses = {s.session_id: "not-imported" for s in found.sessions}
        statuses.update({sid: "would-import" for sid in outcomes})
        return outcomes, statuses, f"{label} (created then)"
    with open_database(args, spec, create=not args.dry_run) as store:
        if store.read_only_reason and chosen and not args.dry_run:
            raise ProblemError(store.read_only_reason)
        return (*_import(store, found, chosen, dry_run=args.dry_run), seed_destination(store))


def _schema_there(args: argparse.Namespace, spec: str) -> tuple[bool, str]:
    """Return whether the database has the agent-assist schema, and where it is (messages).

    For a dry run, which must not create the schema that opening the store would.
    """
    import os

    from session.pg.dsn import parse_dsn
    from session.pg.errors import InvalidDsnError, PgStoreError
    from session.pg.importing import database_label, schema_exists
    from session.pg.query import DEFAULT_SCHEMA
    from session.store.choose import SCHEMA_ENV

    schema = args.schema or os.environ.get(SCHEMA_ENV, "").strip() or DEFAULT_SCHEMA
    try:
        return schema_exists(spec, schema), database_label(parse_dsn(spec), schema)
    except InvalidDsnError as exc:
        raise UsageError(str(exc)) from None
    except PgStoreError as exc:
        raise ProblemError(str(exc)) from None


def _report_json(
    args: argparse.Namespace,
    found: SeedScan,
    statuses: dict[str, str],
    outcomes: dict[str, ImportOutcome],
) -> None:
    write_json(
        {
            "from": str(found.location.sessions_dir or found.location.looked_at),
            "note": found.note,
            "dryRun": bool(args.dry_run),
            "imported": sum(o.status in ("imported", "would-import") for o in outcomes.values()),
            "sessions": [
                {
                    "sessionId": s.session_id,
                    "title": s.title,
                    "createdAt": iso(s.state.created_at),
                    "updatedAt": iso(s.updated_at),
                    "phase": s.state.phase,
                    "active": s.active,
                    "path": str(s.path),
                    "status": statuses[s.session_id],
                    "message": outcomes[s.session_id].message if s.session_id in outcomes else None,
                }
                for s in found.sessions
            ],
            "damaged": [{"path": str(path), "reason": why} for path, why in found.problems],
        }
    )


def _report_text(
    args: argparse.Namespace,
    found: SeedScan,
    statuses: dict[str, str],
    importing: bool,
    into: str,
) -> None:
    if found.location.sessions_dir is None:
        return
    count = len(found.sessions)
    out = sys.stdout
    out.write(
        f"{count} session{'s' * (count != 1)} of this project in the seed's store "
        f"({found.location.sessions_dir})\n"
    )
    if found.sessions:
        cells = [
            [
                s.session_id,
                short(s.updated_at),
                _STATUS_WORDS[statuses[s.session_id]],
                s.title or "",
            ]
            for s in found.sessions
        ]
        headers = ["id", "updated (UTC)", "status", "title"]
        out.write(render(headers, cells, shrink=3, columns=terminal_columns()))
    for path, why in found.problems:
        out.write(f"damaged: {path.name}: {why}; skipped (left as it is)\n")
    values = list(statuses.values())
    if not importing:
        if "not-imported" in values:
            out.write("Import them: agent-assist sessions import --all (or name the ids)\n")
        return
    done = values.count("would-import" if args.dry_run else "imported")
    parts = [f"{done} {'would be imported' if args.dry_run else 'imported'} into {into}"]
    if values.count("already-imported"):
        parts.append(f"{values.count('already-imported')} already there (not overwritten)")
    if values.count("in-use"):
        parts.append(f"{values.count('in-use')} in use (not imported: rerun when closed)")
    if found.problems:
        parts.append(f"{len(found.problems)} damaged (skipped)")
    out.write("; ".join(parts) + ".\n")
    if args.dry_run:
        out.write("Dry run: nothing was written.\n")


def seed_rows(workspace: Path, imported: Callable[[str], bool]) -> list[dict[str, Any]]:
    """Return `sessions list` rows for the seed's sessions of `workspace` not imported yet.

    Cheap without a seed store: a few stats, no model loaded; `imported(id)` says whether
    the store has a session of that id.
    """
    from session.paths import is_valid_session_id
    from session.store.seed_store import locate, scan

    if locate(workspace).sessions_dir is None:
        return []
    found = scan(workspace)
    rows = []
    for s in found.sessions:
        if not is_valid_session_id(s.session_id) or imported(s.session_id):
            continue
        rows.append(
            {
                "sessionId": s.session_id,
                "title": s.title,
                "createdAt": iso(s.state.created_at),
                "updatedAt": iso(s.updated_at),
                "turns": 0,
                "phase": s.state.phase,
                "inUse": False,
                "project": s.path.parent.parent.name,
                "workspace": str(workspace),
                "source": "seed",
                "path": str(s.path),
            }
        )
    return rows
