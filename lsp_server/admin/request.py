"""`sessions request ID --turn T --step S` and `doctor --verify ID`: requests proved from the log.

The rebuild is `engine/model/request_digest.py`'s: the real agent makes the body, captured
instead of sent (pydantic-ai is imported; nothing goes on the network).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from session.terminal_text import counted

from .output import write_json
from .running import OK, PROBLEM, ProblemError, UsageError
from .targets import project_store, resolve_session

if TYPE_CHECKING:
    from engine.model.request_rebuild import Rebuilt
    from session.events import Event


def _events(args: argparse.Namespace) -> tuple[str, list[Event]]:
    with project_store(args) as store:
        session_id = resolve_session(store, args.id)
        return session_id, list(store.read_events(session_id).events)


def cmd_request(args: argparse.Namespace) -> int:
    """Print the rebuilt request of one step as JSON; exit 1 unless it matches its digest."""
    from engine.model.request_rebuild import find_step, rebuild

    if args.turn < 1 or args.step < 1:
        raise UsageError("--turn and --step count from 1")
    session_id, events = _events(args)
    index = find_step(events, args.turn, args.step)
    if index is None:
        raise ProblemError(f"session {session_id} has no step {args.step} in turn {args.turn}")
    result = asyncio.run(rebuild(events, index))
    write_json(
        {
            "session": session_id,
            "turn": result.turn,
            "step": result.step,
            "recordedSha256": result.recorded,
            "rebuiltSha256": result.sha256,
            "matches": result.matches,
            "problem": result.problem,
            "request": result.body,
        }
    )
    where = f"turn {result.turn} step {result.step}"
    if result.matches:
        sys.stderr.write(f"{where}: the rebuilt request matches the digest recorded when sent\n")
        return OK
    why = result.problem or "the rebuilt request differs from the one recorded when sent"
    sys.stderr.write(f"{where}: {why}\n")
    return PROBLEM


def cmd_verify(args: argparse.Namespace) -> int:
    """`doctor --verify ID`: rebuild every proved request; name each step that differs."""
    from engine.model.request_rebuild import proved_steps, rebuild

    args.id = args.verify
    session_id, events = _events(args)
    indexes = proved_steps(events)

    async def run_all() -> list[Rebuilt]:
        return [await rebuild(events, index) for index in indexes]

    results = asyncio.run(run_all())
    differ = [r for r in results if not r.matches and not r.unchecked]
    unchecked = [r for r in results if r.unchecked]
    if getattr(args, "json", False):
        write_json(
            {
                "session": session_id,
                "requests": len(results),
                "differ": [{"turn": r.turn, "step": r.step, "problem": r.problem} for r in differ],
                "unchecked": [{"turn": r.turn, "step": r.step} for r in unchecked],
            }
        )
        return PROBLEM if differ else OK
    lines = [
        f"turn {r.turn} step {r.step}: {r.problem or 'the rebuilt request differs'}"
        for r in [*differ, *unchecked]
    ]
    total = counted(len(results), "request")
    if not results:
        lines.append(f"session {session_id}: no request with a recorded digest")
    elif differ:
        lines.append(f"session {session_id}: {len(differ)} of {total} do not match")
    else:
        checked = len(results) - len(unchecked)
        lines.append(f"session {session_id}: {total}, {checked} checked, each matching")
    sys.stdout.write("\n".join(lines) + "\n")
    return PROBLEM if differ else OK
