"""The running session summary: what the resume block tells the model about earlier turns.

After each completed turn the server summarises, in the background, the turns since the last
summary together with that summary (incremental), and records `session/summary`. The
summary covers every completed turn, so a resumed session always has its "Previous Session
Summary" and "Key Decisions Made", whether or not a compaction ever ran.
"""

from __future__ import annotations

from dataclasses import dataclass

from .compaction import (
    FALLBACK_LABEL,
    FORMER_FALLBACK_LABELS,
    CompactionSummary,
    prose,
    render_transcript,
)
from .derive.history import HistoryBuilder
from .derive.messages import Message
from .snapshot import SessionState

MAX_SUMMARY_WORDS = 200
SESSION_SUMMARY_INSTRUCTIONS = (
    "You keep the running summary of a conversation between a user and Agent Assist, an AI "
    "assistant in a code editor, so that the conversation can be resumed later. Given the "
    "previous summary (if any) and the turns since, write the updated narrative summary of "
    "the whole conversation: what was asked, done and decided (files, tools, conclusions, "
    "open questions), in at most 200 words, and list the key decisions made so far as short "
    "imperative sentences. Keep names, paths and numbers exact. Do not invent anything."
)


@dataclass(frozen=True)
class SummaryPlan:
    """What the next running summary covers."""

    covers_seq: int
    turns: int
    previous: str | None
    messages: list[Message]  # the turns since the previous summary
    history: list[Message]  # every message still in the history (for the extractive one)

    def transcript(self, limit: int) -> str:
        """Render the previous summary and the new turns for the summariser (bounded)."""
        head = f"Previous summary:\n{self.previous}\n\n" if self.previous else ""
        body = render_transcript(self.messages)
        return head + "Turns since:\n" + body[-max(1, limit - len(head)) :]


def plan_summary(builder: HistoryBuilder, state: SessionState) -> SummaryPlan | None:
    """Return what to summarise now, or None if every completed turn is covered already.

    Only closed turns are summarised: with a turn open, nothing is planned (the next turn end
    plans again). The turns since the last summary are the messages recorded after it.
    """
    if builder.open_turn is not None or state.turns <= state.summary_turns:
        return None
    covered = state.summary_covers_seq
    messages = [item.message for item in builder.items if item.seq > covered]
    history = [item.message for item in builder.items]
    return SummaryPlan(state.last_seq, state.turns, state.summary, messages or history, history)


def clip_words(text: str, limit: int = MAX_SUMMARY_WORDS) -> str:
    """Return `text` cut to `limit` words (an ellipsis marks the cut), keeping its lines."""
    words = 0
    kept: list[str] = []
    for line in text.strip().splitlines():
        parts = line.split()
        if words + len(parts) > limit:
            kept.append(" ".join(parts[: limit - words]) + " …")
            break
        words += len(parts)
        kept.append(line)
    return "\n".join(kept)


def _words(text: str, limit: int) -> str:
    words = prose(text).split()
    return " ".join(words[:limit]) + (" …" if len(words) > limit else "")


def extractive_session_summary(plan: SummaryPlan, decisions: list[str]) -> CompactionSummary:
    """Summarise without a model, labelled as such: the user's requests, newest kept first.

    Built from the whole history each time (it is bounded by compaction), so it covers
    every completed turn and stays within `MAX_SUMMARY_WORDS`.
    """
    requests: list[str] = []
    last_reply = ""
    for message in plan.history:
        for part in message.get("parts", []):
            content = part.get("content")
            text = content if isinstance(content, str) else " ".join(map(str, content or []))
            if part.get("part_kind") == "user-prompt" and text.strip():
                requests.append(_words(text, 20))
            elif part.get("part_kind") == "text" and text.strip():
                last_reply = _words(text, 30)
    head = [FALLBACK_LABEL]
    earlier = plan.previous or ""
    for label in (FALLBACK_LABEL, *FORMER_FALLBACK_LABELS):
        earlier = earlier.replace(label, "")
    earlier = earlier.strip()
    if earlier and not earlier.startswith("The user asked"):  # a model's (or compaction's)
        head.append(f"Earlier: {_words(' '.join(earlier.split()), 60)}")
    count = f"{len(requests)} request{'s' * (len(requests) != 1)}"
    head.append(f"The user asked ({count}, newest last):")
    budget = MAX_SUMMARY_WORDS - sum(len(line.split()) for line in head) - 40
    shown: list[str] = []
    for request in reversed(requests):
        if budget - len(request.split()) - 1 < 0:
            break
        budget -= len(request.split()) + 1
        shown.insert(0, f"- {request}")
    if len(shown) < len(requests):
        shown.insert(0, f"- … {len(requests) - len(shown)} earlier requests")
    tail = [f"Last reply: {last_reply}"] if last_reply else []
    summary = "\n".join([*head, *shown, *tail])
    return CompactionSummary(summary=clip_words(summary), decisions=list(decisions))
