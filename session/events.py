"""The event types of the session log: one line is `{seq, ts, type, turn?, step?, data}`.

One pydantic model per `type` (its `data` is typed too), the discriminated union `Event`
that reads any line, and the clock that stamps events.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

EndReason = Literal["completed", "aborted", "error", "interrupted"]
DriftSource = Literal["resume", "watcher"]
Persistence = Literal["full", "metadata"]


def utcnow() -> datetime:
    """Return the current time, timezone-aware UTC."""
    return datetime.now(UTC)


class _Data(BaseModel):
    model_config = ConfigDict(extra="allow")


class SessionStartData(_Data):
    """`session/start`: identity and lineage of the session."""

    session_id: str
    parent_session_id: str | None = None
    fork_boundary: int | None = None
    instance_id: str | None = None
    workspace_root: str | None = None
    persistence: Persistence = "full"
    manifest: dict[str, str] = Field(default_factory=dict)


class TurnStartData(_Data):
    """`turn/start`: the user's input, and who sent it (the edge and its client, if known)."""

    input: str
    edge: str | None = None  # "lsp" or "acp"
    client: str | None = None  # the client's name (`clientInfo.name`)


class TurnEndData(_Data):
    """`turn/end`: why the turn closed."""

    reason: EndReason
    error: str | None = None
    synthesized: bool = False


class StepStartData(_Data):
    """`step/start`: the new request messages of this model call (pydantic-ai JSON).

    `request_sha256`: the digest of the request's HTTP body as sent (canonical JSON, secrets
    redacted); `request`: what rebuilding it from the log needs beyond the messages and the
    `request/header` (engine/model/request_digest.py). Absent from older events.
    """

    messages: list[dict[str, Any]]
    request_sha256: str | None = None
    request: dict[str, Any] | None = None


class StepRetryData(_Data):
    """`step/retry`: this step's answer is abandoned and its request is sent again.

    The abandoned attempt (its chunks) stays in the log but never enters the history.
    """

    attempt: int  # the attempt that failed (1 = the first)
    kind: str  # cut, stall, connection, rate-limit, server, corrupt, empty, overflow...
    reason: str
    delay: float = 0.0
    streamed: bool = False  # text of the failed attempt had reached the client


class StepEndData(_Data):
    """`step/end`: usage of this model call."""

    usage: dict[str, Any] = Field(default_factory=dict)


class RequestHeaderData(_Data):
    """`request/header`: model, settings and system prompt (full text once, then hash)."""

    model: str
    settings: dict[str, Any] = Field(default_factory=dict)
    system_prompt: str | None = None
    system_prompt_sha256: str


class ChunkData(_Data):
    """`assistant/chunk`: a streamed text delta."""

    delta: str


class AssistantMessageData(_Data):
    """`assistant/message`: the complete model response (pydantic-ai JSON)."""

    message: dict[str, Any]


def response_text(message: Any) -> str:
    """Return the text parts of a model response (pydantic-ai's JSON), joined."""
    parts = message.get("parts") if isinstance(message, dict) else None
    return "".join(
        p["content"]
        for p in (parts if isinstance(parts, list) else ())
        if isinstance(p, dict)
        and p.get("part_kind") == "text"
        and isinstance(p.get("content"), str)
    )


class FileChange(_Data):
    """One file changed by a step (or seen changed by a drift): its content before and after.

    `before`/`after` are SHA-256 digests of the content (null: the file did not exist /
    was deleted). The contents are kept as blobs (content-addressed, shared with the
    checkpoints) unless `withheld` says why not (a secret, binary, too large).
    """

    path: str  # workspace-relative, POSIX
    before: str | None = None
    after: str | None = None
    withheld: str | None = None


class ToolCallData(_Data):
    """`tool/call`: a tool invocation requested by the model."""

    tool_call_id: str
    name: str
    args: Any = None


class ToolResultData(_Data):
    """`tool/result`: what the tool returned (or its error)."""

    tool_call_id: str
    name: str
    content: Any = None
    is_error: bool = False
    files: list[FileChange] = Field(default_factory=list)  # what the tool changed


class DriftData(_Data):
    """`workspace/drift`: tracked files changed outside the assistant."""

    source: DriftSource
    modified: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    created: list[str] = Field(default_factory=list)
    unchanged: int = 0
    # of `modified`: files the assistant wrote that reached disk with the user's changes
    # (absent from events written before it was recorded)
    after_assistant_edit: list[str] = Field(default_factory=list)
    # the modified, deleted and created files' contents before (the last known) and after
    changes: list[FileChange] = Field(default_factory=list)


class CompactData(_Data):
    """`session/compact`: a summary replaces the history up to `covers_seq`."""

    summary: str
    decisions: list[str] = Field(default_factory=list)
    covers_seq: int
    fallback: bool = False


