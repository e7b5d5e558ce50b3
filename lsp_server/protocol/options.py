"""`initializationOptions`: what a client may send at `initialize` (all optional).

The server parses them leniently in `lsp_server/config.py` (an invalid option falls back
to its default with a warning); this model is their declaration, for the schema and the
clients' types.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .types import AutoResume, Persistence
from .wire import Params


class ModelOptions(Params):
    """An OpenAI-compatible chat model (else the environment's)."""

    name: str | None = None
    base_url: str | None = None
    api_key: str | None = Field(
        default=None, description="Kept in memory; redacted from everything written."
    )
    max_retries: int | None = Field(
        default=None, ge=0, le=10, description="Retries of a failed model request (default 2)."
    )
    stream_timeout: float | None = Field(
        default=None,
        ge=1,
        le=3600,
        description="Seconds without stream data before an attempt is retried (default 60).",
    )
    first_token_timeout: float | None = Field(
        default=None,
        ge=1,
        le=3600,
        description="Seconds to the first data of an answer (a local server reads the prompt "
        "first) before an attempt is retried (default 300; never less than streamTimeout).",
    )
    max_reply_bytes: int | None = Field(
        default=None,
        ge=65_536,
        le=268_435_456,
        description="Bytes of one streamed reply (text and tool-call arguments) past which the "
        "attempt ends as `length` with a note (default 4194304).",
    )

    max_output_tokens: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Tokens of one answer of the model (sent as `max_tokens`; summaries are not "
        "limited by it). Unset: the server's own limit (else AGENT_ASSIST_LLM_MAX_OUTPUT_TOKENS).",
    )


class ToolsOptions(Params):
    """What the model's tools may do; past a limit the model is told so in the tool result."""

    protected_paths: list[str] | None = Field(
        default=None,
        description="Globs (relative to the workspace) the model's file tools write only after "
        "the user confirms, added to the defaults (`.git/**`, `.vscode/tasks.json`, "
        "`.github/workflows/**`, ...; see docs/reliability.md).",
    )
    max_calls_per_response: int | None = Field(
        default=None,
        ge=1,
        le=1_000,
        description="Tool calls one model response may ask for; the rest are refused (default 64).",
    )
    max_calls_per_turn: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="Tool calls in one turn; past it every call is refused (default 256).",
    )
    max_argument_bytes: int | None = Field(
        default=None,
        ge=1_024,
        le=67_108_864,
        description="Bytes of one tool call's arguments (a written file's content included); "
        "a larger call is refused (default 1048576).",
    )


class McpServerOptions(Params):
    """One MCP server: a command (stdio) or a URL (http, sse)."""

    command: str | None = Field(default=None, description="The program of a stdio server.")
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = Field(default=None, description="Where it runs (default: the project).")
    url: str | None = Field(default=None, description="An http or sse server's address.")
    headers: dict[str, str] | None = None
    type: Literal["stdio", "http", "sse"] | None = Field(
        default=None, description="Default: `stdio` with a command, else `http`."
    )
    confirm: bool | list[str] | None = Field(
        default=None,
        description="true: the user confirms each call of its tools; a list: of those tools.",
    )
    timeout: float | None = Field(default=None, gt=0, description="Seconds one call may take.")
    start_timeout: float | None = Field(
        default=None, gt=0, description="Seconds its start may take (default 60)."
    )
    disabled: bool | None = Field(default=None, description="true: left out.")


class InitializationOptions(Params):
    """Options of `initialize`; each falls back to its default (with a warning) if invalid."""

    instance_id: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description="This editor instance (a window): it resumes its own last session.",
    )
    auto_resume: AutoResume | None = None
    model: ModelOptions | None = None
    tools: ToolsOptions | None = None
    persistence: Persistence | None = None
    tracked_files: list[str] | None = Field(
        default=None, description="Globs of files whose drift is watched."
    )
    context_window: int | None = Field(
        default=None, ge=1_000, le=10_000_000, description="Tokens (default 128000)."
    )
    compact_at: float | None = Field(
        default=None,
        ge=0.1,
        le=0.95,
        description="Fraction of the window at which older turns are compacted (default 0.6).",
    )
    store: str | None = Field(
        default=None,
        description="Where sessions are kept: `local` (the default: files under the store root) "
        "or a PostgreSQL connection string (`postgresql://role@host/db`; the password from it, "
        "PGPASSWORD or ~/.pgpass). Else AGENT_ASSIST_STORE.",
    )
    option_names: dict[str, str] | None = Field(
        default=None,
        description="What the user calls each option in this client, by its path here: "
        '`{"model.baseUrl": "--base-url"}`; the server\'s messages use these names. Unset ones: '
        "a known client's (by clientInfo.name: VS Code `agentAssist.model.baseUrl`, Neovim "
        "`model.base_url`, the terminal's flags), else the path; an environment variable the "
        "value came from is named as such.",
    )
    mcp_servers: dict[str, McpServerOptions] | None = Field(
        default=None,
        description="MCP servers whose tools the model may call, by name (its tools reach the "
        "model as `<name>_<tool>`); trusted. The project's `.agent-assist/mcp.json` adds its "
        "own, started only once the user allowed each. Read at start.",
    )
    drift_messages: bool | None = Field(
        default=None,
        description="False: drift (at resume and live) is not repeated as `window/showMessage` "
        "(default true).",
    )
