"""`initializationOptions`: what a client may send at `initialize` (all optional), declared once.

Each field carries its default, its bounds and, in a `Lenient` marker beside it, the
environment variables read when it is unset and how a bad value is told. `options_reading`
reads a client's options by these declarations (a bad field falls back to its default with
a warning naming its camelCase key); `config`'s classes, the view the server reads, are these
models with what the server adds, so a new option is declared here and nowhere else (and
documented in docs/protocol.md). The protocol's generator writes the JSON schema and the
clients' types from these models.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from session.paths import INSTANCE_ID_RE
from session.workspace.patterns import DEFAULT_TRACKED

DEFAULT_MAX_RETRIES = 2
DEFAULT_STREAM = 60.0
# The first token may take longer: a local server reads the whole prompt before it sends
# anything (minutes for a long prompt and a large model on a CPU).
DEFAULT_FIRST_TOKEN = 300.0
DEFAULT_MAX_REPLY_BYTES = 4 << 20
DEFAULT_MAX_CALLS_PER_RESPONSE = 64
DEFAULT_MAX_CALLS_PER_TURN = 256
DEFAULT_MAX_ARGUMENT_BYTES = 1 << 20
DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_COMPACT_AT = 0.6
MIN_CONTEXT_WINDOW = 1_000


class Params(BaseModel):
    """Base of request params: camelCase on the wire, unknown fields ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel, extra="ignore", populate_by_name=True, frozen=True
    )


FIELD_KEYS = ("default", "description", "title", "examples", "deprecated")  # not its type's


class Options(Params):
    """Base of the options: a client may send any of them as null (unset), whatever its type."""

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """Return the wire schema: each field's type or null."""
        schema = super().__get_pydantic_json_schema__(core_schema, handler)
        for prop in handler.resolve_ref_schema(schema).get("properties", {}).values():
            alternatives = prop.get("anyOf")
            if alternatives is None:
                kind = {k: prop.pop(k) for k in list(prop) if k not in FIELD_KEYS}
                prop["anyOf"] = alternatives = [kind]
            if {"type": "null"} not in alternatives:
                alternatives.append({"type": "null"})
        return schema


@dataclass(frozen=True)
class Lenient:
    """How the server reads an option beyond its type: where else from, what it says if bad."""

    env: tuple[str, ...] = ()  # the variables read, in order, while the option is unset
    unit: str = ""  # said after its bounds
    allowed: str = ""  # what is allowed, where the type and bounds do not say it
    fallback: str = ""  # what a bad value gives way to, where its default does not say it
    invalid: str = ""  # the whole warning, where the value is not to be repeated
    restart: bool = False  # a change applies when the server is restarted
    raw: bool = False  # passed on as given, to a parser of its own


def _stripped(text: str) -> str:
    return text.strip()


def _glob(text: str) -> str:
    if not text.strip():
        raise ValueError("a blank glob")
    return text.strip()


Text = Annotated[str, AfterValidator(_stripped)]  # blank is unset
Glob = Annotated[str, AfterValidator(_glob)]
GLOBS = "must be a list of glob strings"


class Persistence(StrEnum):
    """What is written to disk: everything, or no conversation content (`metadata`)."""

    FULL = "full"
    METADATA = "metadata"


class AutoResume(StrEnum):
    """What to do with this instance's previous session at start."""

    ASK = "ask"
    ALWAYS = "always"
    NEVER = "never"


