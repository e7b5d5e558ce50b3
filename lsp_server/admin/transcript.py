"""A session's transcript rendered: on the console, and as a Markdown document.

Both are inert (`session.terminal_text`): a Markdown file `cat`-ed later must not drive the
terminal either, so its control characters are shown too (the JSON export keeps them).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from session.terminal_text import inert

from .dump import SessionDump, session_meta

if TYPE_CHECKING:
    from rich.console import Console

    from session.derive.steps import Step, TurnSteps
    from session.store.backend import SessionStore


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


def transcript_markdown(dump: SessionDump, store: SessionStore) -> str:
    """Render a session as a readable Markdown document."""
    meta = session_meta(dump, store)
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


def _clock(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%H:%M:%S") if moment is not None else "?"


def span(started: datetime | None, ended: datetime | None) -> str:
    """Return `14:03:07–14:03:09 (2.1 s)` (UTC), or `14:03:07– (open)` while it runs."""
    if started is None and ended is None:
        return "time unknown"
    if ended is None:
        return f"{_clock(started)}– (open)"
    if started is None:
        return f"?–{_clock(ended)}"
    seconds = (ended - started).total_seconds()
    return f"{_clock(started)}–{_clock(ended)} ({seconds:,.{1 if seconds >= 1 else 2}f} s)"


def step_heading(step: Step) -> str:
    """Return `step 2 · 14:03:07–14:03:09 (2.1 s) · model · 1,234 in / 56 out`."""
    parts = [f"step {step.step}", span(step.started_at, step.ended_at)]
    parts.append(step.model or "model not recorded")
    usage = step.usage
    if usage is not None:
        guess = "~" if usage.estimated else ""
        parts.append(f"{guess}{usage.input_tokens:,} in / {guess}{usage.output_tokens:,} out")
    return " · ".join(inert(p) for p in parts)


def _indented(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in inert(text).splitlines() or [""])


def print_steps(console: Console, turn: TurnSteps) -> None:
    """Print one turn and its steps: times, model, usage, tools with results, retries, ends."""
    import orjson

    heading = f"You (turn {turn.turn}) · {span(turn.started_at, turn.ended_at)}: "
    console.print(heading + inert(turn.input), markup=False, style="bold")
    for step in turn.steps:
        console.print("  " + step_heading(step), markup=False, style="cyan")
        for retry in step.retries:
            line = f"    retry: attempt {retry.attempt} abandoned ({retry.kind}): {retry.reason}"
            console.print(inert(line), markup=False, style="yellow")
        if step.text:
            console.print(_indented(step.text, "    "), markup=False)
        for tool in step.tools:
            args = orjson.dumps(tool.args, default=str).decode()
            failed = " (failed)" if tool.is_error else ""
            console.print(f"    tool {inert(tool.name)} {inert(args)}{failed}", markup=False)
            if tool.result is None:
                console.print("      → no result recorded", markup=False, style="dim")
                continue
            console.print(_indented(tool.result, "      │ "), markup=False, style="dim")
            if tool.folded:
                note = f"      … cut: {tool.result_bytes:,} bytes in all (--fold 0 shows all)"
                console.print(note, markup=False, style="dim")
        if step.end_reason:
            console.print(f"    end: {inert(step.end_reason)}", markup=False, style="dim")
    if turn.end_reason is None:
        console.print(f"  [turn {turn.turn} open]", markup=False, style="yellow")
    elif turn.end_reason != "completed":
        console.print(
            f"  [turn {turn.turn} {inert(turn.end_reason)}]", markup=False, style="yellow"
        )
