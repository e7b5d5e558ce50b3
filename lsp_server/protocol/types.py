"""The contract's shared vocabulary: enumerations and the parts results are made of."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from engine.options import AutoResume as AutoResume  # declared with the options
from engine.options import Persistence as Persistence

from .wire import Timestamp, Wire, omitted

if TYPE_CHECKING:
    from session.derive.transcript import TranscriptItem as DerivedItem


class Phase(StrEnum):
    """The session's phase, set or cleared by the model's `set_phase` tool."""

    DESIGN = "design"
    CODE = "code"
    DEPLOY = "deploy"


class TranscriptRole(StrEnum):
    """Who a transcript item is from; `notice` is the server's (e.g. a compaction)."""

    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    NOTICE = "notice"


class SessionChangeReason(StrEnum):
    """Why this instance's session changed."""

    NEW = "new"
    RESUMED = "resumed"
    RESET = "reset"
    OPENED = "opened"
    FORKED = "forked"
    RESTORED = "restored"


class SessionOrigin(StrEnum):
    """How this instance came to hold a session that has a past."""

    RESUMED = "resumed"
    OPENED = "opened"
    FORKED = "forked"


class ToolStatus(StrEnum):
    """Where a tool call is."""

    STARTED = "started"
    DONE = "done"
    FAILED = "failed"


class DriftSource(StrEnum):
    """What found the drift: the resume check, or the live file watcher."""

    RESUME = "resume"
    WATCHER = "watcher"


class Usage(Wire):
    """Token usage over a turn's model calls."""

    input_tokens: int
    output_tokens: int
    requests: int
    estimated: bool = omitted(
        "The token counts are estimated (4 bytes a token): the model server sent none.",
        default=False,
    )


class TranscriptItem(Wire):
    """One item of a chat view's transcript."""

    turn: int | None = Field(
        description='Null for a notice outside any turn, e.g. "Older turns were compacted."'
    )
    role: TranscriptRole
    text: str
    end_reason: str | None = omitted("How the turn ended (on its last assistant item).")
    status: str | None = omitted("A tool result's status.")
    partial: bool = omitted(
        "An answer cut short (stopped, failed, interrupted): only what was streamed of it.",
        default=False,
    )


class SessionInfo(Wire):
    """One session of the project, as listed by `agentAssist/sessions`."""

    session_id: str
    title: str | None = Field(description="Null when the session has none yet.")
    created_at: Timestamp
    updated_at: Timestamp
    turns: int
    phase: Phase | None = omitted("Absent when unset.")
    parent_session_id: str | None = omitted("The session this one was forked from.")
    active: bool = Field(description="This instance's current session.")


class ProjectInfo(Wire):
    """Which project this is: its portable identity and how it was derived."""

    key: str = Field(
        description="`remote:<host>/<path>` (the origin remote), `commit:<sha>` (the root "
        "commit) or `path:<absolute path>`; never a credential."
    )
    kind: Literal["remote", "root-commit", "path"]
    how: str = Field(description="How the key was derived, for people.")
    name: str


class StoreStatus(Wire):
    """Where the sessions are kept, and whether that store takes writes now."""

    kind: Literal["local", "postgresql"]
    location: str = Field(description="The store root, or the database (never a password).")
    online: bool = Field(description="False while the database cannot be reached.")
    pending: int = Field(description="Events recorded but not yet in the store (spooled).")


class CheckpointInfo(Wire):
    """One checkpoint of the session."""

    number: int
    created_at: Timestamp
    turn: int
    title: str
    auto: bool = Field(description="Made by a turn that wrote files (not by a save).")


class SearchHit(Wire):
    """One event that contains the query."""

    session_id: str
    seq: int
    turn: int | None = Field(description="Null when the hit is in no turn.")
    type: str = Field(description="The event's type, e.g. `turn/start`, `step/end`.")
    snippet: str = Field(description="The text around the match, matches marked with [ ].")
    score: float
    step: int | None = Field(description="The step of the turn; null outside a step.")
    ts: Timestamp | None = Field(
        description="The event's time; null while an index of an older version answers."
    )


def transcript_items(items: Iterable[DerivedItem]) -> list[TranscriptItem]:
    """Return the wire form of a derived transcript."""
    return [
        TranscriptItem(
            turn=item.turn,
            role=item.role,
            text=item.text,
            end_reason=item.end_reason,
            status=item.status,
            partial=item.partial,
        )
        for item in items
    ]
