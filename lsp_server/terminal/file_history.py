"""`/file-history PATH [--line TEXT] [--since WHEN] [--until WHEN]`: a file's timeline.

The server sends every recorded change of the file across the project's sessions, newest
first (`agentAssist/fileHistory`); this prints each with its diff, coloured as the edit
review colours one. What the model, the user or the store wrote is made inert by `Chat.say`.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from session.terminal_text import inert

from .. import protocol as proto
from ..client import LspError
from ..protocol.lookback import FILE_HISTORY
from .edit_review import diff_style
from .render import short_time

if TYPE_CHECKING:
    from .chat_types import Chat

USAGE = "Usage: /file-history PATH [--line TEXT] [--since WHEN] [--until WHEN]"
OPTIONS = ("line", "since", "until")
LIMIT = 50  # changes printed; more are counted by the server's `truncated`
DIFF_LINES = 200  # of one change's diff: more are counted, not printed
MESSAGE_CHARS = 200  # of the user's message shown above a change


def file_history_words(rest: str) -> tuple[str, dict[str, str]] | None:
    """Split the line into the path and its options; None when it is not one path + options."""
    try:
        words = shlex.split(rest)
    except ValueError:  # an unclosed quote
        return None
    paths: list[str] = []
    options: dict[str, str] = {}
    at = 0
    while at < len(words):
        word = words[at]
        at += 1
        name, equals, value = word.removeprefix("--").partition("=")
        if word.startswith("--") and name in OPTIONS:
            if not equals:
                if at == len(words):
                    return None
                value = words[at]
                at += 1
            if not value:
                return None
            options[name] = value
            continue
        paths.append(word)
    if len(paths) != 1:
        return None
    return paths[0], options


def where(change: dict[str, Any]) -> str:
    """Return `turn 2 · step 1`, `turn 2`, or `outside a turn`."""
    turn, step = change.get("turn"), change.get("step")
    if turn is None:
        return "outside a turn"
    return f"turn {turn}" if step is None else f"turn {turn} · step {step}"


def what(change: dict[str, Any]) -> str:
    """Return `edit (write_file)`, or `drift (changed outside the assistant)`."""
    kind = str(change.get("kind"))
    if kind == "drift":
        return "drift (changed outside the assistant)"
    return f"{kind} ({change['tool']})" if change.get("tool") else kind


def clipped(text: str, limit: int = MESSAGE_CHARS) -> str:
    """Return the text on one line, cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def show_change(chat: Chat, change: dict[str, Any]) -> None:
    """Print one change: its heading, the user's message, its diff (or why there is none)."""
    from rich.text import Text

    title = change.get("sessionTitle") or "(untitled)"
    ts = change.get("ts")
    when = short_time(ts) if isinstance(ts, str) else "?"
    chat.say(
        f"{when}  {title} ({change.get('sessionId')})  {where(change)}  {what(change)}", "bold"
    )
    if change.get("userMessage"):
        chat.say(f"  You: {clipped(str(change['userMessage']))}", "dim")
    diff = change.get("diff")
    if not isinstance(diff, str):
        chat.say(f"  (no diff: {change.get('reason') or 'a side was not kept'})", "yellow")
        return
    lines = diff.splitlines()
    for line in lines[:DIFF_LINES]:
        chat.console.print(Text("  " + inert(line), style=diff_style(line)), soft_wrap=True)
    if len(lines) > DIFF_LINES:
        chat.say(f"  … {len(lines) - DIFF_LINES:,} more diff lines not shown", "dim")


async def file_history(chat: Chat, rest: str) -> None:
    """/file-history PATH [--line TEXT] [--since WHEN] [--until WHEN]."""
    parsed = file_history_words(rest)
    if parsed is None:
        chat.say(USAGE, "yellow")
        return
    path, options = parsed
    try:
        result = await chat.request(FILE_HISTORY, {"path": path, "limit": LIMIT, **options})
    except LspError as exc:
        if exc.not_served:
            chat.warn("File history is not available from this server yet.")
            return
        if exc.code == proto.INVALID_PARAMS:
            chat.warn(exc.message.splitlines()[0] if exc.message else USAGE)
            return
        raise
    changes: list[dict[str, Any]] = result.get("changes") or []
    shown = str(result.get("path") or path)
    if not changes:
        found = f" with a line containing {options['line']!r}" if "line" in options else ""
        chat.say(f"No recorded change of {shown}{found}.")
        return
    count = f"{len(changes)} change{'s' if len(changes) != 1 else ''}"
    chat.say(f"History of {shown}: {count}, newest first", "bold")
    for change in changes:
        chat.say("")
        show_change(chat, change)
    if result.get("truncated"):
        chat.say(f"… older changes not shown (the newest {LIMIT}; --since narrows)", "dim")
