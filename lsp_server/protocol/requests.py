"""Every request: its method, params and result (each also an `agentAssist.<verb>` command)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from . import lookback
from .lookback import TurnView
from .mcp import McpServerStatus
from .types import (
    CheckpointInfo,
    Persistence,
    Phase,
    ProjectInfo,
    SearchHit,
    SessionInfo,
    SessionOrigin,
    StoreStatus,
    TranscriptItem,
    Usage,
)
from .wire import EmptyParams, Params, Timestamp, Wire, omitted

SESSION_ID = r"^[a-f0-9]{12}$"

CHAT = "agentAssist/chat"
SAVE = "agentAssist/save"
RESET = "agentAssist/reset"
NEW = "agentAssist/new"
RESUME = "agentAssist/resume"
CHECKPOINT = "agentAssist/checkpoint"
CHECKPOINT_FILE = "agentAssist/checkpointFile"
COMPACT = "agentAssist/compact"
SESSIONS = "agentAssist/sessions"
OPEN = "agentAssist/open"
FORK = "agentAssist/fork"
SEARCH = "agentAssist/search"
HISTORY = "agentAssist/history"
STATUS = "agentAssist/status"
CANCEL = "agentAssist/cancel"


class ChatParams(Params):
    """`agentAssist/chat`: one user message."""

    text: str = Field(min_length=1, max_length=1_000_000)
    async_: bool = Field(
        default=False,
        alias="async",
        description="Answer at once (`ChatStarted`); the reply comes as `$/progress` and "
        "`agentAssist/turnEnded` (for clients whose requests time out, e.g. eglot's 10 s).",
    )
    work_done_token: int | str | None = Field(
        default=None,
        description="The client's progress token: the reply is reported on it as `$/progress` "
        "(the server creates one when the chat comes as `workspace/executeCommand`).",
    )


class ChatStarted(Wire):
    """An `async` chat's answer: its turn began, or waits behind the running one."""

    session_id: str
    turn: int | None = Field(description="The turn's number; null while it is queued.")
    status: Literal["started", "queued"]


class ChatResult(Wire):
    """A completed turn (durable before it is answered)."""

    session_id: str
    turn: int
    text: str
    end_reason: Literal["completed"]
    usage: Usage
    attempts: int = Field(description="Model attempts the turn took (1 without retries).")


class CancelParams(Params):
    """`agentAssist/cancel`: stop the running turn (for clients without progress support)."""

    turn: int | None = Field(
        default=None,
        ge=1,
        description="Stop it only if it is this turn (else whichever turn is running).",
    )


class CancelResult(Wire):
    """Whether a turn was stopped; answered once it ended (recorded as `aborted`)."""

    stopped: bool
    turn: int | None = Field(
        description="The turn stopped; null if none was running (or not the one asked for)."
    )


class SaveResult(Wire):
    """An explicit save: a checkpoint at a closed turn."""

    session_id: str
    checkpoint: int
    saved_at: Timestamp
    path: str


class ResetParams(Params):
    """`agentAssist/reset`: without `deleteFiles` the server asks when there are files."""

    delete_files: bool | None = None


class ResetResult(Wire):
    """The new session after a reset (the old one's log and checkpoints are deleted)."""

    session_id: str
    deleted_files: list[str]


class NewResult(Wire):
    """A fresh session; the previous one stays whole on disk."""

    session_id: str
    previous_session_id: str | None


class ChangedFile(Wire):
    """A tracked file changed outside the assistant while the session was away."""

    path: str
    change: Literal["modified", "deleted", "created"]
    checkpoint: int | None = Field(
        description="The newest checkpoint holding a copy of the file (to diff against), or null."
    )


class ResumeResult(Wire):
    """The block injected into the system prompt, and what it told the model."""

    session_id: str = Field(description="The session all this is about.")
    context: str = Field(description='The block itself (`""` on a fresh session).')
    origin: SessionOrigin | None = Field(
        description="How this instance came to this session: resumed at start, opened, "
        "forked; null for a fresh one (new, reset, declined)."
    )
    last_active: Timestamp | None = Field(
        description="When the resumed or opened session was last active before; else null."
    )
    summary: str | None = Field(
        description="The summary the model was given (What I remember); null if none."
    )
    decisions: list[str] = Field(description="The key decisions the model was given.")
    changed_files: list[ChangedFile] = Field(
        description="Tracked files changed since the session was last active."
    )