class SummaryData(_Data):
    """`session/summary`: the running summary of every completed turn up to `covers_seq`."""

    summary: str
    decisions: list[str] = Field(default_factory=list)
    covers_seq: int
    turns: int = 0  # how many turns it covers
    fallback: bool = False


class SaveData(_Data):
    """`session/save`: an explicit save / checkpoint."""

    checkpoint: int
    manifest: dict[str, str] = Field(default_factory=dict)


class RewindData(_Data):
    """`session/rewind`: the conversation returns to `to_seq` (history stays in the log)."""

    to_seq: int
    checkpoint: int | None = None
    files: list[FileChange] = Field(default_factory=list)  # what the restore wrote back


class PhaseData(_Data):
    """`session/phase`: the conversation phase changed."""

    phase: str | None


class DecisionData(_Data):
    """`session/decision`: a key decision was recorded."""

    text: str


class RecoverData(_Data):
    """`session/recover`: bytes before this event were a torn write, kept but skipped."""

    offset: int
    length: int
    reason: str


class _EventBase(BaseModel):
    model_config = ConfigDict(extra="ignore")

    seq: int = Field(ge=0)
    ts: datetime
    turn: int | None = None
    step: int | None = None


class SessionStartEvent(_EventBase):
    """See `SessionStartData`."""

    type: Literal["session/start"]
    data: SessionStartData


class TurnStartEvent(_EventBase):
    """See `TurnStartData`."""

    type: Literal["turn/start"]
    data: TurnStartData


class TurnEndEvent(_EventBase):
    """See `TurnEndData`."""

    type: Literal["turn/end"]
    data: TurnEndData


class StepStartEvent(_EventBase):
    """See `StepStartData`."""

    type: Literal["step/start"]
    data: StepStartData


class StepRetryEvent(_EventBase):
    """See `StepRetryData`."""

    type: Literal["step/retry"]
    data: StepRetryData


class StepEndEvent(_EventBase):
    """See `StepEndData`."""

    type: Literal["step/end"]
    data: StepEndData


class RequestHeaderEvent(_EventBase):
    """See `RequestHeaderData`."""

    type: Literal["request/header"]
    data: RequestHeaderData


class ChunkEvent(_EventBase):
    """See `ChunkData`."""

    type: Literal["assistant/chunk"]
    data: ChunkData


class AssistantMessageEvent(_EventBase):
    """See `AssistantMessageData`."""

    type: Literal["assistant/message"]
    data: AssistantMessageData


class ToolCallEvent(_EventBase):
    """See `ToolCallData`."""

    type: Literal["tool/call"]
    data: ToolCallData


class ToolResultEvent(_EventBase):
    """See `ToolResultData`."""

    type: Literal["tool/result"]
    data: ToolResultData


class DriftEvent(_EventBase):
    """See `DriftData`."""

    type: Literal["workspace/drift"]
    data: DriftData


class CompactEvent(_EventBase):
    """See `CompactData`."""

    type: Literal["session/compact"]
    data: CompactData


class SummaryEvent(_EventBase):
    """See `SummaryData`."""

    type: Literal["session/summary"]
    data: SummaryData


class SaveEvent(_EventBase):
    """See `SaveData`."""

    type: Literal["session/save"]
    data: SaveData


class RewindEvent(_EventBase):
    """See `RewindData`."""

    type: Literal["session/rewind"]
    data: RewindData


class PhaseEvent(_EventBase):
    """See `PhaseData`."""

    type: Literal["session/phase"]
    data: PhaseData


class DecisionEvent(_EventBase):
    """See `DecisionData`."""

    type: Literal["session/decision"]
    data: DecisionData


class RecoverEvent(_EventBase):
    """See `RecoverData`."""

    type: Literal["session/recover"]
    data: RecoverData


Event = Annotated[
    SessionStartEvent
    | TurnStartEvent
    | TurnEndEvent
    | StepStartEvent
    | StepRetryEvent
    | StepEndEvent
    | RequestHeaderEvent
    | ChunkEvent
    | AssistantMessageEvent
    | ToolCallEvent
    | ToolResultEvent
    | DriftEvent
    | CompactEvent
    | SummaryEvent
    | SaveEvent
    | RewindEvent
    | PhaseEvent
    | DecisionEvent
    | RecoverEvent,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
EVENT_TYPES: frozenset[str] = frozenset(
    {
        "session/start",
        "turn/start",
        "turn/end",
        "step/start",
        "step/retry",
        "step/end",
        "request/header",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
        "workspace/drift",
        "session/compact",
        "session/summary",
        "session/save",
        "session/rewind",
        "session/phase",
        "session/decision",
        "session/recover",
    }
)
