"""What the tools answer about sessions: one read within a byte budget, its Markdown, decisions.

Everything comes from the store as it holds it: texts were redacted when they were written,
and a session kept with `persistence: metadata` gives its metadata only. Answers are JSON
text measured in UTF-8 bytes; a budget is never exceeded (a turn too large alone has its
texts folded), and an answer that was cut says so and how to ask for the rest.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from .scope import Place, RefusedError, Scope

if TYPE_CHECKING:
    from session.derive.steps import Step, TurnSteps
    from session.events import Event
    from session.snapshot import SessionState

RESULT_FOLD = 2000  # a tool result longer (UTF-8 bytes) is folded in a step
DECISION_BYTES = 2000  # a decision longer is folded
METADATA_ONLY = (
    "this session was kept with metadata-only persistence: its messages, tool arguments and "
    "results were never stored, only their sizes and digests"
)


def size(value: Any) -> int:
    """Return the bytes of `value` as the answer's JSON."""
    return len(orjson.dumps(value, default=str))


def dumps(value: Any) -> str:
    """Return the answer's JSON text."""
    return orjson.dumps(value, default=str).decode()


def fold(text: str, limit: int) -> str:
    """Return `text` cut to about `limit` UTF-8 bytes, saying how much was cut."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    return f"{kept}… [cut: {len(data)} bytes in all]"


def shrink(value: Any, limit: int) -> Any:
    """Return `value` with every string longer than `limit` bytes folded."""
    if isinstance(value, str):
        return fold(value, limit)
    if isinstance(value, list):
        return [shrink(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: shrink(v, limit) for k, v in value.items()}
    return value


def iso(moment: datetime | None) -> str | None:
    """Return a time as ISO 8601 text (or None)."""
    return None if moment is None else moment.isoformat()


def load(place: Place) -> tuple[SessionState, list[Event], list[str]]:
    """Read a session's events (never opening it for writing) and its state, and problems."""
    from session.snapshot import state_from_events

    scan = place.store.read_events(place.session_id)
    state = state_from_events(place.session_id, scan.events)
    problems = [p.message for p in scan.problems if p.kind != "recovered"]
    return state, scan.events, problems


def meta(place: Place, state: SessionState, problems: list[str]) -> dict[str, Any]:
    """Return what is known of a session in any persistence mode."""
    found: dict[str, Any] = {
        "session_id": place.session_id,
        "project": place.project,
        "title": state.title,
        "phase": state.phase,
        "turns": state.turns,
        "created_at": iso(state.created_at),
        "last_active": iso(state.updated_at),
        "persistence": state.persistence,
    }
    if state.parent_session_id:
        found["parent_session_id"] = state.parent_session_id
    if problems:
        found["problems"] = problems[:5]
    return found


def step_json(step: Step) -> dict[str, Any]:
    """Return one step: its model call, text and tool calls with their (folded) results."""
    found: dict[str, Any] = {
        "step": step.step,
        "started_at": iso(step.started_at),
        "ended_at": iso(step.ended_at),
        "model": step.model,
        "end_reason": step.end_reason,
        "text": step.text,
        "tools": [
            {
                "name": tool.name,
                "args": tool.args,
                "result": tool.result,
                "result_bytes": tool.result_bytes,
                "folded": tool.folded,
                "is_error": tool.is_error,
            }
            for tool in step.tools
        ],
    }
    if step.usage is not None:
        found["usage"] = {
            "input_tokens": step.usage.input_tokens,
            "output_tokens": step.usage.output_tokens,
            "estimated": step.usage.estimated,
        }
    if step.retries:
        found["retries"] = [{"kind": r.kind, "reason": r.reason} for r in step.retries]
    return found


def turn_json(turn: TurnSteps, steps: bool) -> dict[str, Any]:
    """Return one turn: the user's input and the answer; its steps if asked."""
    found: dict[str, Any] = {
        "turn": turn.turn,
        "input": turn.input,
        "started_at": iso(turn.started_at),
        "ended_at": iso(turn.ended_at),
        "end_reason": turn.end_reason,
    }
    if steps:
        found["steps"] = [step_json(step) for step in turn.steps]
    else:
        found["answer"] = "\n\n".join(s.text for s in turn.steps if s.text.strip())
        tools = [tool.name for step in turn.steps for tool in step.tools]
        if tools:
            found["tools_called"] = tools
    return found


def fitted(turn: dict[str, Any], room: int) -> dict[str, Any] | None:
    """Return `turn` with its texts folded until it fits in `room` bytes (None: it cannot)."""
    limit = 4000
    while limit >= 40:
        cut = {**shrink(turn, limit), "cut": True}
        if size(cut) <= room:
            return cut
        limit //= 2
    return None


