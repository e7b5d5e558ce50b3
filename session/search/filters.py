"""What a search may be narrowed to besides its text: time, kind of event, tool, path.

Both stores apply a `SearchFilter` to the same row columns (`ts`, `type`, `tool`,
`paths`), so a filter means the same on the local index and on PostgreSQL.

- `since`/`until`: the event's time, `since <= ts < until`.
- `kinds`: the event types of each kind (`KINDS`); a row matches any of them.
- `tool`: the tool name of a tool call or result (exact).
- `path`: a workspace path, as the tools take it (`./` and a trailing `/` ignored): a tool
  call naming it in one of its path arguments (`PATH_ARGS`, a string or a list of strings),
  or a drift event listing it (modified, deleted or created); a directory matches the
  paths under it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .when import Clock, local_now, parse_when

KINDS: Mapping[str, tuple[str, ...]] = {
    "user": ("turn/start",),
    "assistant": ("assistant/message", "assistant/chunk"),
    "tool-call": ("tool/call",),
    "tool-result": ("tool/result",),
    "drift": ("workspace/drift",),
    "decision": ("session/decision",),
    "summary": ("session/compact",),
}
# Top-level tool arguments that name workspace paths.
PATH_ARGS = frozenset({"path", "paths", "file", "files", "file_path", "filename", "directory"})
_DOT_SLASH = re.compile(r"^(\./)+")


def normal_path(path: str) -> str:
    """Return a path as the index keeps it: no leading `./`, no trailing `/`."""
    return _DOT_SLASH.sub("", path.strip(" ")).rstrip("/")


def joined_paths(paths: Iterable[str]) -> str | None:
    """Return the `paths` column for some paths: each between newlines, or None if none."""
    kept = [p for p in (normal_path(p) for p in paths) if p and "\n" not in p]
    return "\n" + "\n".join(kept) + "\n" if kept else None


def tool_paths(args: Any) -> list[str]:
    """Return the paths a tool call's arguments name (see `PATH_ARGS`)."""
    if not isinstance(args, dict):
        return []
    found: list[str] = []
    for key, value in args.items():
        if key not in PATH_ARGS:
            continue
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            found.extend(v for v in value if isinstance(v, str))
    return found


def kind_types(words: str | Iterable[str]) -> tuple[str, ...]:
    """Return the event types of some kinds (`tool-call`, or several, comma-separated)."""
    names = words.split(",") if isinstance(words, str) else list(words)
    types: list[str] = []
    for name in names:
        key = name.strip().lower().replace("_", "-").replace(" ", "-")
        if not key:
            continue
        if key not in KINDS:
            raise ValueError(f"unknown kind {name.strip()!r}: one of {', '.join(KINDS)}")
        types.extend(t for t in KINDS[key] if t not in types)
    return tuple(types)


class FilterError(ValueError):
    """A filter word that cannot be understood; `field` names which (`since`, `kind`...)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class SearchFilter:
    """What a search is narrowed to (None: not narrowed); see the module docstring."""

    since: datetime | None = None
    until: datetime | None = None
    types: tuple[str, ...] = ()
    tool: str | None = None
    path: str | None = None

    @property
    def empty(self) -> bool:
        """Whether nothing is filtered."""
        return self == NO_FILTER


NO_FILTER = SearchFilter()


def search_filter(
    *,
    since: str | None = None,
    until: str | None = None,
    kind: str | None = None,
    tool: str | None = None,
    path: str | None = None,
    now: Clock = local_now,
) -> SearchFilter:
    """Parse a user's filter words; FilterError names the field (`since: ...`)."""
    try:
        start = parse_when(since, now=now) if since is not None else None
    except ValueError as exc:
        raise FilterError("since", str(exc)) from None
    try:
        end = parse_when(until, end=True, now=now) if until is not None else None
    except ValueError as exc:
        raise FilterError("until", str(exc)) from None
    try:
        types = kind_types(kind) if kind is not None else ()
    except ValueError as exc:
        raise FilterError("kind", str(exc)) from None
    where = normal_path(path) if path is not None else None
    if path is not None and not where:
        raise FilterError("path", "empty path")
    return SearchFilter(start, end, types, tool.strip() or None if tool else None, where)