class ModelOptions(Options):
    """An OpenAI-compatible chat model (else the environment's)."""

    name: Annotated[
        Text | None,
        Lenient(env=("AGENT_ASSIST_LLM_MODEL_NAME", "AGENT_ASSIST_MODEL"), fallback="none"),
    ] = None
    base_url: Annotated[
        Text | None,
        Lenient(env=("AGENT_ASSIST_LLM_BASE_URL", "OPENAI_BASE_URL"), fallback="OpenAI's"),
    ] = None
    api_key: Annotated[
        Text | None,
        Lenient(
            env=("AGENT_ASSIST_LLM_API_KEY", "OPENAI_API_KEY"),
            invalid="model.apiKey must be a string; ignored",
        ),
    ] = Field(
        default=None, repr=False, description="Kept in memory; redacted from everything written."
    )
    max_retries: Annotated[int, Lenient(env=("AGENT_ASSIST_LLM_MAX_RETRIES",))] = Field(
        default=DEFAULT_MAX_RETRIES,
        ge=0,
        le=10,
        description="Retries of a failed model request (default 2).",
    )
    stream_timeout: Annotated[
        float, Lenient(env=("AGENT_ASSIST_LLM_STREAM_TIMEOUT",), unit=" seconds")
    ] = Field(
        default=DEFAULT_STREAM,
        ge=1,
        le=3600,
        description="Seconds without stream data before an attempt is retried (default 60).",
    )
    first_token_timeout: Annotated[
        float, Lenient(env=("AGENT_ASSIST_LLM_FIRST_TOKEN_TIMEOUT",), unit=" seconds")
    ] = Field(
        default=DEFAULT_FIRST_TOKEN,
        ge=1,
        le=3600,
        description="Seconds to the first data of an answer (a local server reads the prompt "
        "first) before an attempt is retried (default 300; never less than streamTimeout).",
    )
    max_reply_bytes: Annotated[int, Lenient(unit=" bytes")] = Field(
        default=DEFAULT_MAX_REPLY_BYTES,
        ge=65_536,
        le=268_435_456,
        description="Bytes of one streamed reply (text and tool-call arguments) past which the "
        "attempt ends as `length` with a note (default 4194304).",
    )

    max_output_tokens: Annotated[
        int | None,
        Lenient(
            env=("AGENT_ASSIST_LLM_MAX_OUTPUT_TOKENS",),
            unit=" tokens",
            fallback="the server's limit",
        ),
    ] = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Tokens of one answer of the model (sent as `max_tokens`; summaries are not "
        "limited by it). Unset: the server's own limit (else AGENT_ASSIST_LLM_MAX_OUTPUT_TOKENS).",
    )


class ToolsOptions(Options):
    """What the model's tools may do; past a limit the model is told so in the tool result."""

    protected_paths: Annotated[
        tuple[Glob, ...],
        Lenient(invalid=f"tools.protectedPaths {GLOBS}; only the built-in ones apply"),
    ] = Field(
        default=(),
        description="Globs (relative to the workspace) the model's file tools write only after "
        "the user confirms, added to the defaults (`.git/**`, `.vscode/tasks.json`, "
        "`.github/workflows/**`, ...; see docs/reliability.md).",
    )
    max_calls_per_response: int = Field(
        default=DEFAULT_MAX_CALLS_PER_RESPONSE,
        ge=1,
        le=1_000,
        description="Tool calls one model response may ask for; the rest are refused (default 64).",
    )
    max_calls_per_turn: int = Field(
        default=DEFAULT_MAX_CALLS_PER_TURN,
        ge=1,
        le=10_000,
        description="Tool calls in one turn; past it every call is refused (default 256).",
    )
    max_argument_bytes: Annotated[int, Lenient(unit=" bytes")] = Field(
        default=DEFAULT_MAX_ARGUMENT_BYTES,
        ge=1_024,
        le=67_108_864,
        description="Bytes of one tool call's arguments (a written file's content included); "
        "a larger call is refused (default 1048576).",
    )


MCP_KINDS = {"streamable-http": "http"}  # other clients' names of a transport


def _kind(value: object) -> object:
    return MCP_KINDS.get(value, value) if isinstance(value, str) else value


def _pairs(value: object) -> object:
    """Return ACP's `[{name, value}]` as the object it stands for (anything else as it is)."""
    if isinstance(value, list) and all(isinstance(p, dict) and "name" in p for p in value):
        return {p["name"]: p.get("value") for p in value}
    return value


Pairs = Annotated[dict[str, str] | None, BeforeValidator(_pairs)]


