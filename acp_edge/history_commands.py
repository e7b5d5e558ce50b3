"""`/new`, `/sessions`, `/checkpoint [N]`, `/fork`, `/reset`: a session's history, from a prompt.

What writes files or deletes a session (`/checkpoint N`, `/reset`) is asked first through
`session/request_permission`; anything but a yes does nothing.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from acp.helpers import tool_diff_content

from session.errors import SessionError

from .asking import choose, option
from .listing import listed

if TYPE_CHECKING:
    from .sessions import Held, Sessions

LISTED = 20  # sessions `/sessions` shows
DIFFS = 20  # files whose diff a restore's question shows


def new(held: Held) -> str:
    """Tell the user how to start a fresh session (`/new`): ACP clients create sessions."""
    return (
        "In this editor a new session is a new thread: start one from the agent panel "
        f"(a fresh session of {held.root}). This session stays as it is."
    )


async def sessions(registry: Sessions, held: Held) -> str:
    """`/sessions`: this project's sessions, newest first (title, turns, last active, id)."""
    store = held.engine.lifecycle.store
    rows, total, _folded = await asyncio.to_thread(store.list_rows_page, 0, None, empty=True)
    here = {sid: None for sid, other in registry.held.items() if other.root == held.root}
    rows = listed(rows, here)
    if not rows:
        return "No sessions in this project yet."
    lines = [f"Sessions of {held.root} ({len(rows)}), newest first:"]
    for sid, title, _created, updated, turns, *_ in rows[:LISTED]:
        mark = " (this one)" if sid == held.session_id else ""
        when = updated or "-"
        lines.append(f"- {title or 'untitled'} · {turns} turns · last active {when} · {sid}{mark}")
    if len(rows) > LISTED:
        lines.append(f"… and {len(rows) - LISTED} more (session/list has them all)")
    return "\n".join(lines)


async def checkpoint(registry: Sessions, held: Held, argument: str) -> str:
    """`/checkpoint`: list this session's checkpoints; `/checkpoint N`: restore one, if allowed."""
    lifecycle = held.engine.lifecycle
    if not argument:
        records = await asyncio.to_thread(lifecycle.list_checkpoints)
        if not records:
            return "This session has no checkpoint yet (/save makes one)."
        lines = [f"Checkpoints of session {held.session_id}:"]
        lines += [
            f"- {r.number}: {r.title or 'untitled'} · turn {r.turn} · "
            f"{r.created_at:%Y-%m-%d %H:%M} · {len(r.files)} files"
            for r in records
        ]
        return "\n".join(lines + ["/checkpoint N restores one (files and conversation)."])
    if not argument.isdigit():
        return "Usage: /checkpoint (list) or /checkpoint N (restore checkpoint N)"
    number = int(argument)
    async with held.engine.turn_lock:
        try:
            plan = await asyncio.to_thread(lifecycle.plan_restore, number)
        except SessionError as exc:
            return f"{exc}."
        paths = [relative for relative, _ in plan.writes]
        title = (
            f"Restore checkpoint {number} ({plan.record.title or 'untitled'}): "
            f"write {len(paths)} files and undo the conversation after turn {plan.record.turn}"
        )
        diffs = []
        for relative, data in plan.writes[:DIFFS]:
            target = held.root / relative
            try:
                new_text = data.decode("utf-8")
                old_text = target.read_text(encoding="utf-8") if target.is_file() else None
            except (UnicodeDecodeError, OSError):
                continue  # binary or unreadable: named in the title's count only
            diffs.append(tool_diff_content(str(target), new_text, old_text))
        allowed = await choose(
            registry.link_of(),
            held.session_id,
            title,
            [option("allow", f"Restore checkpoint {number}")],
            kind="edit",
            content=diffs or None,
        )
        if allowed is None:
            return f"Checkpoint {number} not restored: nothing was changed."
        restored = await asyncio.to_thread(lifecycle.restore, plan)
    files = ", ".join(restored) if restored else "no file needed writing"
    skipped = [*plan.skipped, *plan.withheld]
    kept = f" Not restored: {', '.join(skipped)}." if skipped else ""
    return (
        f"Restored checkpoint {number}: {files}.{kept} The conversation is back at turn "
        f"{plan.record.turn}; the later turns stay in the log, undone (this thread still "
        "shows them: load the session again to see it as it is)."
    )


async def fork(registry: Sessions, held: Held) -> str:
    """`/fork`: a new session with this one's history up to its last closed turn."""
    child = await registry.fork(held.root, held.session_id)
    turns = child.engine.lifecycle.current.state.turns
    await registry.close(child.session_id, "forked by /fork")  # in the store, for any client
    return (
        f"Forked session {held.session_id} into {child.session_id} ({turns} turns). Open it "
        "from the session list (or load it) to go on there; this session stays as it is."
    )


async def reset(registry: Sessions, held: Held) -> str:
    """`/reset`: the seed's reset (this session deleted, a fresh one started), if confirmed."""
    lifecycle = held.engine.lifecycle
    targets = await asyncio.to_thread(lifecycle.reset_targets)
    names = " and ".join(f"{t}/" if t == "templates" else t for t in targets)
    choices = [option("allow", "Reset, keep the files")]
    if targets:
        choices.append(option("delete-files", f"Reset and delete {names}"))
    title = f"Reset: delete session {held.session_id} and start a fresh one"
    chosen = await choose(registry.link_of(), held.session_id, title, choices, kind="delete")
    if chosen is None:
        return "Reset cancelled: nothing was changed."
    old = held.session_id
    async with held.engine.turn_lock:
        result = await asyncio.to_thread(lifecycle.reset, chosen == "delete-files")
    registry.rekey(held, result.session_id)
    deleted = f" Deleted {', '.join(result.deleted_files)}." if result.deleted_files else ""
    return (
        f"Session {old} was deleted; a fresh session {result.session_id} started.{deleted} "
        f"This thread was session {old}: open {result.session_id} from the session list "
        "(or start a new thread) to go on."
    )
