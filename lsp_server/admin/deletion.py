"""`sessions rm ID` and `sessions prune --older-than AGE`: this project only, asked first.

In the configured store: the local files, or the PostgreSQL rows (`targets.project_store`).
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from .output import confirm, iso, short, write_json
from .running import OK, ProblemError, UsageError
from .table import clean, quoted
from .targets import (
    database_of,
    in_use,
    local_of,
    project_name,
    project_store,
    resolve_session,
    where,
)

if TYPE_CHECKING:
    from session.store.pointers import StalePointer

    from .targets import AnyStore

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


def delete_unless_in_use(store: AnyStore, session_id: str) -> list[object]:
    """Delete a session while holding its lock; SessionLockedError if it is in use.

    Locally its files and the pointers naming it; in PostgreSQL its row, with which its
    events, checkpoints and pointers go. Then the blobs only its checkpoints kept.
    """
    database = database_of(store)
    if database is not None:
        writer = database.pg.acquire_writer(session_id)  # as a server would: refused if in use
        try:
            removed: list[object] = [  # the row (an id), a leftover spool (a path)
                f"session {item}" if isinstance(item, str) else item
                for item in database.delete_session(session_id)
            ]
        finally:
            writer.release()
        checkpoints = database.checkpoint_store()
        return removed + [f"blob {digest}" for digest in checkpoints.collect_garbage()]
    from session.catalog import pointers_to
    from session.checkpoints import CheckpointStore

    manager = local_of(store)
    lock = manager.acquire_lock(session_id)
    try:
        naming = pointers_to(manager, session_id)  # read while the session still exists
        removed = list(manager.delete_session(session_id))
        for pointer in naming:
            manager.delete_pointer(pointer.instance_id)
            removed.append(pointer.path)
    finally:
        lock.release()
    # Blobs only its checkpoints used (shared ones stay): nothing else ever deletes them.
    removed += CheckpointStore(manager).collect_garbage()
    return removed


def cmd_rm(args: argparse.Namespace) -> int:
    """`sessions rm ID`: refuses a session in use; asks unless --yes."""
    with project_store(args) as store:
        return remove(args, store)


def remove(args: argparse.Namespace, store: AnyStore) -> int:
    """`sessions rm ID` in `store`."""
    from session.errors import SessionLockedError

    session_id = resolve_session(store, args.id)
    if in_use(store, session_id):
        raise ProblemError(f"session {session_id} is in use by a running agent-assist; not deleted")
    info = next((i for i in store.list_sessions() if i.session_id == session_id), None)
    label = f"{session_id}" + (f" ({info.title!r}, {info.turns} turns)" if info else "")
    if not confirm(f"Delete session {label}? This cannot be undone.", args.yes):
        raise ProblemError("not confirmed; nothing was deleted (use --yes to skip the question)")
    try:
        removed = delete_unless_in_use(store, session_id)
    except SessionLockedError:
        raise ProblemError(
            f"session {session_id} is in use by a running agent-assist; not deleted"
        ) from None
    if args.json:
        write_json({"deleted": [session_id], "removed": [str(p) for p in removed]})
    elif (database := database_of(store)) is not None:
        sys.stdout.write(f"Deleted session {session_id} from {database.label}.\n")
    else:
        sys.stdout.write(f"Deleted session {session_id} ({len(removed)} files).\n")
    return OK


def cmd_prune(args: argparse.Namespace) -> int:
    """`sessions prune --older-than 90d [--dry-run]`: this project only."""
    age = parse_duration(args.older_than)
    with project_store(args) as store:
        return prune(args, store, age)


def stale_pointers(store: AnyStore) -> list[StalePointer]:
    """Return the local pointers of editor processes that are gone (none in a database)."""
    if database_of(store) is not None:
        return []  # a shared store's pointers come from many machines: no pid says anything
    from session.store.pointers import stale_pointers as stale

    return stale(local_of(store))


def _remove_pointers(store: AnyStore, report: dict[str, Any]) -> None:
    """Remove the stale pointers (found again: one may have been taken up since)."""
    if database_of(store) is None and report["stalePointers"]:
        from session.store.pointers import remove_stale_pointers

        removed = remove_stale_pointers(local_of(store))
        report["removedPointers"] = [str(path) for path in removed]


def prune(args: argparse.Namespace, store: AnyStore, age: timedelta) -> int:
    """`sessions prune` in `store`."""
    from session.errors import SessionLockedError

    cutoff = datetime.now(UTC) - age
    old = [i for i in store.list_sessions() if i.updated_at < cutoff]
    held = store.held_locks(i.session_id for i in old)
    busy = [i for i in old if i.session_id in held]
    candidates = [i for i in old if i not in busy]
    name = project_name(store)
    report: dict[str, Any] = {
        "project": name,
        "olderThan": args.older_than,
        "cutoff": iso(cutoff),
        "candidates": [i.session_id for i in candidates],
        "skippedInUse": [i.session_id for i in busy],
        "deleted": [],
        "dryRun": bool(args.dry_run),
    }
    out: list[str] = []
    for info in candidates:
        title = clean(info.title or "")
        out.append(f"  {info.session_id}  {short(info.updated_at)}  {title}")
    for info in busy:
        out.append(f"  {info.session_id}  in use: skipped")
    pointers = stale_pointers(store)
    report["stalePointers"] = [p.instance_id for p in pointers]
    report["removedPointers"] = []
    if not args.json:
        head = "Would delete" if args.dry_run else "Older than " + args.older_than
        place = name if database_of(store) is None else where(store)
        sys.stdout.write(f"{head}: {len(candidates)} session(s) in {place}\n")
        sys.stdout.write("".join(line + "\n" for line in out))
        if pointers:
            sys.stdout.write(
                f"{len(pointers)} stale pointer(s): of editors that are gone, naming no session "
                "in use (the sessions stay)\n"
            )
            sys.stdout.write("".join(f"  {clean(p.instance_id)}\n" for p in pointers))
    if args.dry_run or not candidates:
        if not args.dry_run:
            _remove_pointers(store, report)
        if args.json:
            write_json(report)
        elif report["removedPointers"]:
            sys.stdout.write(f"Removed {len(report['removedPointers'])} stale pointer(s).\n")
        return OK
    if not confirm(f"Delete {len(candidates)} session(s)? This cannot be undone.", args.yes):
        raise ProblemError("not confirmed; nothing was deleted (use --yes to skip the question)")
    _remove_pointers(store, report)
    for info in candidates:
        try:
            delete_unless_in_use(store, info.session_id)
        except SessionLockedError:
            report["skippedInUse"].append(info.session_id)
            continue
        report["deleted"].append(info.session_id)
    if args.json:
        write_json(report)
    else:
        removed = f", {len(report['removedPointers'])} stale pointer(s)"
        sys.stdout.write(
            f"Deleted {len(report['deleted'])} session(s)"
            f"{removed if report['removedPointers'] else ''}.\n"
        )
    return OK
