"""The answer to `initialize`, declared once as JSON: sent before the SDK is even imported.

Importing the SDK costs ~0.55 s (its generated schema builds its pydantic models at import),
so the process answers the first `initialize` from here while a thread imports the rest;
`AcpAgent.initialize` answers any later one from the same declaration.
"""

from __future__ import annotations

from typing import Any

from . import __version__

PROTOCOL_VERSION = 1  # the one we speak: the answer whatever the client asked


def initialize_result() -> dict[str, Any]:
    """Return the result of `initialize` (ACP's `InitializeResponse`, as JSON)."""
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
        "authMethods": [],
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
