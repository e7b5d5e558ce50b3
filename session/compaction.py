"""Compaction: keep a recent tail verbatim and replace older turns by a summary."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, Field

from .derive.history import HistoryBuilder, HistoryItem
from .derive.messages import Message, estimate_tokens

# Heads an extractive summary: no model configured, or the model failed to summarise.
FALLBACK_LABEL = "[Extractive summary: the model did not summarise these turns]"
# What the label said before (in logs written then): recognised as a label too.
FORMER_FALLBACK_LABELS = ("[Extractive summary: no model was available to summarise these turns]",)
SUMMARY_INSTRUCTIONS = (
    "You compact the older part of a conversation between a user and Agent Assist, an AI "
    "assistant in a code editor. Write a faithful, concise narrative summary of what was "
    "asked, done and decided (files, tools, conclusions, open questions), in at most 200 "
    "words, and list the key decisions as short imperative sentences. Keep names, paths and "
    "numbers exact. Do not invent anything."
)
MAX_TRANSCRIPT_CHARS = 200_000


class CompactionSummary(BaseModel):
    """What the summarizer returns (structured output)."""

    summary: str = Field(description="Narrative summary of the compacted turns")
    decisions: list[str] = Field(default_factory=list, description="Key decisions made")


@dataclass
class CompactionPlan:
    """Which messages are summarised and which stay verbatim."""

    covers_seq: int
    old: list[Message]
    tail: list[Message]
    tokens_before: int
    messages_before: int


def history_tokens(messages: Sequence[Message]) -> int:
    """Estimate the tokens of a message list."""
    return sum(estimate_tokens(m) for m in messages)


def plan_compaction(
    builder: HistoryBuilder, keep_tokens: int, *, open_turn: bool = False, force: bool = False
) -> CompactionPlan | None:
    """Choose the newest whole turns within `keep_tokens` to keep; None if nothing to do.

    The cut is always at the start of a turn, so a tool call never loses its result, and
    at least the last turn is kept. A turn in progress is only compacted around when
    `open_turn` says so (a prompt the model refused as too long): it is the kept last turn.
    `force` (the user asked): with two turns or more, something is always summarised.
    """
    if builder.open_turn is not None and not open_turn:
        return None
    items: list[HistoryItem] = builder.items
    starts = [i for i, item in enumerate(items) if item.starts_turn]
    if len(starts) < 2:
        return None
    cut = starts[-1]
    total = sum(item.tokens for item in items[cut:])
    for start in reversed(starts[:-1]):
        more = sum(item.tokens for item in items[start:cut])
        if total + more > keep_tokens:
            break
        total += more
        cut = start
    if cut <= starts[0]:
        if not force:
            return None  # everything fits: nothing older than the kept turns
        cut = starts[-1]  # asked for: summarise all but the newest turn
    current = builder.messages()
    return CompactionPlan(
        covers_seq=items[cut - 1].seq,
        old=[item.message for item in items[:cut]],
        tail=[item.message for item in items[cut:]],
        tokens_before=history_tokens(current),
        messages_before=len(current),
    )


# A fenced block, closed or running to the end of the text (three or more backticks/tildes).
_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
_FENCE_MARK = re.compile(r"`{3,}|~{3,}")


def prose(text: str) -> str:
    """Return `text` with its fenced code blocks as `(code)` and no fence marks left.

    An extractive summary is lines of words, which cannot hold code, and a fence cut open
    there would turn the rest of the rendered resume block into one code block.
    """
    return _FENCE_MARK.sub(" ", _FENCED.sub(" (code) ", text))


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(_content(v) for v in value)
    return orjson.dumps(value, default=str).decode()


def render_transcript(messages: Sequence[Message], per_part: int = 2_000) -> str:
    """Render messages as plain text for the summarizer (bounded)."""
    lines: list[str] = []
    for message in messages:
        for part in message.get("parts", []):
            kind = part.get("part_kind")
            if kind == "system-prompt":
                lines.append(f"Earlier summary: {_clip(_content(part.get('content')), per_part)}")
            elif kind == "user-prompt":
                lines.append(f"User: {_clip(_content(part.get('content')), per_part)}")
            elif kind == "text" and part.get("content"):
                lines.append(f"Assistant: {_clip(_content(part.get('content')), per_part)}")
            elif kind == "tool-call":
                lines.append(
                    f"Tool call {part.get('tool_name')}: {_clip(_content(part.get('args')), 300)}"
                )
            elif kind == "tool-return":
                lines.append(
                    f"Tool result {part.get('tool_name')}: "
                    f"{_clip(_content(part.get('content')), 500)}"
                )
    text = "\n".join(lines)
    return text[-MAX_TRANSCRIPT_CHARS:]


def extractive_summary(messages: Sequence[Message], decisions: Sequence[str]) -> CompactionSummary:
    """Summarise without a model: the user's requests and the last reply, labelled as such."""
    requests: list[str] = []
    earlier: list[str] = []
    last_reply = ""
    for message in messages:
        for part in message.get("parts", []):
            kind = part.get("part_kind")
            if kind == "user-prompt":
                requests.append(_clip(prose(_content(part.get("content"))), 200))
            elif kind == "system-prompt":
                earlier.append(_clip(prose(_content(part.get("content"))), 1_000))
            elif kind == "text" and part.get("content"):
                last_reply = _clip(prose(_content(part.get("content"))), 400)
    lines = [FALLBACK_LABEL]
    lines += earlier
    if requests:
        shown = requests[-20:]
        skipped = len(requests) - len(shown)
        lines.append(f"The user asked ({len(requests)} requests):")
        if skipped:
            lines.append(f"- … {skipped} earlier requests")
        lines += [f"- {r}" for r in shown]
    if last_reply:
        lines.append(f"Last reply in these turns: {last_reply}")
    return CompactionSummary(summary="\n".join(lines), decisions=list(decisions))
