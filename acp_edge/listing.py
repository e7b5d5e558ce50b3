"""`session/list`: our listing as ACP's `SessionInfo`s, a page at a time (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from acp.schema import ListSessionsResponse, SessionInfo

from session.store.rows import ListedRow

PAGE = 50


class BadCursorError(ValueError):
    """A cursor this agent did not hand out."""


def cursor_offset(cursor: str | None) -> int:
    """Return where a page starts (the cursor is the offset into the listing, as text)."""
    if cursor is None:
        return 0
    if not cursor.isdigit() or len(cursor) > 9:
        raise BadCursorError(f"cursor {cursor!r} is not one this agent gave")
    return int(cursor)


def listed(rows: list[ListedRow], open_here: Mapping[str, str | None]) -> list[ListedRow]:
    """Return the rows to list: the sessions with a turn or a title, and those open here.

    `open_here`: the sessions this process holds (id → updated time, if known); a new one
    has no files yet and is listed first. The others without a turn are folded, as the
    listings of the LSP edge and the command line fold them.
    """
    known = {row[0] for row in rows}
    fresh: list[ListedRow] = [
        (sid, None, updated or "", updated or "", 0, None, None, 0)
        for sid, updated in open_here.items()
        if sid not in known
    ]
    kept = [row for row in rows if row[4] > 0 or row[1] or row[0] in open_here]
    return fresh + kept


def page(rows: list[ListedRow], root: Path, offset: int, size: int = PAGE) -> ListSessionsResponse:
    """Return the page of `rows` (all of the project at `root`) from `offset`."""
    return page_of([(row, str(root)) for row in rows], offset, size)


def page_of(
    entries: list[tuple[ListedRow, str]], offset: int, size: int = PAGE
) -> ListSessionsResponse:
    """Return the page of (row, its project's directory) from `offset` (and the next cursor)."""
    chosen = entries[offset : offset + size]
    sessions = [
        SessionInfo(session_id=sid, cwd=cwd, title=title or None, updated_at=updated or None)
        for (sid, title, _created, updated, *_), cwd in chosen
    ]
    more = offset + size < len(entries)
    return ListSessionsResponse(sessions=sessions, next_cursor=str(offset + size) if more else None)
