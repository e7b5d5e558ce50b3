"""`/search <text> [key:value ...]`: the search request with its filters, and its table.

Filters are words of the line: `since:1d`, `until:2026-12-05`, `kind:tool-call`,
`tool:write_file`, `path:conf/app.yaml`, or as flags, `--since 1d` (`--since=1d`). Every
other word is the text searched for, taken literally. The server reads the values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import protocol as proto
from ..admin.table import quoted
from ..client import LspError
from .render import short_time, table

if TYPE_CHECKING:
    from .chat_types import Chat

FILTERS = ("since", "until", "kind", "tool", "path")
USAGE = "Usage: /search <text> [since:WHEN] [until:WHEN] [kind:K] [tool:NAME] [path:PATH]"


def search_words(line: str) -> tuple[str, dict[str, str]]:
    """Split a `/search` line into the text and its filters (`key:value` or `--key value`)."""
    words = line.split()
    text: list[str] = []
    filters: dict[str, str] = {}
    at = 0
    while at < len(words):
        word = words[at]
        at += 1
        key, colon, value = word.partition(":")
        if colon and key in FILTERS and value:
            filters[key] = value
            continue
        flag, equals, value = word.removeprefix("--").partition("=")
        if word.startswith("--") and flag in FILTERS:
            if equals and value:
                filters[flag] = value
                continue
            if not equals and at < len(words):
                filters[flag] = words[at]
                at += 1
                continue
        text.append(word)
    return " ".join(text), filters


async def search(chat: Chat, rest: str) -> None:
    """/search <text> [filters]."""
    query, filters = search_words(rest)
    if not query:
        chat.say(USAGE, "yellow")
        return
    try:
        result = await chat.request(proto.SEARCH, {"query": query, "limit": 20, **filters})
    except LspError as exc:
        if exc.not_served:
            chat.warn("Search is not available from this server yet.")
            return
        if exc.code == proto.INVALID_PARAMS:
            chat.warn(exc.message)
            return
        raise
    hits: list[dict[str, Any]] = result.get("results") or []
    if not hits:
        chat.say(f"No matches for {quoted(query)}.")
        return
    rows = [
        [
            str(hit.get("sessionId")),
            "" if hit.get("turn") is None else str(hit["turn"]),
            "" if hit.get("step") is None else str(hit["step"]),
            "" if not hit.get("ts") else short_time(str(hit["ts"])),
            str(hit.get("type")),
            str(hit.get("snippet")),
        ]
        for hit in hits
    ]
    columns = ["session", "turn", "step", "time (UTC)", "type", "snippet"]
    chat.console.print(table(f"Matches for {quoted(query)}", columns, rows))
