"""`initializationOptions` parsed once, at the boundary, into typed configuration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from session.paths import is_valid_instance_id, sanitize_instance_id
from session.store.pointers import EditorProcess
from session.workspace.patterns import DEFAULT_TRACKED

from .mcp_shape import settings_warnings
from .option_names import OptionNames, parse_option_names

AutoResume = Literal["ask", "always", "never"]
Persistence = Literal["full", "metadata"]


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
MIN_CONTEXT_WINDOW = 1_000


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
    auto_resume: AutoResume = "ask"
    model: ModelConfig = field(default_factory=ModelConfig)
    persistence: Persistence = "full"
    tracked_files: tuple[str, ...] = DEFAULT_TRACKED
    context_window: int = DEFAULT_CONTEXT_WINDOW
    compact_at: float = 0.6
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


def _first(*values: object) -> str | None:
    for value in values:
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _from(
    key: str, given: object, env: Mapping[str, str], names: tuple[str, ...], found: list[Any]
) -> str | None:
    """Return the option's value, else the first set variable's (noted in `found`)."""
    value = _first(given)
    if value is not None:
        return value
    for name in names:
        if (value := _first(env.get(name))) is not None:
            found.append((key, name))
            return value
    return None


def _number(value: object, kind: type[int] | type[float]) -> float | None:
    """Return `value` as a number (an env string too), or None if it is not one of `kind`."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = kind(value.strip())
        except ValueError:
            return None
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) or (kind is float and isinstance(value, float)):
        return value
    return None


