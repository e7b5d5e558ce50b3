"""The wire contract: custom method names, typed params and result builders.

Mirrored by `editors/vscode/src/common/constants.ts` and `editors/nvim/lua/agent_assist/`.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from session.derive import TranscriptItem

# Requests (client → server)
CHAT = "agentAssist/chat"
SAVE = "agentAssist/save"
RESET = "agentAssist/reset"
NEW = "agentAssist/new"
RESUME = "agentAssist/resume"
CHECKPOINT = "agentAssist/checkpoint"
COMPACT = "agentAssist/compact"
SESSIONS = "agentAssist/sessions"
OPEN = "agentAssist/open"
FORK = "agentAssist/fork"
SEARCH = "agentAssist/search"
HISTORY = "agentAssist/history"
STATUS = "agentAssist/status"

# Notifications (server → client)
CHAT_DELTA = "agentAssist/chatDelta"
CHAT_RETRY = "agentAssist/chatRetry"
TOOL_CALL = "agentAssist/toolCall"
DRIFT = "agentAssist/drift"
SESSION_CHANGED = "agentAssist/sessionChanged"

# JSON-RPC / LSP error codes
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
REQUEST_CANCELLED = -32800
REQUEST_FAILED = -32803


def command_name(method: str) -> str:
    """Return the `workspace/executeCommand` name of a request: `agentAssist.<verb>`."""
    return "agentAssist." + method.split("/", 1)[1]


class Params(BaseModel):
    """Base of all request params: camelCase on the wire, unknown fields ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, str_strip_whitespace=False)


class EmptyParams(Params):
    """Params of requests that take none."""


class ChatParams(Params):
    """`agentAssist/chat`."""

    text: str = Field(min_length=1, max_length=1_000_000)


class ResetParams(Params):
    """`agentAssist/reset`."""

    delete_files: bool | None = Field(default=None, alias="deleteFiles")


class CheckpointParams(Params):
    """`agentAssist/checkpoint`."""

    number: int | None = Field(default=None, ge=1)


class OpenParams(Params):
    """`agentAssist/open`."""

    session_id: str = Field(alias="sessionId", pattern=r"^[a-f0-9]{12}$")


class ForkParams(Params):
    """`agentAssist/fork`."""

    session_id: str | None = Field(default=None, alias="sessionId", pattern=r"^[a-f0-9]{12}$")
    boundary: int | None = Field(default=None, ge=0)


class SearchParams(Params):
    """`agentAssist/search`."""

    query: str = Field(min_length=1, max_length=10_000)
    session_id: str | None = Field(default=None, alias="sessionId", pattern=r"^[a-f0-9]{12}$")
    limit: int = Field(default=50, ge=1, le=1000)


class HistoryParams(Params):
    """`agentAssist/history`."""

    session_id: str | None = Field(default=None, alias="sessionId", pattern=r"^[a-f0-9]{12}$")


P = TypeVar("P", bound=Params)


class ParamsError(ValueError):
    """Params that do not match the contract; the message names the field."""


def parse_params(model: type[P], method: str, raw: Any) -> P:
    """Validate raw JSON params into `model`, or raise ParamsError naming the bad field."""
    if raw is None:
        raw = {}
    if isinstance(raw, list | tuple):  # executeCommand passes `arguments: [params]`
        raw = raw[0] if raw else {}
    if not isinstance(raw, dict):
        raise ParamsError(f"{method}: params must be an object, got {type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "params"
        raise ParamsError(f"{method}: invalid field '{field}': {first['msg']}") from None


def transcript_items(items: list[TranscriptItem]) -> list[dict[str, Any]]:
    """Convert transcript items to the wire form `{turn, role, text, endReason?}`."""
    out: list[dict[str, Any]] = []
    for item in items:
        wire: dict[str, Any] = {"turn": item.turn, "role": item.role, "text": item.text}
        if item.end_reason is not None:
            wire["endReason"] = item.end_reason
        if item.status is not None:
            wire["status"] = item.status
        if item.partial:
            wire["partial"] = True
        out.append(wire)
    return out