class CheckpointParams(Params):
    """`agentAssist/checkpoint`: list them, or restore `number` (`dryRun`: only say what)."""

    number: int | None = Field(default=None, ge=1)
    dry_run: bool = False


class CheckpointListResult(Wire):
    """The session's checkpoints, oldest first."""

    session_id: str
    checkpoints: list[CheckpointInfo]


class CheckpointRestoreResult(Wire):
    """What a restore did to the files."""

    session_id: str
    number: int
    restored_files: list[str]
    created_files: list[str] = Field(description="Files created since: listed and kept.")
    skipped_files: list[str]
    withheld_files: dict[str, str] = Field(
        description="Tracked files whose copy was never kept, with why (e.g. a secret)."
    )
    dry_run: bool = omitted("Nothing was done: what a restore would do.", default=False)


class CheckpointFileParams(Params):
    """`agentAssist/checkpointFile`: a checkpoint's copy of a workspace file."""

    path: str = Field(min_length=1, max_length=4096)
    number: int | None = Field(default=None, ge=1)


class CheckpointFileResult(Wire):
    """The copy, from checkpoint `number` (asked for, else the newest that has one)."""

    path: str
    number: int | None = Field(description="The checkpoint the copy is from; null if none.")
    text: str | None = Field(description="Its text; null if none was kept or it is binary.")
    reason: str | None = omitted("Why there is no text.")


class CompactResult(Wire):
    """A compaction: older turns replaced by a summary, the recent tail kept."""

    session_id: str
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    compacted: bool
    fallback: bool | None = omitted("The summary is extractive: no usable model.")
    reason: str | None = omitted("Why nothing was compacted (when `compacted` is false).")


class SessionsParams(Params):
    """`agentAssist/sessions`: all of them, or a page (`offset`, `limit`)."""

    offset: int = Field(default=0, ge=0)
    limit: int | None = Field(default=None, ge=1, le=10_000)
    include_empty: bool = Field(
        default=False,
        description="List the sessions without a turn too (saved at an exit without one); "
        "by default they are folded, and counted in `empty`.",
    )


class SessionsResult(Wire):
    """The project's sessions, newest first (a page of them when asked)."""

    sessions: list[SessionInfo]
    total: int = Field(
        description="How many sessions are listed, those folded (`empty`) not counted."
    )
    empty: int = Field(
        default=0,
        description="How many sessions without a turn were folded: not listed, not in "
        "`total` (0 with `includeEmpty`). The current session is always listed.",
    )


class OpenParams(Params):
    """`agentAssist/open`."""

    session_id: str = Field(pattern=SESSION_ID)


class OpenResult(Wire):
    """The session now in use and its resume context."""

    session_id: str
    context: str


class ForkParams(Params):
    """`agentAssist/fork`: this or another session, at a closed-turn boundary."""

    session_id: str | None = Field(default=None, pattern=SESSION_ID)
    boundary: int | None = Field(default=None, ge=0)
    before_turn: int | None = Field(
        default=None,
        ge=1,
        description="Instead of `boundary`: just before this turn began (the child has the "
        "turns before it), e.g. the turn of a file's change, to take another route from there.",
    )
    child_session_id: str | None = Field(
        default=None,
        pattern=SESSION_ID,
        description="The child's id (12 hex digits); a random one when absent. "
        "An id already taken in the store is an error.",
    )


class ForkResult(Wire):
    """The fork, now this instance's session."""

    session_id: str
    parent_session_id: str
    boundary: int


