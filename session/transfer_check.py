"""Checking a copy of a session: events compared as JSON values, checkpoints, blobs.

Events are compared as JSON values, never as bytes: PostgreSQL keeps U+0000 as U+FFFD and
jsonb keeps neither key order nor spacing. `event_digest` is the SHA-256 of the canonical
form (U+0000 as U+FFFD, -0.0 as 0.0, keys sorted, one line an event) that both sides of a
copy must give, with the same count, for the copy to be verified.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from .checkpoints import CheckpointRecord
from .errors import SessionError
from .transfer_sides import Raw

if TYPE_CHECKING:
    from .transfer_sides import SessionSource


class TransferError(SessionError):
    """A session cannot be copied as it is (the message names it and says why)."""


class VerificationError(TransferError):
    """The target's copy of a session differs from the source's."""


class InUseError(TransferError):
    """A running writer holds the session's lock, in the source or in the target."""


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


def record_json(record: CheckpointRecord) -> bytes:
    """Return a checkpoint record as canonical JSON (normalised, keys sorted)."""
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
    theirs = {record.number: record_json(record) for record in target.checkpoints(session_id)}
    for record in records:
        if theirs.get(record.number) != record_json(record):
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