def _bounded(
    warnings: list[str],
    name: str,
    value: object,
    kind: type[int] | type[float],
    low: float,
    high: float,
    default: float,
    unit: str = "",
) -> float:
    """Return `value` if it is a `kind` within [low, high]; else warn and return `default`."""
    parsed = _number(value, kind)
    if parsed is not None and low <= parsed <= high:
        return kind(parsed)
    if value is not None:
        warnings.append(f"{name} {value!r} is invalid ({low:n}..{high:n}{unit}); using {default:n}")
    return default


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

    default_instance = derived_instance_id(client_name, process_id)
    instance = options.get("instanceId")
    if instance is None:
        instance_id = default_instance
    elif is_valid_instance_id(instance):
        instance_id = str(instance)
    else:
        instance_id = default_instance
        warnings.append(
            f"instanceId {instance!r} is invalid (allowed: 1-64 of A-Z a-z 0-9 _ . -); "
            f"using {default_instance!r}"
        )

    auto_resume: AutoResume = "ask"
    value = options.get("autoResume")
    if value in ("ask", "always", "never"):
        auto_resume = value
    elif value is not None:
        warnings.append(f"autoResume {value!r} is invalid (ask|always|never); using 'ask'")

    persistence: Persistence = "full"
    value = options.get("persistence")
    if value in ("full", "metadata"):
        persistence = value
    elif value is not None:
        warnings.append(f"persistence {value!r} is invalid (full|metadata); using 'full'")

    tracked: tuple[str, ...] = DEFAULT_TRACKED
    value = options.get("trackedFiles")
    if isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value):
        tracked = tuple(value)
    elif value is not None:
        warnings.append("trackedFiles must be a list of glob strings; using the default")

    context_window = int(
        _bounded(
            warnings,
            "contextWindow",
            options.get("contextWindow"),
            int,
            1_000,
            10_000_000,
            DEFAULT_CONTEXT_WINDOW,
            " tokens",
        )
    )
    compact_at = _bounded(warnings, "compactAt", options.get("compactAt"), float, 0.1, 0.95, 0.6)

    model_opts = options.get("model")
    if model_opts is not None and not isinstance(model_opts, Mapping):
        warnings.append(
            "model must be an object {name, baseUrl, apiKey, maxRetries, streamTimeout, "
            "firstTokenTimeout}; "
            "using the environment"
        )
        model_opts = None
    model_opts = model_opts or {}
    max_retries = int(
        _bounded(
            warnings,
            "model.maxRetries",
            model_opts.get("maxRetries", env.get("AGENT_ASSIST_LLM_MAX_RETRIES")),
            int,
            0,
            10,
            DEFAULT_MAX_RETRIES,
        )
    )

    def seconds(key: str, env_key: str, default: float) -> float:
        value = model_opts.get(key, env.get(env_key))
        return _bounded(warnings, f"model.{key}", value, float, 1, 3600, default, " seconds")

    stream_timeout = seconds("streamTimeout", "AGENT_ASSIST_LLM_STREAM_TIMEOUT", DEFAULT_STREAM)
    first_token_timeout = seconds(
        "firstTokenTimeout", "AGENT_ASSIST_LLM_FIRST_TOKEN_TIMEOUT", DEFAULT_FIRST_TOKEN
    )
    max_output = model_opts.get("maxOutputTokens", env.get("AGENT_ASSIST_LLM_MAX_OUTPUT_TOKENS"))
    max_output_tokens = _number(max_output, int)
    if max_output is not None and not (max_output_tokens and 0 < max_output_tokens <= 10**6):
        warnings.append(
            f"model.maxOutputTokens {max_output!r} is invalid (1..1000000 tokens); "
            "using the server's limit"
        )
        max_output_tokens = None
    from_env: list[tuple[str, str]] = []
    if "maxOutputTokens" not in model_opts and max_output is not None:
        from_env.append(("model.maxOutputTokens", "AGENT_ASSIST_LLM_MAX_OUTPUT_TOKENS"))
    max_reply_bytes = int(
        _bounded(
            warnings,
            "model.maxReplyBytes",
            model_opts.get("maxReplyBytes"),
            int,
            65_536,
            268_435_456,
            DEFAULT_MAX_REPLY_BYTES,
            " bytes",
        )
    )
    model = ModelConfig(
        max_retries=max_retries,
        max_reply_bytes=max_reply_bytes,
        stream_timeout=stream_timeout,
        first_token_timeout=max(first_token_timeout, stream_timeout),
        max_output_tokens=None if max_output_tokens is None else int(max_output_tokens),
        name=_from(
            "model.name",
            model_opts.get("name"),
            env,
            ("AGENT_ASSIST_LLM_MODEL_NAME", "AGENT_ASSIST_MODEL"),
            from_env,
        ),
        base_url=_from(
            "model.baseUrl",
            model_opts.get("baseUrl"),
            env,
            ("AGENT_ASSIST_LLM_BASE_URL", "OPENAI_BASE_URL"),
            from_env,
        ),
        api_key=_from(
            "model.apiKey",
            model_opts.get("apiKey"),
            env,
            ("AGENT_ASSIST_LLM_API_KEY", "OPENAI_API_KEY"),
            from_env,
        ),
        from_env=tuple(from_env),
    )
    drift_messages = True
    value = options.get("driftMessages")
    if isinstance(value, bool):
        drift_messages = value
    elif value is not None:
        warnings.append(f"driftMessages {value!r} is invalid (true|false); using true")
    value = options.get("store")
    store = value.strip() if isinstance(value, str) else ""
    if value is not None and not isinstance(value, str):
        warnings.append("store must be a string: local or a PostgreSQL connection string")
    store = store or env.get("AGENT_ASSIST_STORE", "").strip() or "local"
    derived = instance_id == default_instance and instance != default_instance
    warnings += settings_warnings(options.get("mcpServers"))  # the rest: `mcp_config`
    config = ServerConfig(
        instance_id,
        auto_resume,
        model,
        persistence,
        tracked,
        context_window,
        compact_at,
        drift_messages,
        store,
        _tools(options.get("tools"), warnings),
        instance_derived=derived,
        editor=EditorProcess(client_name or "default", process_id)
        if derived and process_id is not None
        else None,
        option_names=parse_option_names(options.get("optionNames"), client_name, warnings),
        window_source=(
            "setting" if _number(options.get("contextWindow"), int) == context_window else "default"
        ),
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


def _tools(raw: object, warnings: list[str]) -> ToolsConfig:
    """Parse `tools`; each invalid field falls back to its default with a warning."""
    if raw is None:
        return ToolsConfig()
    if not isinstance(raw, Mapping):
        warnings.append(
            "tools must be an object {protectedPaths, maxCallsPerResponse, maxCallsPerTurn, "
            "maxArgumentBytes}; using the defaults"
        )
        return ToolsConfig()
    protected: tuple[str, ...] = ()
    value = raw.get("protectedPaths")
    if isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value):
        protected = tuple(v.strip() for v in value)
    elif value is not None:
        warnings.append(
            "tools.protectedPaths must be a list of glob strings; only the built-in ones apply"
        )

    def count(key: str, low: int, high: int, default: int, unit: str = "") -> int:
        return int(_bounded(warnings, f"tools.{key}", raw.get(key), int, low, high, default, unit))

    return ToolsConfig(
        protected_paths=protected,
        max_calls_per_response=count(
            "maxCallsPerResponse", 1, 1_000, DEFAULT_MAX_CALLS_PER_RESPONSE
        ),
        max_calls_per_turn=count("maxCallsPerTurn", 1, 10_000, DEFAULT_MAX_CALLS_PER_TURN),
        max_argument_bytes=count(
            "maxArgumentBytes", 1_024, 67_108_864, DEFAULT_MAX_ARGUMENT_BYTES, " bytes"
        ),
    )
