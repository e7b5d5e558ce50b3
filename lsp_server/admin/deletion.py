"""`sessions rm ID` and `sessions prune --older-than AGE | --empty`: this project only, asked first.

In the configured store: the local files, or the PostgreSQL rows (`targets.project_store`).
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from session.terminal_text import counted

from .output import confirm, iso, short, write_json
from .running import OK, ProblemError, UsageError
from .table import clean, quoted
from .targets import in_use, project_store, resolve_session, where

if TYPE_CHECKING:
    from session.store.backend import SessionStore

_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """Parse `90d`, `12h`, `2w`, `30m`, `45s`."""
    match = _DURATION.fullmatch(text)
    if match is None:
        raise UsageError(
            f"invalid duration {quoted(text)}: use a number and a unit, e.g. 90d, 12h, 2w"
        )
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def removed_items(store: SessionStore, session_id: str) -> list[object] | None:
    """Delete a session under its lock (`session.deletion`); what went, for `--json`.

    None: kept (`only_empty` is not asked here). `SessionLockedError` if it is in use.
    """
    from session.deletion import delete_unless_in_use

    deleted = delete_unless_in_use(store, session_id)
    if deleted is None:
        return None
    if store.kind == "local":
        return [*deleted.removed, *deleted.blobs]
    return [  # the row (an id), a leftover spool (a path), the blobs (digests)
        *(f"session {item}" if isinstance(item, str) else item for item in deleted.removed),
        *(f"blob {digest}" for digest in deleted.blobs),
    ]


def cmd_rm(args: argparse.Namespace) -> int:
    """`sessions rm ID`: refuses a session in use; asks unless --yes."""
    with project_store(args, writes=True) as store:
        return remove(args, store)


def remove(args: argparse.Namespace, store: SessionStore) -> int:
    """`sessions rm ID` in `store`."""
    from session.errors import SessionLockedError

    session_id = resolve_session(store, args.id)
    if in_use(store, session_id):
        raise ProblemError(f"session {session_id} is in use by a running agent-assist; not deleted")
    info = next((i for i in store.list_sessions() if i.session_id == session_id), None)
    label = session_id
    if info is not None:
        title = quoted(info.title) if info.title else "untitled"
        label += f" ({title}, {counted(info.turns, 'turn')})"
    if not confirm(f"Delete session {label}? This cannot be undone.", args.yes):
        raise ProblemError("not confirmed; nothing was deleted (use --yes to skip the question)")
    try:
        removed = removed_items(store, session_id) or []
    except SessionLockedError:
        raise ProblemError(
            f"session {session_id} is in use by a running agent-assist; not deleted"
        ) from None
    if args.json:
        write_json({"deleted": [session_id], "removed": [str(p) for p in removed]})
    elif store.kind == "postgresql":
        sys.stdout.write(f"Deleted session {session_id} from {store.label}.\n")
    else:
        sys.stdout.write(f"Deleted session {session_id} ({counted(len(removed), 'file')}).\n")
    return OK


def cmd_prune(args: argparse.Namespace) -> int:
    """`sessions prune --older-than 90d | --empty [--dry-run]`: this project only."""
    if args.older_than is None and not args.empty:
        raise UsageError("say which sessions to delete: --older-than AGE, --empty, or both")
    age = parse_duration(args.older_than) if args.older_than is not None else None
    with project_store(args, writes=True) as store:
        return prune(args, store, age)


def _remove_pointers(store: SessionStore, report: dict[str, Any]) -> None:
    """Remove the stale pointers (found again: one may have been taken up since)."""
    if report["stalePointers"]:
        report["removedPointers"] = store.remove_stale_pointers()


def _chosen(args: argparse.Namespace, store: SessionStore, cutoff: datetime | None) -> list[Any]:
    """Return the sessions older than `cutoff` and/or without a turn, as `args` ask."""
    chosen = store.list_sessions()
    if cutoff is not None:
        chosen = [i for i in chosen if i.updated_at < cutoff]
    if args.empty:  # those the listing folds (`list_sessions_page` without `empty`)
        listed = {i.session_id for i in store.list_sessions_page()[0]}
        chosen = [i for i in chosen if i.session_id not in listed]
    return chosen


def prune(args: argparse.Namespace, store: SessionStore, age: timedelta | None) -> int:
    """`sessions prune` in `store`."""
    from session.deletion import delete_unless_in_use
    from session.errors import SessionLockedError

    cutoff = datetime.now(UTC) - age if age is not None else None
    old = _chosen(args, store, cutoff)
    held = store.held_locks(i.session_id for i in old)
    busy = [i for i in old if i.session_id in held]
    candidates = [i for i in old if i not in busy]
    name = store.project_name
    report: dict[str, Any] = {
        "project": name,
        "olderThan": args.older_than,
        "cutoff": iso(cutoff) if cutoff is not None else None,
        "empty": bool(args.empty),
        "candidates": [i.session_id for i in candidates],
        "skippedInUse": [i.session_id for i in busy],
        "skippedWithContent": [],  # --empty: found to have content under its lock
        "deleted": [],
        "dryRun": bool(args.dry_run),
    }
    out: list[str] = []
    for info in candidates:
        title = clean(info.title or "")
        out.append(f"  {info.session_id}  {short(info.updated_at)}  {title}")
    for info in busy:
        out.append(f"  {info.session_id}  in use: skipped")
    pointers = store.stale_pointers()
    report["stalePointers"] = pointers
    report["removedPointers"] = []
    if not args.json:
        asked = [f"older than {args.older_than}"] if args.older_than else []
        asked += ["without a turn"] if args.empty else []
        head = "Would delete" if args.dry_run else " and ".join(asked).capitalize()
        place = name if store.kind == "local" else where(store)
        sys.stdout.write(f"{head}: {counted(len(candidates), 'session')} in {place}\n")
        sys.stdout.write("".join(line + "\n" for line in out))
        if pointers:
            sys.stdout.write(
                f"{counted(len(pointers), 'stale pointer')}: of editors that are gone, naming no "
                "session in use (the sessions stay)\n"
            )
            sys.stdout.write("".join(f"  {clean(instance)}\n" for instance in pointers))
    if args.dry_run or not candidates:
        if not args.dry_run:
            _remove_pointers(store, report)
        if args.json:
            write_json(report)
        elif report["removedPointers"]:
            sys.stdout.write(
                f"Removed {counted(len(report['removedPointers']), 'stale pointer')}.\n"
            )
        return OK
    if not confirm(
        f"Delete {counted(len(candidates), 'session')}? This cannot be undone.", args.yes
    ):
        raise ProblemError("not confirmed; nothing was deleted (use --yes to skip the question)")
    _remove_pointers(store, report)
    for info in candidates:
        try:
            gone = delete_unless_in_use(store, info.session_id, only_empty=args.empty)
        except SessionLockedError:
            report["skippedInUse"].append(info.session_id)
            continue
        if gone is None:  # a turn since it was listed, or a seed's session with messages
            report["skippedWithContent"].append(info.session_id)
            continue
        report["deleted"].append(info.session_id)
    if args.json:
        write_json(report)
    else:
        went = f", {counted(len(report['removedPointers']), 'stale pointer')}"
        sys.stdout.write(
            f"Deleted {counted(len(report['deleted']), 'session')}"
            f"{went if report['removedPointers'] else ''}.\n"
        )
        for session_id in report["skippedWithContent"]:
            sys.stdout.write(f"  {session_id}  kept: it has a turn or messages now\n")
    return OK
