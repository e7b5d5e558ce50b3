"""What the user calls each option: a terminal flag, an editor's setting, a setup key.

The server's messages name an option the way the user set it: the terminal's `--base-url`,
VS Code's `agentAssist.model.baseUrl`, Neovim's `setup({ model = { base_url = … } })`, or the
environment variable the value came from. An option is keyed by its path in
`initializationOptions` (`model.baseUrl`, `contextWindow`); a client says its own names in
`initializationOptions.optionNames` (`{"model.baseUrl": "--base-url"}`), else the names of a
known client (by `clientInfo.name`) are used, else the path itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from .options import env_vars, option_paths

ClientStyle = Literal["vscode", "neovim", "terminal", "generic"]

# `clientInfo.name` of VS Code and its forks (vscode-languageclient sends `vscode.env.appName`).
_VSCODE_NAMES = ("visual studio code", "code - oss", "code-server", "vscode", "vscodium", "cursor")
_NEOVIM_NAMES = ("neovim", "nvim")
_TERMINAL_NAMES = ("agent-assist-terminal",)
_ACP_PREFIX = "acp-"  # `agent-assist acp`'s sessions, named after the client it serves
# The terminal's flags (`agent-assist chat --help`); its other options have none.
TERMINAL_FLAGS: Mapping[str, str] = {
    "model.name": "--model",
    "model.baseUrl": "--base-url",
    "contextWindow": "--context-window",
    "model.maxOutputTokens": "--max-output-tokens",
}
HOW_TO_CONFIGURE_MODEL = (
    "No model is configured. VS Code: the settings agentAssist.model.name and "
    "agentAssist.model.baseUrl, and the key with the command Agent Assist: Set API Key. "
    "Neovim: setup({ model = { name = ..., base_url = ... } }), the key in "
    "AGENT_ASSIST_LLM_API_KEY. Another client: initializationOptions.model {name, baseUrl, "
    "apiKey}. Or the server's environment: AGENT_ASSIST_LLM_MODEL_NAME, "
    "AGENT_ASSIST_LLM_BASE_URL and AGENT_ASSIST_LLM_API_KEY (or AGENT_ASSIST_MODEL, "
    "OPENAI_BASE_URL, OPENAI_API_KEY). Then restart the server."
)


MAX_NAME = 200


def client_style(client_name: str | None) -> ClientStyle:
    """Return which known client `clientInfo.name` is, or "generic"."""
    name = (client_name or "").strip().lower()
    if name.startswith(_VSCODE_NAMES):
        return "vscode"
    if name in _NEOVIM_NAMES:
        return "neovim"
    if name in _TERMINAL_NAMES or name.startswith(_ACP_PREFIX):
        return "terminal"  # the ACP agent (`acp-<its client>`) takes the terminal's flags
    return "generic"


def snake_case(key: str) -> str:
    """Return `model.baseUrl` as `model.base_url` (the Neovim plugin's setup keys)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), key)


@dataclass(frozen=True)
class OptionNames:
    """The user's names for options: given by the client, else its style's, else the path."""

    style: ClientStyle = "generic"
    given: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, key: str) -> str:
        """Return what the user calls the option at `key` (`model.baseUrl`)."""
        if key in self.given:
            return self.given[key]
        if self.style == "vscode":
            return f"agentAssist.{key}"
        if self.style == "neovim":
            return snake_case(key)
        if self.style == "terminal":
            return TERMINAL_FLAGS.get(key) or next(iter(env_vars().get(key, ())), key)
        return key


def parse_option_names(raw: object, client_name: str | None, warnings: list[str]) -> OptionNames:
    """Parse `optionNames` ({option path: the user's name}); a bad entry is left out, said."""
    style = client_style(client_name)
    if raw is None:
        return OptionNames(style)
    if not isinstance(raw, Mapping):
        warnings.append("optionNames must be an object {option path: name}; ignored")
        return OptionNames(style)
    given: dict[str, str] = {}
    for key, name in raw.items():
        if (
            key in option_paths()
            and isinstance(name, str)
            and name.strip()
            and len(name) <= MAX_NAME
            and name.isprintable()
        ):
            given[key] = name.strip()
        else:
            warnings.append(
                f"optionNames {key!r}: {name!r} is invalid (a path and a name); ignored"
            )
    return OptionNames(style, given)


def how_to_configure_model(names: OptionNames) -> str:
    """Say how to configure a model, in the words of the user's client."""
    if names.style == "generic" and not names.given:
        return HOW_TO_CONFIGURE_MODEL
    key = (
        "the key with the command Agent Assist: Set API Key"
        if names.style == "vscode"
        else "the key in AGENT_ASSIST_LLM_API_KEY"
    )
    return (
        f"No model is configured: set {names('model.name')} and {names('model.baseUrl')} "
        f"({key}), or the server's environment: AGENT_ASSIST_LLM_MODEL_NAME, "
        "AGENT_ASSIST_LLM_BASE_URL and AGENT_ASSIST_LLM_API_KEY."
    )
