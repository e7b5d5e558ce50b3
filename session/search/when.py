"""A user's words for a moment in time: ISO dates and times, `1d` ago, `yesterday`, `today`.

Parsed at the edges (the CLI, the LSP request, the terminal) into an aware `datetime`;
the clock is injectable so tests can stand at midnight. Days begin at midnight in the
clock's time zone. A bound is either the start of a period (`since`) or its end
(`until`, exclusive): `since yesterday` is yesterday 00:00, `until yesterday` today 00:00,
`until 2026-12-05` the end of that day; a time of day or a duration is the same moment
for both.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta

Clock = Callable[[], datetime]

_DURATION = re.compile(r"(\d+)\s*([smhdw])", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
FORMS = (
    "an ISO date or time (2026-12-05, 2026-12-05T14:30), a duration ago "
    "(30m, 12h, 1d, 2w), today or yesterday"
)


def local_now() -> datetime:
    """Return the time now, aware, in the local time zone."""
    return datetime.now().astimezone()


def _midnight(day: date, like: datetime) -> datetime:
    return datetime.combine(day, time(), tzinfo=like.tzinfo)


def parse_when(text: str, *, end: bool = False, now: Clock = local_now) -> datetime:
    """Return the moment `text` names: the start of its period, or its end when `end`.

    Raise ValueError (saying which forms are understood) for anything else.
    """
    word = text.strip().lower()
    current = now()
    if current.tzinfo is None:
        current = current.replace(tzinfo=UTC)
    if not word:
        raise ValueError(f"empty time: expected {FORMS}")
    if word in ("today", "yesterday"):
        day = current.date() - timedelta(days=1 if word == "yesterday" else 0)
        return _midnight(day + timedelta(days=1) if end else day, current)
    if whole := _DURATION.fullmatch(word):
        amount, unit = int(whole[1]), whole[2].lower()
        try:
            return current - timedelta(**{_UNITS[unit]: amount})
        except OverflowError:
            raise ValueError(f"{text!r} is too far back") from None
    if _DATE.fullmatch(word):
        try:
            day = date.fromisoformat(word)
        except ValueError as exc:
            raise ValueError(f"{text!r} is not a date ({exc})") from None
        return _midnight(day + timedelta(days=1) if end else day, current)
    try:
        moment = datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    except ValueError:
        raise ValueError(f"{text!r} is not a time: expected {FORMS}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=current.tzinfo)
