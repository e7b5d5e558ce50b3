"""A listed session, whichever store lists it: `SessionInfo`, its stored row and the times of both.

Both stores list the same rows (`ListedRow`, the times as RFC 3339 text as JSON shows
them, plus the update time in microseconds for ordering), so the editors' pickers, the CLI
and ACP's `session/list` read one shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

# A listed session as stored: (session id, title, created_at, updated_at, turns, parent
# session id, phase, updated_us), the times as RFC 3339 text (UTC, `Z`), as JSON shows them.
ListedRow = tuple[str, str | None, str, str, int, str | None, str | None, int]


@dataclass
class SessionInfo:
    """One row of a session listing."""

    session_id: str
    title: str | None
    created_at: datetime
    updated_at: datetime
    turns: int
    parent_session_id: str | None = None
    phase: str | None = None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)


def to_us(moment: datetime) -> int:
    """Return microseconds since the epoch, exactly (no float on the way)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICRO


def iso(us: int) -> str:
    """Return the RFC 3339 text (UTC, `Z`) of a time in microseconds since the epoch."""
    return f"{(_EPOCH + timedelta(microseconds=us)).isoformat()[:-6]}Z"


def iso_of(moment: datetime) -> str:
    """Return the RFC 3339 text (UTC, `Z`) of a moment (naive: taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    elif moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return f"{moment.isoformat()[:-6]}Z"


class Listed(Protocol):
    """What a listed row is made from: a `SessionInfo`, or PostgreSQL's `SessionRow`."""

    @property
    def session_id(self) -> str:  # noqa: D102 -- the fields of `SessionInfo`, read-only
        ...

    @property
    def title(self) -> str | None: ...  # noqa: D102
    @property
    def created_at(self) -> datetime: ...  # noqa: D102
    @property
    def updated_at(self) -> datetime: ...  # noqa: D102
    @property
    def turns(self) -> int: ...  # noqa: D102
    @property
    def parent_session_id(self) -> str | None: ...  # noqa: D102
    @property
    def phase(self) -> str | None: ...  # noqa: D102


def listed_row(info: Listed) -> ListedRow:
    """Return a row whose times are datetimes (PostgreSQL's) as the local listing keeps it."""
    return (
        info.session_id,
        info.title,
        iso_of(info.created_at),
        iso_of(info.updated_at),
        info.turns,
        info.parent_session_id,
        info.phase,
        to_us(info.updated_at),
    )


def row_info(row: ListedRow) -> SessionInfo:
    """Build a `SessionInfo` from a listed row."""
    sid, title, created, updated, turns, parent, phase, _ = row
    # Both times are stored as text: parsing it is 4x cheaper than epoch + timedelta.
    from_iso = datetime.fromisoformat
    return SessionInfo(sid, title, from_iso(created), from_iso(updated), turns, parent, phase)
