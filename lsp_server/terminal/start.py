"""Starting where you left off: `--continue`, `--resume [ID]` and the resumed recap.

`--resume` without an id shows a picker; a resumed session opens with a recap (its last
exchange and the files changed since). The server starts a fresh session (`autoResume:
never`); the one chosen is then opened with `agentAssist/open`, as `/open` does. Listings
come from `agentAssist/sessions`, the recap from `agentAssist/history` and `/status`.
"""

from __future__ import annotations

from typing import Any, Protocol

from .. import protocol as proto
from ..client import LspError
from .chat_types import Printer
from .render import plural, short_time

PICKER_ROWS = 15
RECAP_CHARS = 300


class Starter(Printer, Protocol):
    """What starting uses of the chat: it asks, reads sessions, notes the one it opened."""

    opened: bool

    def error(self, text: str) -> None:
        """Print an error line."""
        ...

    async def read(self, prompt: str) -> str:
        """Read an answer to `prompt`."""
        ...

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request to the server and return its result."""
        ...


def describe(row: dict[str, Any]) -> str:
    """Return `"title" · 3 turns · last active 2026-12-05 17:35 UTC` of a listed session."""
    title = row.get("title")
    turns = int(row.get("turns") or 0)
    count = plural(turns, "turn") if turns else "no turns yet"
    name = f'"{title}"' if title else "(untitled)"
    return f"{name} · {count} · last active {short_time(str(row.get('updatedAt')))} UTC"


def ending(items: list[dict[str, Any]]) -> str | None:
    """Return how the last turn ended when it did not complete (None if it did)."""
    answers = [i for i in items if i.get("role") == "assistant"]
    users = [i for i in items if i.get("role") == "user"]
    if users and (not answers or answers[-1].get("turn") != users[-1].get("turn")):
        return "interrupted (no answer was recorded)"
    if not answers:
        return None
    last = answers[-1]
    reason = last.get("endReason")
    if last.get("partial") or (reason and reason != "completed"):
        return f"{reason or 'interrupted'} before its end"
    return None


def clip(text: str, limit: int) -> str:
    """Return `text` cut at `limit` characters, marked with an ellipsis."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


async def listed(chat: Starter, include_empty: bool) -> list[dict[str, Any]]:
    """Return this project's sessions, newest first, without the fresh one just started."""
    found = await chat.request(proto.SESSIONS, {"includeEmpty": include_empty})
    return [row for row in found.get("sessions") or [] if not row.get("active")]


async def choose(chat: Starter, resume: str | None, latest: bool) -> str | None:
    """Return the session to open: the latest, the one named, or the one picked."""
    if latest:
        rows = await listed(chat, include_empty=False)
        if not rows:
            chat.say("No earlier session in this project: a new one starts.", "dim")
            return None
        return str(rows[0]["sessionId"])
    if resume:
        rows = await listed(chat, include_empty=True)
        matches = [r for r in rows if str(r["sessionId"]).startswith(resume)]
        if len(matches) == 1:
            return str(matches[0]["sessionId"])
        what = "matches several sessions" if matches else "matches no session of this project"
        chat.warn(f"--resume {resume} {what}: a new session starts (/sessions lists them).")
        return None
    return await pick(chat)


async def pick(chat: Starter) -> str | None:
    """Show the recent sessions and ask for one; Enter starts a new one."""
    rows = (await listed(chat, include_empty=False))[:PICKER_ROWS]
    if not rows:
        chat.say("No earlier session in this project: a new one starts.", "dim")
        return None
    chat.say("Recent sessions of this project:", "bold")
    for number, row in enumerate(rows, 1):
        chat.say(f"  {number:>2}. {row['sessionId']}  {describe(row)}")
    while True:
        try:
            choice = (await chat.read("Resume which? (number, Enter: a new session) ")).strip()
        except (EOFError, KeyboardInterrupt):
            return None
        if not choice:
            return None
        if choice.isdigit() and 1 <= int(choice) <= len(rows):
            return str(rows[int(choice) - 1]["sessionId"])
        chat.say(f"Please type a number from 1 to {len(rows)}, or Enter.", "dim")


async def open_chosen(chat: Starter, resume: str | None, latest: bool) -> None:
    """Open the session `--continue` or `--resume` asks for (the fresh one stays unused)."""
    session_id = await choose(chat, resume, latest)
    if session_id is None:
        return
    try:
        await chat.request(proto.OPEN, {"sessionId": session_id})
    except LspError as exc:
        chat.error(f"Cannot resume {session_id}: {exc.message}")
        return
    chat.opened = True


async def recap(chat: Starter, status: dict[str, Any]) -> None:
    """Print the resumed session's last exchange and whether files changed since."""
    session_id = str(status.get("sessionId"))
    rows = (await chat.request(proto.SESSIONS, {})).get("sessions") or []
    row = next((r for r in rows if r.get("sessionId") == session_id), None)
    if row is not None:
        chat.say(f"Resumed {describe(row)}", "bold")
    items = (await chat.request(proto.HISTORY, {"sessionId": session_id})).get("items") or []
    users = [i for i in items if i.get("role") == "user"]
    if not users:
        chat.say("  No turns yet.", "dim")
    else:
        last = users[-1]
        chat.say(f"  Last exchange (turn {last.get('turn')}):", "dim")
        chat.say(f"  You: {clip(str(last.get('text') or ''), RECAP_CHARS)}")
        answer = next(
            (
                i
                for i in reversed(items)
                if i.get("role") == "assistant" and i.get("turn") == last.get("turn")
            ),
            None,
        )
        if answer is not None and answer.get("text"):
            chat.say(f"  Assistant: {clip(str(answer['text']), RECAP_CHARS)}")
        how = ending(items)
        if how:
            chat.warn(f"The last turn was {how}.")
    drift = int(status.get("drift") or 0)
    if drift:
        chat.say(f"  {plural(drift, 'file')} changed since (listed above; /resume says more).")
    else:
        chat.say("  No tracked file changed since.", "dim")
