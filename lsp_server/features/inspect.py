"""agentAssist/inspect: any session's steps, read-only (#42).

The session's log is read as it is now (`session.derive.steps`), in a worker thread: no
lock is taken, this instance's session stays what it is, and it works while another window
holds the session and writes it (`held` says so: its lock is probed, never taken).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from session.derive.steps import TurnSteps, select, turn_steps
from session.events import Event
from session.snapshot import state_from_events

from .. import protocol as proto
from ..protocol import lookback as lb
from ..server import RequestFailedError
from .base import Feature, request

HISTORY_FOLD = 2000  # `history` with `steps`: tool results cut longer (bytes), as `inspect`'s


def turn_views(turns: Sequence[TurnSteps]) -> list[lb.TurnView]:
    """Return the wire form of the steps projection."""
    return [lb.TurnView.model_validate(turn) for turn in turns]


def inspected_turns(
    session_id: str, events: list[Event], params: lb.InspectParams
) -> list[TurnSteps]:
    """Return the turns `params` ask for; a turn or step the session lacks is RequestFailed."""
    turns = turn_steps(events, fold=params.fold or None)
    chosen = select(turns, params.turn, params.step)
    if params.turn is not None and not chosen:
        last = max((t.turn for t in turns), default=0)
        have = f"turns 1–{last}" if last else "no turn yet"
        raise RequestFailedError(f"session {session_id} has no turn {params.turn} ({have})")
    if params.step is not None and not any(t.steps for t in chosen):
        numbers = [s.step for t in select(turns, params.turn) for s in t.steps]
        have = "steps " + ", ".join(map(str, numbers)) if numbers else "no step"
        raise RequestFailedError(
            f"turn {params.turn} of session {session_id} has no step {params.step} ({have})"
        )
    return chosen


class Inspect(Feature):
    """See the module."""

    name = "inspect"

    @request(lb.INSPECT)
    async def inspect(self, params: lb.InspectParams) -> lb.InspectResult:
        """Return a session's turns and steps as its log has them now."""
        if params.step is not None and params.turn is None:
            raise proto.ParamsError(f"{lb.INSPECT}: invalid field 'step': needs 'turn'")
        lifecycle = self.server.lifecycle
        store = lifecycle.store
        session_id = params.session_id
        current = lifecycle.session_id

        def read() -> tuple[list[Event], bool] | None:
            if not store.exists(session_id):
                return None
            events = store.read_events(session_id).events
            held = session_id != current and session_id in store.held_locks([session_id])
            return events, held

        found = await asyncio.to_thread(read)
        if found is None:
            if session_id == current:  # nothing recorded yet
                inspected = lb.InspectResult(
                    session_id=session_id, title=None, held=False, turns=[]
                )
                if params.turn is None:
                    return inspected
                raise RequestFailedError(
                    f"session {session_id} has no turn {params.turn} (no turn yet)"
                )
            raise RequestFailedError(f"no session {session_id} in this project")
        events, held = found
        turns = inspected_turns(session_id, events, params)
        title = state_from_events(session_id, events).title
        return lb.InspectResult(
            session_id=session_id, title=title, held=held, turns=turn_views(turns)
        )
