"""`sessions migrate --to DSN | --from DSN`: this project's sessions into or out of PostgreSQL.

The copy itself is `session/transfer.py`'s. Here: the two stores opened, progress on
stderr (a bar on a terminal, plain lines otherwise, nothing with `--json`), a line per
session and a summary on stdout. Exit codes: 0 every session is there and verified, 1 a
session was not copied (in use, unreadable, differing) or only the readable part of its
damaged log was, or a store failed; 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .output import write_json
from .running import OK, PROBLEM, ProblemError, UsageError, run_command
from .targets import workspace_of

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from session.store.backend import SessionStore
    from session.transfer import SessionResult, TransferProgress

_NOT_COPIED = ("in-use", "skipped", "failed")


def register_migrate(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `agent-assist sessions migrate`."""
    p = sub.add_parser(
        "migrate",
        parents=[common],
        help="copy this project's sessions into or out of PostgreSQL",
        description="Copy this project's sessions (events, snapshots, checkpoints and their "
        "files) from the local store into a PostgreSQL database (--to), or from the database "
        "into the local store (--from). The source is only read. A rerun copies nothing "
        "twice and finishes an interrupted copy; every session is verified. Exit codes: 0 "
        "all copied and verified, 1 a session was not copied (or only the readable part of a "
        "damaged log) or a store failed, 2 usage.",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--to", metavar="DSN", help="copy into this database (postgresql://…)")
    where.add_argument("--from", dest="source", metavar="DSN", help="copy from this database")
    p.add_argument(
        "--project", dest="workspace", metavar="DIR", help="project directory (as --workspace)"
    )
    p.add_argument("--dry-run", action="store_true", help="only say what would be copied")
    p.add_argument("--schema", help=argparse.SUPPRESS)  # the database schema (tests use their own)
    p.add_argument("--batch-size", type=int, help=argparse.SUPPRESS)  # events per write
    p.set_defaults(func=lambda a: run_command(a, cmd_migrate))


def _open_database(dsn: str, schema: str, workspace: Path, *, create: bool) -> SessionStore | None:
    """Open the project's sessions in the database; None if it has no schema and not `create`."""
    from session.pg.importing import schema_exists
    from session.store.choose import open_store

    if not create and not schema_exists(dsn, schema):
        return None
    # Its schema created or upgraded to this version's, whichever way the copy goes.
    return open_store(dsn, workspace, schema=schema, pool_size=2, create=True)


def cmd_migrate(args: argparse.Namespace) -> int:
    """`sessions migrate`: see the module docstring."""
    import psycopg

    from session.pg.dsn import parse_dsn, without_secrets
    from session.pg.errors import InvalidDsnError
    from session.pg.importing import database_label
    from session.pg.query import DEFAULT_SCHEMA, check_schema_name
    from session.store.choose import open_store, transfer_side
    from session.transfer import BATCH, transfer

    workspace = workspace_of(args)
    dsn: str = args.to or args.source
    try:
        info = parse_dsn(dsn)
        schema = check_schema_name(args.schema or DEFAULT_SCHEMA)
    except (InvalidDsnError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if args.batch_size is not None and args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    local = transfer_side(open_store(None, workspace))
    if args.to and not local.session_ids():
        raise ProblemError(_nothing(local.description, workspace))
    try:
        store = _open_database(dsn, schema, workspace, create=bool(args.to) and not args.dry_run)
        try:
            if store is None and args.source:
                raise ProblemError(
                    f"{database_label(info, schema)} does not exist (no agent-assist schema "
                    "there): there are no sessions to copy from it"
                )
            if args.to and store is not None and store.read_only_reason:
                raise ProblemError(store.read_only_reason)
            database = transfer_side(store) if store is not None else None
            source = local if args.to else database
            target = database if args.to else local
            assert source is not None
            ids = source.session_ids()
            if not ids:
                raise ProblemError(_nothing(source.description, workspace))
            with progress_display(quiet=args.json) as display:
                results = transfer(
                    source,
                    target,
                    ids,
                    dry_run=args.dry_run,
                    batch=args.batch_size or BATCH,
                    progress=display,
                )
        finally:
            if store is not None:
                store.close()
    except psycopg.Error as exc:  # a statement failed (connection failures are reported apart)
        detail = without_secrets((str(exc).strip().splitlines() or [type(exc).__name__])[0], info)
        raise ProblemError(f"PostgreSQL at {info.where}: {detail}") from None
    except KeyboardInterrupt:
        sys.stderr.write(
            "agent-assist: interrupted; what was copied is kept, rerun to finish the copy\n"
        )
        return PROBLEM
    where = target.description if target is not None else database_label(info, schema)
    _report(args, source.description, where, results)
    incomplete = any(r.status in _NOT_COPIED or r.damaged for r in results)
    return PROBLEM if incomplete else OK


def _nothing(where: str, workspace: Path) -> str:
    return (
        f"{where} has no sessions of the project at {workspace}: nothing to copy "
        "(is --project right?)"
    )


def describe(result: SessionResult) -> str:
    """Return what happened to one session, in a few words (and what could not be read)."""
    said = _outcome(result)
    return f"{said}; but {result.damaged}" if result.damaged else said


def _outcome(result: SessionResult) -> str:
    if result.status in _NOT_COPIED:
        return result.message or result.status
    extra = f" ({result.already} already there)" if result.already else ""
    if result.checkpoints:
        extra += f", {result.checkpoints} checkpoint{'s' * (result.checkpoints != 1)}"
    if result.status == "would-copy":
        return f"would copy {result.copied} events{extra}"
    if result.status == "complete":
        verified = ", verified" if result.digest else ""
        more = f"; {result.message}" if result.message else ""
        return f"already there ({result.events} events){verified}{more}"
    return f"copied {result.copied} events{extra}, verified"


def _report(
    args: argparse.Namespace, source: str, target: str, results: list[SessionResult]
) -> None:
    counts = {status: sum(r.status == status for r in results) for status in _STATUSES}
    events = sum(r.copied for r in results)
    if args.json:
        write_json(
            {
                "from": source,
                "to": target,
                "dryRun": bool(args.dry_run),
                "copied": counts["copied"] + counts["would-copy"],
                "alreadyThere": counts["complete"],
                "inUse": counts["in-use"],
                "skipped": counts["skipped"],
                "failed": counts["failed"],
                "damaged": sum(r.damaged is not None for r in results),
                "events": events,
                "sessions": [
                    {
                        "sessionId": r.session_id,
                        "status": r.status,
                        "events": r.events,
                        "alreadyThere": r.already,
                        "copied": r.copied,
                        "checkpoints": r.checkpoints,
                        "sha256": r.digest,
                        "message": r.message,
                        "damaged": r.damaged,
                    }
                    for r in results
                ],
            }
        )
        return
    copied = counts["copied"] + counts["would-copy"]
    verb = "would be copied" if args.dry_run else "copied"
    parts = [f"{copied} {verb}", f"{counts['complete']} already there"]
    if counts["in-use"]:
        parts.append(f"{counts['in-use']} in use (not copied: rerun when closed)")
    for status in ("skipped", "failed"):
        if counts[status]:
            parts.append(f"{counts[status]} {status}")
    damaged = sum(r.damaged is not None for r in results)
    if damaged:
        parts.append(f"{damaged} with a damaged log (only its readable events copied)")
    sys.stdout.write(f"{', '.join(parts)}; {events} events, from {source} to {target}.\n")
    if args.dry_run:
        sys.stdout.write("Dry run: nothing was written.\n")


_STATUSES = ("copied", "complete", "would-copy", "in-use", "skipped", "failed")


@contextmanager
def progress_display(*, quiet: bool) -> Iterator[Callable[[TransferProgress], None]]:
    """Show progress on stderr: a bar on a terminal, plain lines otherwise, nothing if quiet."""
    if quiet:
        yield lambda step: None
    elif not sys.stderr.isatty():
        yield _plain_progress
    else:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=Console(stderr=True, highlight=False),
            transient=True,
        ) as bar:
            yield ProgressBar(bar)


def _plain_progress(step: TransferProgress) -> None:
    head = f"[{step.index}/{step.sessions}] {step.session_id}"
    if step.result is not None:
        sys.stderr.write(f"{head}: {describe(step.result)}\n")
    elif 0 < step.copied < step.to_copy:
        sys.stderr.write(f"{head}: {step.copied}/{step.to_copy} events copied\n")
    sys.stderr.flush()


class ProgressBar:
    """Two bars: the sessions, and the events of the one being copied; a line per session."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self._sessions: TaskID | None = None
        self._events: TaskID | None = None

    def __call__(self, step: TransferProgress) -> None:
        """Show one step of the transfer."""
        if self._sessions is None or self._events is None:
            self._sessions = self.bar.add_task("sessions", total=step.sessions)
            self._events = self.bar.add_task("events", total=None)
        if step.result is not None:
            head = f"[{step.index}/{step.sessions}] {step.session_id}"
            self.bar.console.print(f"{head}: {describe(step.result)}", markup=False)
            self.bar.update(self._sessions, completed=step.index)
        else:
            self.bar.update(
                self._events,
                description=f"events of {step.session_id}",
                completed=step.copied,
                total=step.to_copy or None,
            )
