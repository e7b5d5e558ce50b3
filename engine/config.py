"""The server's configuration: a typed view of `initializationOptions` read at the boundary.

The options are declared in `options` (defaults, bounds, environment fallbacks) and read
leniently by `options_reading`; this module turns what was read into the frozen
dataclasses the rest of the code reads, adding what the client itself tells (its instance).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from session.events import Persistence
from session.paths import sanitize_instance_id
from session.store.editor import EditorProcess
from session.workspace.patterns import DEFAULT_TRACKED

from .mcp_shape import settings_warnings
from .option_names import OptionNames, parse_option_names
from .options import (
    DEFAULT_COMPACT_AT,
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_FIRST_TOKEN,
    DEFAULT_MAX_ARGUMENT_BYTES,
    DEFAULT_MAX_CALLS_PER_RESPONSE,
    DEFAULT_MAX_CALLS_PER_TURN,
    DEFAULT_MAX_RETRIES,
    DEFAULT_STREAM,
    MIN_CONTEXT_WINDOW,
    AutoResume,
    InitializationOptions,
)
from .options import DEFAULT_MAX_REPLY_BYTES as DEFAULT_MAX_REPLY_BYTES
from .options_reading import read_options


@dataclass(frozen=True)
class ModelConfig:
    """An OpenAI-compatible chat model; the key is held in memory only."""

    name: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    max_retries: int = DEFAULT_MAX_RETRIES
    stream_timeout: float = DEFAULT_STREAM  # seconds between chunks of a stream
    first_token_timeout: float = DEFAULT_FIRST_TOKEN  # to the first byte of an answer
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES  # of one streamed reply, text and tool calls
    max_output_tokens: int | None = None  # of one answer (`max_tokens`); None: the server's
    # (option path, environment variable) of each value taken from the environment
    from_env: tuple[tuple[str, str], ...] = ()

    @property
    def configured(self) -> bool:
        """Return True if a model name is known."""
        return bool(self.name)


@dataclass(frozen=True)
class ToolsConfig:
    """What the model's tools may do in one response, one turn, one call."""

    protected_paths: tuple[str, ...] = ()  # the user's globs, added to the built-in ones
    max_calls_per_response: int = DEFAULT_MAX_CALLS_PER_RESPONSE
    max_calls_per_turn: int = DEFAULT_MAX_CALLS_PER_TURN
    max_argument_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES


@dataclass(frozen=True)
class ServerConfig:
    """Everything the server takes from the client at `initialize`."""

    instance_id: str = "default"
    auto_resume: AutoResume = AutoResume.ASK
    model: ModelConfig = field(default_factory=ModelConfig)
    persistence: Persistence = "full"
    tracked_files: tuple[str, ...] = DEFAULT_TRACKED
    context_window: int = DEFAULT_CONTEXT_WINDOW
    compact_at: float = DEFAULT_COMPACT_AT
    drift_messages: bool = True  # also show resume drift as window/showMessage
    store: str = "local"  # or a PostgreSQL connection string (never logged: it may hold a password)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    # No instanceId was given: the instance is derived from the client (`derived_instance_id`),
    # and one with no session of its own is offered the project's newest one not in use.
    instance_derived: bool = False
    editor: EditorProcess | None = None  # the process it is named after, if the client said
    option_names: OptionNames = field(default_factory=OptionNames)  # what the user calls them
    # Where `context_window` comes from: "default", "setting", or what the server said.
    window_source: str = "default"
    client: str | None = None  # the client's name, as it said it (recorded with each turn)

    def option(self, key: str) -> str:
        """Return the user's name for an option: its variable if the environment gave it."""
        return dict(self.model.from_env).get(key) or self.option_names(key)

    @property
    def compact_threshold(self) -> int:
        """Return the history size (tokens) that triggers automatic compaction."""
        return int(self.context_window * self.compact_at)

    @property
    def keep_tokens(self) -> int:
        """Return the size of the recent tail a compaction keeps verbatim."""
        return max(1, self.compact_threshold // 4)

    @property
    def history_budget(self) -> int:
        """Return the most history ever sent: a guard below the context window."""
        return int(self.context_window * 0.85)

    def with_window(self, tokens: int, source: str | None = None) -> ServerConfig:
        """Return this configuration with another working context window (and its source)."""
        window = max(MIN_CONTEXT_WINDOW, tokens)
        return replace(self, context_window=window, window_source=source or self.window_source)


def derived_instance_id(client_name: str | None, process_id: int | None) -> str:
    """Return the instance of a client that sends no instanceId: its name and process."""
    name = client_name or "default"
    if process_id is None:
        return sanitize_instance_id(name)
    suffix = f"-{process_id}"
    return sanitize_instance_id(name)[: 64 - len(suffix)].rstrip("-.") + suffix


def settings_section(settings: object) -> Mapping[str, Any] | None:
    """Return our options in settings a client sent: `agentAssist`, or the object itself."""
    if not isinstance(settings, Mapping):
        return None
    section = settings.get("agentAssist")
    if isinstance(section, Mapping):
        return section
    return None if "agentAssist" in settings else settings


def overlay_options(base: object, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Return `base` with `changes` laid over it, objects merged key by key."""
    merged = dict(base) if isinstance(base, Mapping) else {}
    for key, value in changes.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = overlay_options(below, value)
        else:
            merged[key] = value
    return merged


def parse_initialization_options(
    raw: object,
    client_name: str | None,
    env: Mapping[str, str],
    process_id: int | None = None,
) -> tuple[ServerConfig, list[str]]:
    """Parse options; each invalid one falls back to its default with a warning."""
    warnings: list[str] = []
    options: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    if raw is not None and not isinstance(raw, Mapping):
        warnings.append("initializationOptions must be an object; using defaults")
    derived = derived_instance_id(client_name, process_id)
    read = read_options(InitializationOptions, options, env, {"instanceId": derived})
    warnings += read.warnings
    warnings += settings_warnings(read.values.pop("mcp_servers"))  # the rest: `mcp_config`
    names = parse_option_names(read.values.pop("option_names"), client_name, warnings)
    values = read.values
    model = values.pop("model")
    model["first_token_timeout"] = max(model["first_token_timeout"], model["stream_timeout"])
    from_env = tuple((path, name) for path, name in read.from_env if path.startswith("model."))
    values["model"] = ModelConfig(**model, from_env=from_env)
    values["tools"] = ToolsConfig(**values["tools"])
    values["persistence"] = values["persistence"].value
    instance_derived = "instanceId" not in read.given
    config = ServerConfig(
        **values,
        instance_derived=instance_derived,
        editor=EditorProcess(client_name or "default", process_id)
        if instance_derived and process_id is not None
        else None,
        option_names=names,
        window_source="setting" if "contextWindow" in read.given else "default",
        client=client_label(client_name),
    )
    return config, warnings


MAX_CLIENT_NAME = 100


def client_label(name: str | None) -> str | None:
    """Return a client's name fit to record: printable, one line, bounded (None if not)."""
    if not name:
        return None
    cleaned = "".join(c for c in name if c.isprintable()).strip()
    return cleaned[:MAX_CLIENT_NAME] or None
