"""The server's configuration: `initializationOptions` as read, and what the server adds.

The options are declared in `options` (defaults, bounds, environment fallbacks) and read
leniently by `options_reading`. The classes here are those declarations, subclassed: each
option is an attribute under its snake_case name with no second declaration, beside what
the client itself tells (its instance, its name) and what the server learns (its window).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, Field

from session.events import Persistence
from session.paths import sanitize_instance_id
from session.store.editor import EditorProcess

from .mcp_shape import server_entries, valid_servers
from .option_names import OptionNames, parse_option_names
from .options import DEFAULT_MAX_REPLY_BYTES as DEFAULT_MAX_REPLY_BYTES
from .options import (
    MIN_CONTEXT_WINDOW,
    InitializationOptions,
    McpServerOptions,
    ModelOptions,
    ToolsOptions,
)
from .options_reading import read_options

VIEW = ConfigDict(extra="forbid", arbitrary_types_allowed=True)  # built here, not sent


class ModelConfig(ModelOptions):
    """An OpenAI-compatible chat model (`ModelOptions`); the key is held in memory only."""

    model_config = VIEW

    # (option path, environment variable) of each value taken from the environment
    from_env: tuple[tuple[str, str], ...] = ()

    @property
    def configured(self) -> bool:
        """Return True if a model name is known."""
        return bool(self.name)


class ToolsConfig(ToolsOptions):
    """What the model's tools may do in one response, one turn, one call (`ToolsOptions`)."""

    model_config = VIEW


class ServerConfig(InitializationOptions):
    """Everything the server takes from the client at `initialize` (`InitializationOptions`).

    The groups are their views; `persistence` is the events' plain string; the raw options
    are what their own parsers made of them.
    """

    model_config = VIEW

    instance_id: str = "default"
    model: ModelConfig = Field(default_factory=ModelConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    persistence: Persistence = "full"  # type: ignore[assignment]  # as the events keep it
    option_names: OptionNames = Field(default_factory=OptionNames)  # type: ignore[assignment]
    # the valid ones; not in its repr: their env and headers may hold secrets
    mcp_servers: dict[str, McpServerOptions] = Field(default_factory=dict, repr=False)
    # No instanceId was given: the instance is derived from the client (`derived_instance_id`),
    # and one with no session of its own is offered the project's newest one not in use.
    instance_derived: bool = False
    editor: EditorProcess | None = None  # the process it is named after, if the client said
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
        source = source or self.window_source
        return self.model_copy(update={"context_window": window, "window_source": source})


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
    values = read.values
    entries, shape = server_entries(values["mcp_servers"], "mcpServers")
    warnings += shape  # each server's own warning: `mcp_config`, where it is started
    values["mcp_servers"] = valid_servers(entries)
    values["option_names"] = parse_option_names(values["option_names"], client_name, warnings)
    model = values["model"]
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
