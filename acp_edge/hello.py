"""The answer to `initialize`, declared once as JSON: sent before the SDK is even imported.

Importing the SDK costs ~0.55 s (its generated schema builds its pydantic models at import),
so the process answers the first `initialize` from here while a thread imports the rest;
`AcpAgent.initialize` answers any later one from the same declaration.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from . import __version__

PROTOCOL_VERSION = 1  # the one we speak: the answer whatever the client asked
API_KEY_METHOD = "api-key-in-environment"
KEY_VARIABLE = "AGENT_ASSIST_LLM_API_KEY"
# Where the engine's options read the key and the server (`engine.options`; a test checks
# that both agree): the engine itself is not imported before the first answer.
KEY_NAMES = (KEY_VARIABLE, "OPENAI_API_KEY")
BASE_URL_NAMES = ("AGENT_ASSIST_LLM_BASE_URL", "OPENAI_BASE_URL")
KEY_ADVICE = (
    f"agent-assist reads the model server's API key from {KEY_VARIABLE} in its environment: "
    "set it in the agent's environment in your editor's configuration (Zed: the agent "
    'server\'s "env") and restart the agent. It cannot be given over ACP.'
)


def _setting(
    options: Mapping[str, Any], key: str, env: Mapping[str, str], names: tuple[str, ...]
) -> str | None:
    model = options.get("model")
    given = model.get(key) if isinstance(model, Mapping) else None
    for value in (given, *(env.get(name) for name in names)):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def is_local(base_url: str | None) -> bool:
    """Return True for a model server on this machine (127.0.0.1, localhost, ::1)."""
    host = urlsplit(base_url).hostname if base_url else None
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def needs_key(options: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """Return True when no API key is configured for a model server that is not local."""
    if _setting(options, "apiKey", env, KEY_NAMES) is not None:
        return False
    return not is_local(_setting(options, "baseUrl", env, BASE_URL_NAMES))


def auth_methods(options: Mapping[str, Any], env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Return the authentication methods: the key's advice, only when a key is missing."""
    if not needs_key(options, env):
        return []
    return [{"id": API_KEY_METHOD, "name": f"Set {KEY_VARIABLE}", "description": KEY_ADVICE}]


def initialize_result(
    options: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Return the result of `initialize` (ACP's `InitializeResponse`, as JSON).

    Without `options` and `env`, as if a key were configured: no authentication method.
    """
    methods = auth_methods(options, env) if options is not None and env is not None else []
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {
                "list": {},
                "resume": {},
                "close": {},
                "delete": {},
                "fork": {},
            },
        },
        "agentInfo": {"name": "agent-assist", "title": "agent-assist", "version": __version__},
        "authMethods": methods,
    }


def is_initialize(message: dict[str, Any]) -> bool:
    """Return True for an `initialize` request this module can answer (well-formed params)."""
    params = message.get("params")
    return (
        message.get("method") == "initialize"
        and "id" in message
        and isinstance(params, dict)
        and type(params.get("protocolVersion")) is int
    )


def client_name(params: dict[str, Any]) -> str | None:
    """Return the `clientInfo.name` of `initialize` params, if they have one."""
    info = params.get("clientInfo")
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) and name.strip() else None
