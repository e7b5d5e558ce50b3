"""The look-back requests: a session's steps read-only, a file's timeline, telemetry.

Every answer here is a projection of the event log; none takes a session's lock or changes
this instance's session (`agentAssist/restoreFile` writes only through the editor's own
edit, which the user confirmed in the client first).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .types import Usage
from .wire import Params, Timestamp, Wire, omitted

SESSION_ID = r"^[a-f0-9]{12}$"

INSPECT = "agentAssist/inspect"
FILE_HISTORY = "agentAssist/fileHistory"
FILE_VERSION = "agentAssist/fileVersion"
RESTORE_FILE = "agentAssist/restoreFile"
STATS = "agentAssist/stats"

_WHEN = (
    "an ISO date or time (`2026-12-05`, `2026-12-05T14:30`), a duration ago (`30m`, `12h`, "
    "`1d`, `2w`), `today` or `yesterday`"
)


class StepRetry(Wire):
    """An attempt of a step that was abandoned and sent again."""

    attempt: int
    kind: str = Field(description="cut, stall, connection, rate-limit, server, empty, ...")
    reason: str


class StepTool(Wire):
    """One tool call of a step, with its result."""

    tool_call_id: str
    name: str
    args: Any = Field(description="The arguments, as the model sent them.")
    result: str | None = Field(description="The result as text; null while it has none.")
    folded: bool = omitted(
        "The result was longer than the fold and is cut (`result_bytes` says how long).",
        default=False,
    )
    result_bytes: int = Field(description="The whole result's length in UTF-8 bytes.")
    is_error: bool = omitted("The tool failed (its result is the error).", default=False)


class StepView(Wire):
    """One model call of a turn: what it was asked, what it answered, which tools ran."""

    turn: int
    step: int
    started_at: Timestamp | None
    ended_at: Timestamp | None = Field(description="Null while it has not ended.")
    model: str | None = Field(description="The model asked; null when not recorded.")
    usage: Usage | None = Field(description="Null when the model server sent none.")
    text: str = Field(description="The assistant text of this step (may be empty).")
    tools: list[StepTool]
    retries: list[StepRetry] = omitted("Abandoned attempts, first first.", default=[])
    end_reason: str | None = Field(
        description="`tool-calls` (the model asked for tools), `answered`, or how the turn "
        "ended when it ended in this step (`aborted`, `error`, `interrupted`)."
    )
    request_sha256: str | None = omitted("The digest of the request this step sent.")


class TurnView(Wire):
    """One turn, with its steps."""

    turn: int
    input: str = Field(description="The user's message.")
    started_at: Timestamp | None
    ended_at: Timestamp | None = Field(description="Null while the turn is open.")
    end_reason: str | None = Field(description="completed, aborted, error, interrupted.")
    steps: list[StepView]


class InspectParams(Params):
    """`agentAssist/inspect`: any session of the project, read-only, without its lock."""

    session_id: str = Field(pattern=SESSION_ID)
    turn: int | None = Field(default=None, ge=1, description="Only this turn.")
    step: int | None = Field(default=None, ge=1, description="Only this step (with `turn`).")
    fold: int = Field(
        default=2000, ge=0, le=1_000_000, description="Cut tool results longer (bytes)."
    )


class InspectResult(Wire):
    """The session's turns and steps as the log has them now."""

    session_id: str
    title: str | None
    held: bool = Field(description="Another window holds the session (it may be writing).")
    turns: list[TurnView]


class FileHistoryParams(Params):
    """`agentAssist/fileHistory`: every recorded change of one workspace file."""

    path: str = Field(min_length=1, max_length=4096, description="Workspace-relative or absolute.")
    since: str | None = Field(
        default=None, max_length=100, description=f"Changes at or after: {_WHEN}."
    )
    until: str | None = Field(
        default=None, max_length=100, description="Changes before: as `since`."
    )
    line: str | None = Field(
        default=None,
        max_length=10_000,
        description="Only the changes whose diff adds or removes a line containing this text.",
    )
    limit: int = Field(default=200, ge=1, le=10_000)


FileChangeKind = Literal["write", "edit", "restore", "delete", "drift"]


class FileChange(Wire):
    """One change of the file: a step of the assistant, or a drift seen behind its back."""

    session_id: str
    session_title: str | None
    turn: int | None = Field(description="Null for a drift found outside a turn.")
    step: int | None
    ts: Timestamp
    kind: FileChangeKind
    tool: str | None = Field(description="The tool that changed it; null for a drift.")
    user_message: str | None = Field(description="The user's message of that turn.")
    before_sha256: str | None = Field(description="Null: the file did not exist (or unknown).")
    after_sha256: str | None = Field(description="Null: the file was deleted (or unknown).")
    diff: str | None = Field(
        description="A unified diff, before to after; null when a side was not kept."
    )
    reason: str | None = omitted("Why there is no diff (a secret, binary, too large...).")


class FileHistoryResult(Wire):
    """Newest first."""

    path: str = Field(description="The workspace-relative path.")
    changes: list[FileChange]
    truncated: bool = omitted("More changes than `limit`.", default=False)


class FileVersionParams(Params):
    """`agentAssist/fileVersion`: the file's content before or after one recorded change."""

    path: str = Field(min_length=1, max_length=4096)
    session_id: str = Field(pattern=SESSION_ID)
    turn: int | None = Field(default=None, ge=1)
    step: int | None = Field(default=None, ge=1)
    ts: Timestamp | None = Field(default=None, description="The change's time (for a drift).")
    side: Literal["before", "after"] = "before"


class FileVersionResult(Wire):
    """The content, when it was kept."""

    path: str
    sha256: str | None = Field(description="Null: the file did not exist on that side.")
    text: str | None = Field(description="Null when not kept (see `reason`) or absent.")
    reason: str | None = omitted("Why there is no text.")


class RestoreFileParams(FileVersionParams):
    """`agentAssist/restoreFile`: write that version back, as an edit of the editor.

    The client asks the user first; the server applies it with `workspace/applyEdit` (so it
    is undoable), and a side whose content is absent deletes the file only if `allowDelete`.
    """

    allow_delete: bool = False


class RestoreFileResult(Wire):
    """Whether the editor applied it."""

    path: str
    restored: bool
    reason: str | None = omitted("Why not.")


class StatsParams(Params):
    """`agentAssist/stats`: figures summed from the project's logs. Nothing leaves the machine."""

    since: str | None = Field(default=None, max_length=100, description=f"From: {_WHEN}.")
    until: str | None = Field(default=None, max_length=100, description="Before: as `since`.")
    session_id: str | None = Field(default=None, pattern=SESSION_ID, description="Only this one.")


class StatsFigures(Wire):
    """Sums over a set of turns."""

    turns: int
    steps: int
    tool_calls: dict[str, int] = Field(description="Calls by tool name.")
    tool_errors: int
    input_tokens: int
    output_tokens: int
    estimated: bool = Field(description="Some token counts are estimates (the server sent none).")
    model_seconds: float = Field(
        description="Time waiting on the model: each step's start to its answer."
    )
    retries: dict[str, int] = Field(description="Retried attempts by kind.")


class StatsGroup(StatsFigures):
    """The figures of one session, day (UTC date) or model."""

    key: str


class StatsResult(Wire):
    """Totals, then by session (newest first), by day (newest first) and by model."""

    totals: StatsFigures
    by_session: list[StatsGroup]
    by_day: list[StatsGroup]
    by_model: list[StatsGroup]