def read_session(
    scope: Scope,
    session_id: str,
    from_turn: int | None,
    to_turn: int | None,
    steps: bool,
    max_bytes: int,
) -> str:
    """Answer `read_session` (see the tool's description)."""
    from session.derive.steps import turn_steps

    place = scope.place(session_id)
    if from_turn is not None and to_turn is not None and to_turn < from_turn:
        raise RefusedError(f"to_turn ({to_turn}) is before from_turn ({from_turn})")
    state, events, problems = load(place)
    answer: dict[str, Any] = {"session": meta(place, state, problems)}
    if state.persistence == "metadata":
        answer["note"] = METADATA_ONLY
        answer["turns"] = []
        return dumps(answer)
    chosen = [
        t
        for t in turn_steps(events, fold=RESULT_FOLD)
        if (from_turn is None or t.turn >= from_turn) and (to_turn is None or t.turn <= to_turn)
    ]
    answer["turns"] = []
    answer["complete"] = True
    used = size(answer) + 200  # room for the note of a cut
    if used > max_bytes:
        raise RefusedError(f"max_bytes {max_bytes} is too small for this session's metadata")
    for n, turn in enumerate(chosen):
        item = turn_json(turn, steps)
        room = max_bytes - used - 1
        if size(item) > room:
            small = fitted(item, room) if not answer["turns"] else None
            if small is None:
                answer["complete"] = False
                answer["next_from_turn"] = turn.turn
                answer["note"] = (
                    f"cut at max_bytes {max_bytes}: turns {turn.turn}–{chosen[-1].turn} are "
                    f"not shown; call again with from_turn={turn.turn} (or a larger max_bytes)"
                )
                break
            item = small
            if n + 1 < len(chosen):
                answer["next_from_turn"] = chosen[n + 1].turn
            answer["note"] = (
                f"turn {turn.turn} alone is larger than max_bytes {max_bytes}: its texts are "
                "folded (a larger max_bytes shows more of them)"
            )
        answer["turns"].append(item)
        used += size(item) + 1
    if not chosen:
        answer["note"] = "no turn in that range" if state.turns else "no turns yet"
    return dumps(answer)


def session_markdown(scope: Scope, session_id: str, limit: int = 200_000) -> str:
    """Return the session as Markdown (the resource `agent-assist://session/<id>`)."""
    from session.derive.steps import turn_steps

    place = scope.place(session_id)
    state, events, problems = load(place)
    head = [
        f"# Session {place.session_id}: {one_line(state.title or '(untitled)')}",
        "",
        f"- project: {place.project}",
        f"- created: {iso(state.created_at)}; last active: {iso(state.updated_at)}",
        f"- turns: {state.turns}; persistence: {state.persistence}",
    ]
    head += [f"- problem: {one_line(p)}" for p in problems[:5]]
    if state.persistence == "metadata":
        return "\n".join([*head, "", METADATA_ONLY + "."]) + "\n"
    lines = head
    for turn in turn_steps(events, fold=500):
        lines += ["", f"## Turn {turn.turn} ({iso(turn.started_at)})", "", "**User:**", ""]
        lines.append(turn.input)
        for step in turn.steps:
            for tool in step.tools:
                args = fold(dumps(tool.args), 300)
                result = fold(tool.result or "", 500)
                lines += ["", f"- tool `{tool.name}` {args}", f"  → {one_line(result)}"]
            if step.text.strip():
                lines += ["", "**Assistant:**", "", step.text]
        if turn.end_reason and turn.end_reason != "completed":
            lines += ["", f"_(turn ended: {turn.end_reason})_"]
    text = "\n".join(lines) + "\n"
    if len(text.encode()) > limit:
        text = fold(text, limit) + (
            f"\n\n(cut at {limit} bytes: the read_session tool reads a range of turns)\n"
        )
    return text


def one_line(text: str) -> str:
    """Return `text` on one line."""
    return " ".join(text.split())


# -- decisions ---------------------------------------------------------------------------


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


def session_decisions(place: Place, title: str | None) -> list[dict[str, Any]]:
    """Return a session's key decisions, each where it was first recorded, oldest first."""
    from session.events import CompactEvent, DecisionEvent, SummaryEvent, TurnStartEvent

    found: list[dict[str, Any]] = []
    seen: set[str] = set()
    turn: int | None = None
    types = frozenset({"turn/start", "session/decision", "session/summary", "session/compact"})
    events: Iterable[Event] = place.store.iter_events(place.session_id, types=types)
    for event in events:
        if isinstance(event, TurnStartEvent):
            turn = event.turn
            continue
        if isinstance(event, DecisionEvent):
            texts = [event.data.text]
        elif isinstance(event, SummaryEvent | CompactEvent):
            texts = list(event.data.decisions)
        else:
            continue
        for text in texts:
            if not text.strip() or _key(text) in seen:
                continue
            seen.add(_key(text))
            found.append(
                {
                    "decision": fold(text.strip(), DECISION_BYTES),
                    "session_id": place.session_id,
                    "session_title": title,
                    "project": place.project,
                    "turn": event.turn if event.turn is not None else turn,
                    "time": iso(event.ts),
                }
            )
    return found


def decisions(scope: Scope, limit: int, since: datetime | None) -> str:
    """Answer `decisions`: the key decisions of the sessions in scope, newest first."""
    rows, _ = scope.listing(0, None)
    stores = scope.stores()
    found: list[dict[str, Any]] = []
    skipped = 0
    for row in rows:  # newest first: a session's decisions are no newer than its last activity
        last = datetime.fromisoformat(row["last_active"])
        if since is not None and last < since:
            break
        if len(found) >= limit and all(datetime.fromisoformat(d["time"]) > last for d in found):
            break
        store = stores.get(row["project"])
        if store is None and scope.home.kind == "postgresql":  # one store reads every project
            store = scope.home
        if store is None:
            continue
        place = Place(row["session_id"], row["project"], store)
        if row.get("persistence") == "metadata" or _metadata(place):
            skipped += 1
            continue
        found += session_decisions(place, row["title"])
    if since is not None:
        found = [d for d in found if datetime.fromisoformat(d["time"]) >= since]
    found.sort(key=lambda d: d["time"], reverse=True)
    answer: dict[str, Any] = {"decisions": found[:limit]}
    if len(found) > limit:
        answer["more"] = True
    if skipped:
        answer["note"] = f"{skipped} session(s) kept with metadata-only persistence: not kept"
    return dumps(answer)


def _metadata(place: Place) -> bool:
    from session.events import SessionStartEvent

    types = frozenset({"session/start"})
    for event in place.store.iter_events(place.session_id, types=types):
        if isinstance(event, SessionStartEvent):
            return event.data.persistence == "metadata"
    return False
