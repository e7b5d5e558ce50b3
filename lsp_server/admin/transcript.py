"""A session's transcript rendered: on the console, and as a Markdown document.

Both are inert (`session.terminal_text`): a Markdown file `cat`-ed later must not drive the
terminal either, so its control characters are shown too (the JSON export keeps them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from session.terminal_text import inert

from .dump import SessionDump, session_meta

if TYPE_CHECKING:
    from rich.console import Console

    from .targets import AnyStore


def print_item(console: Console, item: dict[str, Any]) -> None:
    """Print one transcript item as plain text."""
    role, text, turn = item["role"], inert(item["text"]), item.get("turn")
    if role == "user":
        console.print(f"You (turn {turn}): {text}", markup=False, style="bold")
    elif role == "assistant":
        if text:
            console.print(f"Assistant: {text}", markup=False)
        reason = item.get("endReason")
        if reason and reason != "completed":
            console.print(f"  [turn {turn} {inert(reason)}]", markup=False, style="yellow")
    elif role == "tool":
        status = inert(str(item.get("status")))
        console.print(f"  tool {text} ({status})", markup=False, style="dim")
    else:
        console.print(f"  {text}", markup=False, style="dim")


def transcript_markdown(dump: SessionDump, manager: AnyStore) -> str:
    """Render a session as a readable Markdown document."""
    meta = session_meta(dump, manager)
    lines = [
        f"# Session {dump.session_id}" + (f": {meta['title']}" if meta["title"] else ""),
        "",
        f"- Workspace: `{meta['workspace']}`",
        f"- Created: {meta['createdAt']}",
        f"- Last active: {meta['updatedAt']}",
        f"- Turns: {meta['turns']}",
    ]
    if meta["parentSessionId"]:
        lines.append(f"- Forked from: {meta['parentSessionId']}")
    for problem in dump.problems:
        lines.append(f"- Warning: {problem}")
    current_turn: int | None = None
    for item in dump.items:
        turn = item.get("turn")
        if turn is not None and turn != current_turn:
            current_turn = turn
            lines += ["", f"## Turn {turn}"]
        role, text = item["role"], item["text"]
        if role == "user":
            lines += ["", "**You:**", "", text]
        elif role == "assistant":
            if text:
                lines += ["", "**Assistant:**", "", text]
            reason = item.get("endReason")
            if reason and reason != "completed":
                lines += ["", f"_(turn {reason})_"]
        elif role == "tool":
            lines += ["", f"> tool `{text}` ({item.get('status')})"]
        else:
            lines += ["", f"_{text}_"]
    return inert("\n".join(lines)) + "\n"
