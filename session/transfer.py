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

Events are compared as JSON values, never as bytes: PostgreSQL keeps U+0000 as U+FFFD and
jsonb keeps neither key order nor spacing. `event_digest` is the SHA-256 of the canonical
form (U+0000 as U+FFFD, -0.0 as 0.0, keys sorted, one line an event) that both sides of a
copy must give, with the same count, for the copy to be verified.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

import orjson

from .checkpoints import CheckpointRecord
from .errors import SessionError, SessionLockedError
from .snapshot import SessionState

Raw = dict[str, Any]  # an event as its log line's JSON object
Status = Literal["copied", "complete", "would-copy", "in-use", "skipped", "failed"]
BATCH = 500  # events per write: one transaction, or one append and fsync


class TransferError(SessionError):
    """A session cannot be copied as it is (the message names it and says why)."""


class VerificationError(TransferError):
    """The target's copy of a session differs from the source's."""


class InUseError(TransferError):
    """A running writer holds the session's lock, in the source or in the target."""


class SessionSource(Protocol):
    """What a store gives to be copied from (a target is read the same way to verify)."""

    @property
    def description(self) -> str:
        """Return where the sessions are, for messages (never a password)."""
        ...

    def session_ids(self) -> list[str]:
        """Return the ids of the project's sessions."""
        ...

    def exists(self, session_id: str) -> bool:
        """Return True if the store holds the session."""
        ...

    def reading(self, session_id: str) -> AbstractContextManager[None]:
        """Hold the session's lock, if it may have a writer, while it is read.

        `SessionLockedError` when a running writer holds it.
        """
        ...

    def raw_events(self, session_id: str) -> list[Raw]:
        """Return the session's readable events as JSON objects, in seq order."""
        ...

    def snapshot(self, session_id: str) -> SessionState | None:
        """Return the session's stored snapshot, or None."""
        ...

    def checkpoints(self, session_id: str) -> list[CheckpointRecord]:
        """Return the session's checkpoint records, by number."""
        ...

    def read_blob(self, digest: str) -> bytes | None:
        """Return a blob's bytes if stored and intact."""
        ...


class SessionImport(Protocol):
    """A session being written into the target, the target's lock held."""

    def existing_events(self) -> list[Raw]:
        """Return the events the target holds already (those of an interrupted copy too)."""
        ...

    def append_events(self, raws: Sequence[Raw]) -> None:
        """Append events continuing the target's; durable when this returns."""
        ...

    def publish(self) -> None:
        """Make the appended events the session's log (a no-op where they already are)."""
        ...

    def put_blob(self, data: bytes) -> str:
        """Store a blob once; return its SHA-256."""
        ...

    def put_checkpoint(self, record: CheckpointRecord) -> None:
        """Store a checkpoint record (its blobs are stored first)."""
        ...

    def needs_snapshot(self, snapshot: SessionState | None) -> bool:
        """Return True if the target's snapshot is missing or behind `snapshot`."""
        ...

    def finish(self, snapshot: SessionState | None, events: Sequence[Raw]) -> None:
        """Store the snapshot and the listing's times, once the events are all there."""
        ...


class SessionTarget(SessionSource, Protocol):
    """A store sessions can be copied into."""

    def importing(self, session_id: str, start: Raw) -> AbstractContextManager[SessionImport]:
        """Take the session's lock (creating it from `start`, its first event, if new)."""
        ...


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


def normalised(value: Any) -> Any:
    """Return a JSON value as both stores give it back: U+0000 as U+FFFD, -0.0 as 0.0."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {normalised(key): normalised(item) for key, item in value.items()}
    if isinstance(value, list):
        return [normalised(item) for item in value]
    if isinstance(value, float) and value == 0:
        return 0.0  # numeric in jsonb has no negative zero
    return value


def canonical(raw: Raw) -> bytes:
    """Return an event's canonical JSON: normalised, keys sorted, compact."""
    return orjson.dumps(normalised(raw), option=orjson.OPT_SORT_KEYS)


def event_digest(raws: Sequence[Raw]) -> str:
    """Return the SHA-256 of the canonical events, one line each."""
    digest = hashlib.sha256()
    for raw in raws:
        digest.update(canonical(raw) + b"\n")
    return digest.hexdigest()


def _first_difference(left: Sequence[Raw], right: Sequence[Raw]) -> int | None:
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if canonical(a) != canonical(b):
            return index
    return None if len(left) == len(right) else min(len(left), len(right))


def check_prefix(session_id: str, source: Sequence[Raw], existing: Sequence[Raw]) -> None:
    """Raise `VerificationError` unless one of the two begins the other.

    The target may hold more: the session went on there after it was copied.
    """
    common = min(len(source), len(existing))
    at = _first_difference(source[:common], existing[:common])
    if at is not None:
        raise VerificationError(
            f"session {session_id}: the target's events differ from the source's from seq "
            f"{at} on (sha256 of the {common} events in both: the target's "
            f"{event_digest(existing[:common])[:16]}…, the source's "
            f"{event_digest(source[:common])[:16]}…): it was changed after it was copied; "
            "nothing more was written to it"
        )


def _record(record: CheckpointRecord) -> bytes:
    return orjson.dumps(normalised(record.model_dump(mode="json")), option=orjson.OPT_SORT_KEYS)


def verify_copy(
    session_id: str,
    source_events: Sequence[Raw],
    records: Sequence[CheckpointRecord],
    target: SessionSource,
) -> str:
    """Compare the target's copy with the source's: events (count, SHA-256), checkpoints, blobs.

    Return the digest; raise `VerificationError` naming what differs.
    """
    copied = target.raw_events(session_id)[: len(source_events)]  # it may have gone on there
    want, got = event_digest(source_events), event_digest(copied)
    if len(copied) != len(source_events) or want != got:
        at = _first_difference(source_events, copied)
        raise VerificationError(
            f"session {session_id}: verification failed: the source has {len(source_events)} "
            f"events (sha256 {want[:16]}…), the target {len(copied)} (sha256 {got[:16]}…); "
            f"they differ from seq {at} on"
        )
    theirs = {record.number: _record(record) for record in target.checkpoints(session_id)}
    for record in records:
        if theirs.get(record.number) != _record(record):
            raise VerificationError(
                f"session {session_id}: verification failed: checkpoint {record.number} "
                "is missing from the target or differs there"
            )
    for digest in sorted({d for record in records for d in record.files.values()}):
        if target.read_blob(digest) is None:
            raise VerificationError(
                f"session {session_id}: verification failed: blob {digest[:12]}… of its "
                "checkpoints is missing from the target or damaged there"
            )
    return want


def _copy_checkpoints(
    session_id: str,
    records: Sequence[CheckpointRecord],
    source: SessionSource,
    target: SessionSource,
    into: SessionImport | None,
) -> int:
    """Copy the records the target lacks (blobs first); return how many (or would be)."""
    there = {record.number: _record(record) for record in target.checkpoints(session_id)}
    copied = 0
    for record in records:
        if record.number in there:
            if there[record.number] != _record(record):
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
        events = source.raw_events(session_id)
        if not events:
            return SessionResult(
                session_id, "skipped", message="no readable events in the source; not copied"
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
