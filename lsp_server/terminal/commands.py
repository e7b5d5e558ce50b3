"""The slash commands of the terminal chat: each one request to the server, printed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .. import protocol as proto
from ..admin.table import quoted
from ..client import LspError
from .chat_types import Chat
from .file_history import file_history
from .render import markdown, short_time, table
from .search import search
from .steps import show_steps

HELP = [
    ("/save", "save now: a numbered checkpoint of the session and the tracked files"),
    ("/reset, /new", "delete this session, start anew (asks about agent_spec.md, templates/)"),
    ("/fresh", "start a new session; this one stays on disk (/sessions, /open)"),
    ("/checkpoint [n]", "list checkpoints, or restore checkpoint n (files and conversation)"),
    ("/compact", "summarise older turns to free the context window"),
    ("/resume", "print the context injected from the previous session"),
    ("/fork [seq]", "continue in a new session copied up to event seq (default: now)"),
    (
        "/search <text> [key:value]",
        "search this project's sessions; filters since: until: kind: tool: path: (/search)",
    ),
    ("/sessions", "list this project's sessions"),
    ("/open <id>", "switch to another session of this project"),
    ("/history [--steps]", "print this session's transcript (--steps: each model call)"),
    (
        "/file-history PATH [--line TEXT]",
        "every recorded change of a file, newest first, with its diff (--since, --until)",
    ),
    ("/status", "session, model and drift status"),
    ("/withdraw", "take the messages queued while a reply runs back into the input line"),
    ("/clear", "clear the screen"),
    ("/help", "this list"),
    ("/exit", "save and quit (also Ctrl+D, or Ctrl+C at the prompt)"),
    ("Alt+Enter", "a new line in the message (a pasted text stays one message)"),
]


async def show_help(chat: Chat, rest: str) -> None:
    """/help."""
    for name, text in HELP:
        chat.say(f"  {name:<16} {text}")


async def save(chat: Chat, rest: str) -> None:
    """/save."""
    result = await chat.request(proto.SAVE)
    chat.say(
        f"Saved: checkpoint {result['checkpoint']} of session {result['sessionId']} "
        f"({result['path']})",
        "green",
    )


async def reset(chat: Chat, rest: str) -> None:
    """/reset and /new: the server asks about the spec file and templates."""
    try:
        result = await chat.request(proto.RESET)
    except LspError as exc:
        chat.warn(exc.message)
        return
    deleted = result.get("deletedFiles") or []
    note = f" (deleted {', '.join(deleted)})" if deleted else ""
    chat.say(f"New session {result['sessionId']}{note}.", "green")


async def fresh(chat: Chat, rest: str) -> None:
    """/fresh: a new session; the current one is kept."""
    result = await chat.request(proto.NEW)
    chat.say(
        f"New session {result['sessionId']}; {result['previousSessionId']} is kept "
        "(/open to go back).",
        "green",
    )


async def checkpoint(chat: Chat, rest: str) -> None:
    """/checkpoint [n]."""
    if rest:
        if not rest.isdigit() or int(rest) < 1:
            chat.say("Usage: /checkpoint [n] (n ≥ 1)", "yellow")
            return
        with chat.review.asked_by_user():  # the restore's own edits: the user just asked
            result = await chat.request(proto.CHECKPOINT, {"number": int(rest)})
        chat.say(f"Restored checkpoint {result['number']}.", "green")
        for label, key in (
            ("restored", "restoredFiles"),
            ("created since (kept)", "createdFiles"),
            ("skipped", "skippedFiles"),
        ):
            if result.get(key):
                chat.say(f"  {label}: {', '.join(result[key])}")
        return
    result = await chat.request(proto.CHECKPOINT)
    checkpoints = result.get("checkpoints") or []
    if not checkpoints:
        chat.say("No checkpoints yet (/save makes one).")
        return
    rows = [
        [
            str(cp["number"]),
            short_time(cp["createdAt"]),
            str(cp["turn"]),
            cp.get("title") or "",
            "auto" if cp.get("auto") else "save",
        ]
        for cp in checkpoints
    ]
    columns = ["#", "created", "turn", "title", "kind"]
    chat.console.print(table(f"Checkpoints of {result['sessionId']}", columns, rows))


async def compact(chat: Chat, rest: str) -> None:
    """/compact (progress arrives as $/progress)."""
    result = await chat.request(proto.COMPACT)
    if not result.get("compacted"):
        chat.say(result.get("reason") or "Nothing to compact yet: the conversation is short.")
        return
    kind = " (extractive summary)" if result.get("fallback") else ""
    chat.say(
        f"Compacted{kind}: {result['messagesBefore']} → {result['messagesAfter']} messages, "
        f"{result['tokensBefore']} → {result['tokensAfter']} tokens.",
        "green",
    )


async def resume(chat: Chat, rest: str) -> None:
    """/resume: the block injected into the system prompt."""
    result = await chat.request(proto.RESUME)
    context = result.get("context") or ""
    if not context:
        chat.say("No resume context: this session was not resumed.")
        return
    chat.say("Injected resume context:", "bold")
    chat.say(context)


async def fork(chat: Chat, rest: str) -> None:
    """/fork [seq]."""
    params: dict[str, Any] = {}
    if rest:
        if not rest.isdigit():
            chat.say("Usage: /fork [seq]", "yellow")
            return
        params["boundary"] = int(rest)
    result = await chat.request(proto.FORK, params)
    chat.say(
        f"Forked {result['parentSessionId']} at seq {result['boundary']}: "
        f"now in session {result['sessionId']}.",
        "green",
    )


async def list_sessions(chat: Chat, rest: str) -> None:
    """/sessions."""
    found = await chat.request(proto.SESSIONS)
    sessions, folded = found.get("sessions") or [], found.get("empty") or 0
    if not sessions:
        chat.say("No sessions yet." if not folded else f"{_without_turn(folded)} not shown.")
        return
    rows = []
    for row in sessions:
        title = row.get("title") or "(untitled)"  # `title: null`: no turn yet
        if row.get("parentSessionId"):
            title = f"{title} (fork of {row['parentSessionId']})".strip()
        rows.append(
            [
                "●" if row.get("active") else "",
                row["sessionId"],
                short_time(row["updatedAt"]),
                str(row["turns"]),
                row.get("phase") or "",
                title,
            ]
        )
    columns = ["", "id", "updated", "turns", "phase", "title"]
    chat.console.print(table("Sessions of this project", columns, rows))
    if folded:
        chat.say(f"{_without_turn(folded)} not shown.")


def _without_turn(count: int) -> str:
    return f"{count} session{'s' if count != 1 else ''} without a turn"


async def open_session(chat: Chat, rest: str) -> None:
    """/open <id> (a unique prefix is enough)."""
    if not rest:
        chat.say("Usage: /open <session id>", "yellow")
        return
    sessions = (await chat.request(proto.SESSIONS, {"includeEmpty": True})).get("sessions") or []
    matches = [s["sessionId"] for s in sessions if s["sessionId"].startswith(rest)]
    if len(matches) != 1:
        what = "matches several sessions" if matches else "matches no session"
        chat.warn(f"{quoted(rest)} {what}; /sessions lists them.")
        return
    result = await chat.request(proto.OPEN, {"sessionId": matches[0]})
    chat.say(f"Opened session {result['sessionId']}.", "green")
    if result.get("context"):
        chat.say(result["context"], "dim")


async def history(chat: Chat, rest: str) -> None:
    """/history [--steps]: the transcript of the current session (or its steps)."""
    if rest not in ("", "--steps"):
        chat.say("Usage: /history [--steps]", "yellow")
        return
    if rest:
        found = await chat.request(proto.HISTORY, {"steps": True})
        show_steps(chat, found.get("turns") or [])
        return
    result = await chat.request(proto.HISTORY)
    items = result.get("items") or []
    if not items:
        chat.say("No messages yet.")
        return
    for item in items:
        role = item.get("role")
        reason = item.get("endReason")
        if role == "user":
            chat.say(f"You (turn {item.get('turn')}): {item.get('text')}", "bold")
        elif role == "assistant":
            if item.get("text"):
                chat.console.print(markdown(item["text"]))
            if item.get("partial"):
                chat.say(f"  [turn {item.get('turn')} {reason or 'open'}: incomplete]", "yellow")
            elif reason and reason != "completed":
                chat.say(f"  [turn {item.get('turn')} {reason}]", "yellow")
        elif role == "tool":
            chat.say(f"  tool {item.get('text')} ({item.get('status')})", "dim")
        else:
            chat.say(f"  {item.get('text')}", "dim")


async def status(chat: Chat, rest: str) -> None:
    """/status."""
    status = await chat.request(proto.STATUS)
    rows = [
        ("session", status.get("sessionId")),
        ("state", status.get("state")),
        ("resumed", "yes" if status.get("resumed") else None),
        ("turns", status.get("turns")),
        ("phase", status.get("phase") or "none"),
        ("model", status.get("model") or "not configured"),
        ("context window", f"{status.get('contextWindow')} tokens{window_source(status)}"),
        ("drifted files", status.get("drift")),
        ("read-only", "yes" if status.get("readOnly") else None),
        ("persistence", status.get("persistence")),
        ("workspace", str(chat.workspace)),
        ("instance", chat.instance_id),
    ]
    for key, value in rows:
        if value is not None:
            chat.say(f"  {key:<14} {value}")


def window_source(status: dict[str, Any]) -> str:
    """Say where the window in use comes from: nothing for the default or a setting."""
    source = status.get("contextWindowSource")
    if source in ("/props", "/v1/models"):
        return f" (stated by the model server: {source})"
    if source == "overflow":
        return " (the model server refused a longer prompt)"
    return ""


SlashCommand = Callable[[Chat, str], Awaitable[None]]

COMMANDS: dict[str, SlashCommand] = {
    "save": save,
    "reset": reset,
    "new": reset,
    "fresh": fresh,
    "checkpoint": checkpoint,
    "compact": compact,
    "resume": resume,
    "fork": fork,
    "search": search,
    "sessions": list_sessions,
    "open": open_session,
    "history": history,
    "file-history": file_history,
    "status": status,
    "help": show_help,
}
