"""Every notification the server sends, each model naming its method."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from .types import DriftSource, SessionChangeReason, ToolStatus, Usage
from .wire import Notification

if TYPE_CHECKING:
    from session.workspace.drift import DriftReport

TURN_STARTED = "agentAssist/turnStarted"
CHAT_DELTA = "agentAssist/chatDelta"
CHAT_RETRY = "agentAssist/chatRetry"
TOOL_CALL = "agentAssist/toolCall"
DRIFT = "agentAssist/drift"
SESSION_CHANGED = "agentAssist/sessionChanged"
TURN_ENDED = "agentAssist/turnEnded"


class TurnStartedParams(Notification):
    """A chat's turn began (it waited its turn in the queue until now): its number."""

    METHOD: ClassVar[str] = TURN_STARTED
    session_id: str
    turn: int
    text: str = Field(description="The user's message, as sent.")


class ChatDeltaParams(Notification):
    """Streamed text of a turn, in order."""

    METHOD: ClassVar[str] = CHAT_DELTA
    session_id: str
    turn: int
    delta: str


class ChatRetryParams(Notification):
    """A model attempt failed after some of its text was streamed: drop it, deltas restart."""

    METHOD: ClassVar[str] = CHAT_RETRY
    session_id: str
    turn: int
    attempt: int = Field(description="The attempt about to start (2 for the first retry).")
    reason: str


class TurnEndedParams(Notification):
    """An `async` chat's turn ended: its reply, or why it failed."""

    METHOD: ClassVar[str] = TURN_ENDED
    session_id: str
    turn: int | None = Field(description="Null if the turn failed before it began.")
    text: str = Field(
        description="The reply; of a turn stopped or failed, what the session kept of it "
        "(the text streamed of its last answer, as recorded), else empty."
    )
    end_reason: Literal["completed", "error", "aborted"]
    usage: Usage | None = Field(description="Null unless the turn completed.")
    error: str | None = Field(description="Why the turn failed; null unless it did.")


class ToolCallParams(Notification):
    """Tool activity of a turn."""

    METHOD: ClassVar[str] = TOOL_CALL
    session_id: str
    turn: int
    tool: str
    args: Any
    status: ToolStatus
    call_id: str = Field(description="Ties a call's `started` to its `done` or `failed`.")


class DriftParams(Notification):
    """Tracked files changed outside the assistant."""

    METHOD: ClassVar[str] = DRIFT
    session_id: str
    source: DriftSource
    message_shown: bool = Field(
        description="The server also showed it as a `window/showMessage` warning "
        "(resume and live drift, unless `driftMessages: false`)."
    )
    modified: list[str]
    deleted: list[str]
    created: list[str]
    unchanged: int
    after_assistant_edit: list[str] = Field(
        default_factory=list,
        description="Of `modified`: files the assistant wrote that the user changed before "
        "saving (what reached disk is not what the assistant wrote).",
    )

    @classmethod
    def of(
        cls, session_id: str, source: str, drift: DriftReport, *, message_shown: bool = False
    ) -> DriftParams:
        """Return the notification for a drift report."""
        return cls(
            session_id=session_id,
            source=source,
            message_shown=message_shown,
            modified=drift.modified,
            deleted=drift.deleted,
            created=drift.created,
            unchanged=drift.unchanged,
            after_assistant_edit=drift.after_assistant_edit,
        )


class SessionChangedParams(Notification):
    """The session of this instance changed."""

    METHOD: ClassVar[str] = SESSION_CHANGED
    session_id: str
    reason: SessionChangeReason


NOTIFICATIONS: tuple[type[Notification], ...] = (
    TurnStartedParams,
    TurnEndedParams,
    ChatDeltaParams,
    ChatRetryParams,
    ToolCallParams,
    DriftParams,
    SessionChangedParams,
)
