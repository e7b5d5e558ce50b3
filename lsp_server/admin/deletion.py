"""`sessions rm ID` and `sessions prune --older-than AGE`: this project only, asked first."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from .output import confirm, iso, short, write_json
from .running import OK, ProblemError, UsageError
from .targets import in_use, project_manager, resolve_session

if TYPE_CHECKING:
    from session.store.manager import SessionManager

_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """Parse `90d`, `12h`, `2w`, `30m`, `45s`."""
    match = _DURATION.fullmatch(text)
    if match is None:
        raise UsageError(f"invalid duration {text!r}: use a number and a unit, e.g. 90d, 12h, 2w")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def delete_unless_in_use(manager: SessionManager, session_id: str) -> list[object]:
    """Delete a session's files while holding its lock; SessionLockedError if it is in use."""
    from session.catalog import pointers_to
    from session.checkpoints import CheckpointStore

    lock = manager.acquire_lock(session_id)
    try:
        naming = pointers_to(manager, session_id)  # read while the session still exists
        removed: list[object] = list(manager.delete_session(session_id))
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
    from session.errors import SessionLockedError

    manager = project_manager(args)
    session_id = resolve_session(manager, args.id)
    if in_use(manager, session_id):
        raise ProblemError(f"session {session_id} is in use by a running agent-assist; not deleted")
    info = next((i for i in manager.list_sessions() if i.session_id == session_id), None)
    label = f"{session_id}" + (f" ({info.title!r}, {info.turns} turns)" if info else "")
    if not confirm(f"Delete session {label}? This cannot be undone.", args.yes):
        raise ProblemError("not confirmed; nothing was deleted (use --yes to skip the question)")
    try:
        removed = delete_unless_in_use(manager, session_id)
    except SessionLockedError:
        raise ProblemError(
            f"session {session_id} is in use by a running agent-assist; not deleted"
        ) from None
    if args.json:
        write_json({"deleted": [session_id], "removed": [str(p) for p in removed]})
    else:
        sys.stdout.write(f"Deleted session {session_id} ({len(removed)} files).\n")
    return OK


def cmd_prune(args: argparse.Namespace) -> int:
    """`sessions prune --older-than 90d [--dry-run]`: this project only."""
    from session.errors import SessionLockedError

    age = parse_duration(args.older_than)
    manager = project_manager(args)
    cutoff = datetime.now(UTC) - age
    old = [i for i in manager.list_sessions() if i.updated_at < cutoff]
    busy = [i for i in old if in_use(manager, i.session_id)]
    candidates = [i for i in old if i not in busy]
    report: dict[str, Any] = {
        "project": manager.project_dir.name,
        "olderThan": args.older_than,
        "cutoff": iso(cutoff),
        "candidates": [i.session_id for i in candidates],
        "skippedInUse": [i.session_id for i in busy],
        "deleted": [],
        "dryRun": bool(args.dry_run),
    }
    out: list[str] = []
    for info in candidates:
        out.append(f"  {info.session_id}  {short(info.updated_at)}  {info.title or ''}")
    for info in busy:
        out.append(f"  {info.session_id}  in use: skipped")
    if not args.json:
        head = "Would delete" if args.dry_run else "Older than " + args.older_than
        sys.stdout.write(f"{head}: {len(candidates)} session(s) in {manager.project_dir.name}\n")
        sys.stdout.write("".join(line + "\n" for line in out))
    if args.dry_run or not candidates:
        if args.json:
            write_json(report)
        return OK
    if not confirm(f"Delete {len(candidates)} session(s)? This cannot be undone.", args.yes):
        raise ProblemError("not confirmed; nothing was deleted (use --yes to skip the question)")
    for info in candidates:
        try:
            delete_unless_in_use(manager, info.session_id)
        except SessionLockedError:
            report["skippedInUse"].append(info.session_id)
            continue
        report["deleted"].append(info.session_id)
    if args.json:
        write_json(report)
    else:
        sys.stdout.write(f"Deleted {len(report['deleted'])} session(s).\n")
    return OK