class McpServerOptions(Options):
    """One MCP server: a command (stdio) or a URL (http, sse)."""

    command: str | None = Field(default=None, description="The program of a stdio server.")
    args: list[str] | None = None
    env: Pairs = None
    cwd: str | None = Field(default=None, description="Where it runs (default: the project).")
    url: str | None = Field(default=None, description="An http or sse server's address.")
    headers: Pairs = None
    type: Annotated[Literal["stdio", "http", "sse"] | None, BeforeValidator(_kind)] = Field(
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


class InitializationOptions(Options):
    """Options of `initialize`; each falls back to its default (with a warning) if invalid."""

    instance_id: Annotated[
        str | None, Lenient(allowed="allowed: 1-64 of A-Z a-z 0-9 _ . -", restart=True)
    ] = Field(
        default=None,
        pattern=INSTANCE_ID_RE.pattern,
        description="This editor instance (a window): it resumes its own last session.",
    )
    auto_resume: AutoResume = AutoResume.ASK
    model: Annotated[ModelOptions | None, Lenient(fallback="the environment")] = None
    tools: ToolsOptions | None = None
    persistence: Annotated[Persistence, Lenient(restart=True)] = Persistence.FULL
    tracked_files: Annotated[
        tuple[Glob, ...],
        Lenient(invalid=f"trackedFiles {GLOBS}; using the default", restart=True),
    ] = Field(default=DEFAULT_TRACKED, description="Globs of files whose drift is watched.")
    context_window: Annotated[int, Lenient(unit=" tokens")] = Field(
        default=DEFAULT_CONTEXT_WINDOW,
        ge=MIN_CONTEXT_WINDOW,
        le=10_000_000,
        description="Tokens (default 128000).",
    )
    compact_at: float = Field(
        default=DEFAULT_COMPACT_AT,
        ge=0.1,
        le=0.95,
        description="Fraction of the window at which older turns are compacted (default 0.6).",
    )
    store: Annotated[
        Text,
        Lenient(
            env=("AGENT_ASSIST_STORE",),
            invalid="store must be a string: local or a PostgreSQL connection string",
            restart=True,
        ),
    ] = Field(
        default="local",
        repr=False,  # a connection string may hold a password
        description="Where sessions are kept: `local` (the default: files under the store root) "
        "or a PostgreSQL connection string (`postgresql://role@host/db`; the password from it, "
        "PGPASSWORD or ~/.pgpass). Else AGENT_ASSIST_STORE.",
    )
    option_names: Annotated[dict[str, str] | None, Lenient(raw=True)] = Field(
        default=None,
        description="What the user calls each option in this client, by its path here: "
        '`{"model.baseUrl": "--base-url"}`; the server\'s messages use these names. Unset ones: '
        "a known client's (by clientInfo.name: VS Code `agentAssist.model.baseUrl`, Neovim "
        "`model.base_url`, the terminal's flags), else the path; an environment variable the "
        "value came from is named as such.",
    )
    mcp_servers: Annotated[dict[str, McpServerOptions] | None, Lenient(raw=True)] = Field(
        default=None,
        description="MCP servers whose tools the model may call, by name (its tools reach the "
        "model as `<name>_<tool>`); trusted. The project's `.agent-assist/mcp.json` adds its "
        "own, started only once the user allowed each. Read at start.",
    )
    drift_messages: bool = Field(
        default=True,
        description="False: drift (at resume and live) is not repeated as `window/showMessage` "
        "(default true).",
    )


NO_MARKER = Lenient()


def lenient(info: Any) -> Lenient:
    """Return a field's `Lenient` marker (an empty one if it has none)."""
    return next((m for m in info.metadata if isinstance(m, Lenient)), NO_MARKER)


def group_of(info: Any) -> type[Params] | None:
    """Return the options model a field holds (`model`, `tools`), if it holds one."""
    args = getattr(info.annotation, "__args__", (info.annotation,))
    return next((a for a in args if isinstance(a, type) and issubclass(a, Params)), None)


def _walk(model: type[Params], prefix: str = "") -> list[tuple[str, Any]]:
    """Return (path, field info) of every option below `model`, groups before their fields."""
    found: list[tuple[str, Any]] = []
    for name, info in model.model_fields.items():
        path = prefix + (info.alias or name)
        found.append((path, info))
        group = group_of(info)
        if group is not None and not lenient(info).raw:
            found += _walk(group, path + ".")
    return found


@functools.cache
def option_paths() -> frozenset[str]:
    """Return the path of every option `initializationOptions` declares (`model.baseUrl`)."""
    return frozenset(path for path, _ in _walk(InitializationOptions))


@functools.cache
def env_vars() -> dict[str, tuple[str, ...]]:
    """Return the variables each option falls back to, by its path."""
    return {p: lenient(i).env for p, i in _walk(InitializationOptions) if lenient(i).env}


def restart_fields() -> tuple[tuple[str, str], ...]:
    """Return (key, field) of the options that apply only when the server is restarted."""
    fields = InitializationOptions.model_fields.items()
    return tuple((info.alias or name, name) for name, info in fields if lenient(info).restart)


def live_fields() -> tuple[str, ...]:
    """Return the fields of the options that apply from the next turn on when changed."""
    fields = InitializationOptions.model_fields.items()
    return tuple(name for name, info in fields if not (lenient(info).restart or lenient(info).raw))