class SearchParams(Params):
    """`agentAssist/search`: the query is literal text; the filters narrow it."""

    query: str = Field(min_length=1, max_length=10_000)
    session_id: str | None = Field(default=None, pattern=SESSION_ID)
    limit: int = Field(default=50, ge=1, le=1000)
    since: str | None = Field(
        default=None,
        max_length=100,
        description="Events at or after: an ISO date or time (`2026-12-05`, `2026-12-05T14:30`), "
        "a duration ago (`30m`, `12h`, `1d`, `2w`), `today` or `yesterday` (the start of the "
        "day, in the server's time zone).",
    )
    until: str | None = Field(
        default=None,
        max_length=100,
        description="Events before: as `since`; a date, `today` or `yesterday` means the end "
        "of that day.",
    )
    kind: str | None = Field(
        default=None,
        max_length=200,
        description="`user`, `assistant`, `tool-call`, `tool-result`, `drift`, `decision`, "
        "`summary`, or several comma-separated.",
    )
    tool: str | None = Field(
        default=None, max_length=200, description="Tool calls and results of this tool."
    )
    path: str | None = Field(
        default=None,
        max_length=4096,
        description="A workspace path (or a directory: the paths under it) named by a tool "
        "call's path argument or listed by a drift event.",
    )


class SearchResult(Wire):
    """Best matches first, grouped by session."""

    results: list[SearchHit]


class HistoryParams(Params):
    """`agentAssist/history`: this or another session's transcript."""

    session_id: str | None = Field(default=None, pattern=SESSION_ID)
    steps: bool = Field(default=False, description="Also the turns' steps (`turns`).")


class HistoryResult(Wire):
    """A transcript to redraw a chat view from."""

    session_id: str
    items: list[TranscriptItem]
    turns: list[TurnView] | None = omitted("With `steps`: every turn and its steps.")


class StatusResult(Wire):
    """Where this instance's session is."""

    session_id: str
    state: Literal["idle", "running"]
    waiting: int = Field(description="Chats queued behind the running one.")
    resumed: bool
    turns: int
    model: str | None
    drift: int = Field(description="Tracked files changed outside the assistant.")
    read_only: bool
    persistence: Persistence
    context_window: int = Field(description="The context window in use.")
    context_window_source: str = Field(
        description="Where it comes from: `default`, `setting` (contextWindow), or what the "
        "model server said: `/props` (llama.cpp's n_ctx), `/v1/models` (its metadata), or "
        "`overflow` (a refused prompt)."
    )
    phase: Phase | None
    store: StoreStatus
    project: ProjectInfo
    mcp_servers: list[McpServerStatus] = Field(
        default_factory=list, description="The MCP servers whose tools the model may call."
    )


@dataclass(frozen=True)
class Request:
    """A request of the contract: its params model and its result model(s)."""

    method: str
    params: type[Params]
    result: Any  # a Wire subclass, or a union of them

    @property
    def verb(self) -> str:
        """Return the part after `agentAssist/`."""
        return self.method.split("/", 1)[1]


REQUESTS: tuple[Request, ...] = (
    Request(CHAT, ChatParams, ChatResult | ChatStarted),
    Request(SAVE, EmptyParams, SaveResult),
    Request(RESET, ResetParams, ResetResult),
    Request(NEW, EmptyParams, NewResult),
    Request(RESUME, EmptyParams, ResumeResult),
    Request(CHECKPOINT, CheckpointParams, CheckpointListResult | CheckpointRestoreResult),
    Request(CHECKPOINT_FILE, CheckpointFileParams, CheckpointFileResult),
    Request(COMPACT, EmptyParams, CompactResult),
    Request(SESSIONS, SessionsParams, SessionsResult),
    Request(OPEN, OpenParams, OpenResult),
    Request(FORK, ForkParams, ForkResult),
    Request(SEARCH, SearchParams, SearchResult),
    Request(HISTORY, HistoryParams, HistoryResult),
    Request(STATUS, EmptyParams, StatusResult),
    Request(CANCEL, CancelParams, CancelResult),
    Request(lookback.INSPECT, lookback.InspectParams, lookback.InspectResult),
    Request(lookback.FILE_HISTORY, lookback.FileHistoryParams, lookback.FileHistoryResult),
    Request(lookback.FILE_VERSION, lookback.FileVersionParams, lookback.FileVersionResult),
    Request(lookback.RESTORE_FILE, lookback.RestoreFileParams, lookback.RestoreFileResult),
    Request(lookback.STATS, lookback.StatsParams, lookback.StatsResult),
)

BY_METHOD: dict[str, Request] = {r.method: r for r in REQUESTS}
