"""Copying sessions from one store into another, exactly, resumably and verified.

What is copied: a session's events (the same seq, ts, type, turn, step and data), its
snapshot, its checkpoint records and the blobs they keep. Pointers are not: a pointer is
the state of one editor window on one machine (`active_<instance>.json`), not of a
session, and copying it would repoint the target's window of the same instance id
(another machine's, in a shared database) at a session it never opened.

Each session is read under the source's lock when it has one (a session in use is
skipped: it is still being written) and written under the target's. The target's events
must be a prefix of the source's: a rerun checks that prefix and appends only the rest,
so a session already complete is left as it is and one an interruption cut short is
resumed from the target's next seq. Nothing is ever written to the source.

How a copy is checked (events as JSON values, checkpoints, blobs): `transfer_check`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from typing import Literal, TypeVar

from .checkpoints import CheckpointRecord
from .errors import SessionLockedError
from .file_changes import event_digests
from .transfer_check import (
    InUseError,
    TransferError,
    VerificationError,
    check_prefix,
    event_digest,
    normalised,
    record_json,
    verify_copy,
)
from .transfer_sides import Raw, SessionImport, SessionSource, SessionTarget

__all__ = ["InUseError", "Raw", "TransferError", "VerificationError", "event_digest", "normalised"]

Status = Literal["copied", "complete", "would-copy", "in-use", "skipped", "failed"]
BATCH = 500  # events per write: one transaction, or one append and fsync


@dataclass
class SessionResult:
    """What happened to one session."""

    session_id: str
    status: Status
    events: int = 0  # in the source
    already: int = 0  # in the target before this run
    copied: int = 0  # events this run appended (or would)
    checkpoints: int = 0  # checkpoint records this run copied (or would)
    digest: str | None = None  # of the source's events, when verified
    message: str | None = None
    damaged: str | None = None  # what of the source cannot be read (its readable part is copied)


@dataclass(frozen=True)
class TransferProgress:
    """Where a transfer is: the session it copies and how far; `result` once it is done."""

    session_id: str
    index: int  # 1-based
    sessions: int
    copied: int = 0
    to_copy: int = 0
    result: SessionResult | None = None


Progress = Callable[[TransferProgress], None]


def _copy_checkpoints(
    session_id: str,
    records: Sequence[CheckpointRecord],
    source: SessionSource,
    target: SessionSource,
    into: SessionImport | None,
) -> int:
    """Copy the records the target lacks (blobs first); return how many (or would be)."""
    there = {record.number: record_json(record) for record in target.checkpoints(session_id)}
    copied = 0
    for record in records:
        if record.number in there:
            if there[record.number] != record_json(record):
                raise VerificationError(
                    f"session {session_id}: the target's checkpoint {record.number} differs "
                    "from the source's; not copied"
                )
            continue
        copied += 1
        if into is None:
            continue
        for digest in sorted(set(record.files.values())):
            data = source.read_blob(digest)
            if data is None:
                raise TransferError(
                    f"session {session_id}: checkpoint {record.number} keeps blob "
                    f"{digest[:12]}…, which the source does not hold intact; checkpoint not "
                    "copied"
                )
            into.put_blob(data)
        into.put_checkpoint(record)
    return copied


def _copy_change_blobs(events: Sequence[Raw], source: SessionSource, into: SessionImport) -> None:
    """Copy the blobs the events' file changes name (before the events that name them).

    A blob the source no longer holds only costs that change its diff (as in the source).
    """
    for digest in sorted({d for event in events for d in event_digests(event)}):
        data = source.read_blob(digest)
        if data is not None:
            into.put_blob(data)


def copy_session(
    source: SessionSource,
    target: SessionTarget | None,
    session_id: str,
    *,
    dry_run: bool = False,
    batch: int = BATCH,
    report: Callable[[int, int], None] = lambda copied, to_copy: None,
) -> SessionResult:
    """Copy one session (or, with `dry_run`, say what would be); see the module docstring.

    `target` None: a target that does not exist yet (a dry run only). `report(copied,
    to_copy)` is called as events are written.
    """
    with ExitStack() as stack:
        _locked(stack, source.reading(session_id), source.description)
        events, damaged = source.events_to_copy(session_id)
        if not events:
            return SessionResult(
                session_id,
                "skipped",
                message="no readable events in the source; not copied",
                damaged=damaged,
            )
        records = source.checkpoints(session_id)
        if dry_run:
            there = target if target is not None and target.exists(session_id) else None
            existing = there.raw_events(session_id) if there is not None else []
            check_prefix(session_id, events, existing)
            added = len(records)
            if there is not None:
                added = _copy_checkpoints(session_id, records, source, there, None)
            rest = max(0, len(events) - len(existing))
            status: Status = "would-copy" if rest or added or there is None else "complete"
            return SessionResult(
                session_id,
                status,
                len(events),
                len(existing),
                rest,
                added,
                message=_ahead(events, existing),
                damaged=damaged,
            )
        assert target is not None
        snapshot = source.snapshot(session_id)
        into = _locked(stack, target.importing(session_id, events[0]), target.description)
        existing = into.existing_events()
        check_prefix(session_id, events, existing)
        to_copy = events[len(existing) :]
        report(0, len(to_copy))
        for done in range(0, len(to_copy), batch):
            part = to_copy[done : done + batch]
            _copy_change_blobs(part, source, into)
            into.append_events(part)
            report(done + len(part), len(to_copy))
        into.publish()
        added = _copy_checkpoints(session_id, records, source, target, into)
        ahead = _ahead(events, existing)
        changed = bool(to_copy or added) or (ahead is None and into.needs_snapshot(snapshot))
        if changed and ahead is None:  # never put an older snapshot over the target's own
            into.finish(snapshot, events)
        digest = verify_copy(session_id, events, records, target)
    return SessionResult(
        session_id,
        "copied" if changed else "complete",
        len(events),
        len(existing),
        len(to_copy),
        added,
        digest,
        ahead,
        damaged,
    )


def _ahead(source: Sequence[Raw], existing: Sequence[Raw]) -> str | None:
    more = len(existing) - len(source)
    if more <= 0:
        return None
    return f"the target has {more} more event(s), written there after it was copied"


T = TypeVar("T")


def _locked(stack: ExitStack, context: AbstractContextManager[T], where: str) -> T:
    try:
        return stack.enter_context(context)
    except SessionLockedError as exc:
        raise InUseError(f"{exc} (in {where}): not copied; rerun when it is closed") from None


def transfer(
    source: SessionSource,
    target: SessionTarget | None,
    session_ids: Sequence[str],
    *,
    dry_run: bool = False,
    batch: int = BATCH,
    progress: Progress | None = None,
) -> list[SessionResult]:
    """Copy the sessions one by one; a session in use or that cannot be copied is reported.

    Anything else (the database going away, a full disk) stops the transfer: what was
    copied stays, and a rerun resumes.
    """
    results: list[SessionResult] = []
    total = len(session_ids)
    for index, session_id in enumerate(session_ids, 1):

        def report(
            copied: int, to_copy: int, session_id: str = session_id, at: int = index
        ) -> None:
            if progress is not None:
                progress(TransferProgress(session_id, at, total, copied, to_copy))

        try:
            result = copy_session(
                source, target, session_id, dry_run=dry_run, batch=batch, report=report
            )
        except InUseError as exc:
            result = SessionResult(session_id, "in-use", message=str(exc))
        except TransferError as exc:
            result = SessionResult(session_id, "failed", message=str(exc))
        results.append(result)
        if progress is not None:
            progress(
                TransferProgress(
                    session_id, index, total, result.copied, result.copied, result=result
                )
            )
    return results
