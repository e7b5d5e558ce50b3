"""Our commands in the editor's command menu (`available_commands_update`), run from a prompt.

A prompt that starts with one of them (`/save`, `/compact`, `/search TEXT`, `/status`, and
`history_commands`' `/new`, `/sessions`, `/checkpoint [N]`, `/fork`, `/reset`) runs it
instead of a turn: nothing is asked of the model, and the answer is an agent message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from acp.helpers import update_available_commands
from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from . import history_commands as history
from .checks import failed

if TYPE_CHECKING:
    from acp.schema import AvailableCommandsUpdate

    from .sessions import Held, Sessions

SEARCH_LIMIT = 10


def _command(name: str, description: str, hint: str | None = None) -> AvailableCommand:
    given = AvailableCommandInput(UnstructuredCommandInput(hint=hint)) if hint else None
    return AvailableCommand(name=name, description=description, input=given)


COMMANDS = (
    _command("save", "Save the session and record a checkpoint of the tracked files"),
    _command("compact", "Summarise older turns to free the context window"),
    _command("search", "Find text in this project's sessions (literal)", "text to find"),
    _command("status", "Say which session this is, its turns, model and store"),
    _command("new", "Start a fresh session of this project (how, in this editor)"),
    _command("sessions", "List this project's sessions: title, turns, last active, id"),
    _command("checkpoint", "List this session's checkpoints, or restore one (asked first)", "N"),
    _command("fork", "Fork this session at its last closed turn into a new one"),
    _command("reset", "Delete this session and start a fresh one (asked first)"),
)


def available() -> AvailableCommandsUpdate:
    """Return the `available_commands_update` listing our commands."""
    return update_available_commands(COMMANDS)


def parse(text: str) -> tuple[str, str] | None:
    """Return (command, argument) if `text` is one of our commands, else None."""
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    if name not in {c.name for c in COMMANDS}:
        return None
    return name, rest.strip()


async def run(sessions: Sessions, held: Held, name: str, argument: str) -> str:
    """Run a command between turns; return what to tell the user."""
    engine = held.engine
    if held.turn is not None and not held.turn.done():
        raise failed(f"/{name} waits for no turn: session {held.session_id} is answering")
    if name in HISTORY:
        return await HISTORY[name](sessions, held, argument)
    lifecycle = engine.lifecycle
    if name == "save":
        async with engine.turn_lock:
            saved = lifecycle.explicit_save()
        return f"Saved session {saved.session_id}: checkpoint {saved.checkpoint}."
    if name == "compact":
        done = await engine.compaction.asked()
        if not done.compacted:
            return done.reason or "Nothing to compact."
        how = " (extractive summary)" if done.fallback else ""
        return (
            f"Compacted{how}: {done.messages_before} messages ({done.tokens_before} tokens) "
            f"became {done.messages_after} ({done.tokens_after} tokens)."
        )
    if name == "search":
        return await _search(held, argument)
    state = lifecycle.current.state
    model = engine.config.model.name or "none configured"
    return (
        f"Session {held.session_id} · {state.turns} turns · model {model} · "
        f"store {lifecycle.store.label} · project {held.root}"
    )


async def _new(sessions: Sessions, held: Held, argument: str) -> str:
    return history.new(held)


async def _sessions(sessions: Sessions, held: Held, argument: str) -> str:
    return await history.sessions(sessions, held)


async def _fork(sessions: Sessions, held: Held, argument: str) -> str:
    return await history.fork(sessions, held)


async def _reset(sessions: Sessions, held: Held, argument: str) -> str:
    return await history.reset(sessions, held)


HISTORY: dict[str, Callable[[Sessions, Held, str], Awaitable[str]]] = {
    "new": _new,
    "sessions": _sessions,
    "checkpoint": history.checkpoint,
    "fork": _fork,
    "reset": _reset,
}


async def _search(held: Held, query: str) -> str:
    if not query:
        return "Usage: /search TEXT"
    engine = held.engine
    search = engine.search
    hits = await asyncio.to_thread(search.search, query, None, SEARCH_LIMIT)  # may catch up
    found = [(h.session_id, h.turn, h.snippet) for h in hits]
    if not found:
        return f"Nothing found for {query!r}."
    lines = [f"Found {query!r}:"]
    lines += [
        f"- {sid} turn {turn if turn is not None else '-'}: {snippet}"
        for sid, turn, snippet in found
    ]
    return "\n".join(lines)
