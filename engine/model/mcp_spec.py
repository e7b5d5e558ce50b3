"""One MCP server's spec: how to reach it, checked, and read from the JSON a client gives.

`mcp.McpServers` runs the servers these describe; `mcp_toolset` offers one server's tools.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Transport = Literal["stdio", "http", "sse"]
TRANSPORTS: tuple[Transport, ...] = ("stdio", "http", "sse")
DEFAULT_TIMEOUT = 60.0  # seconds one tool call, or a server's start, may take
_NOT_IN_A_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True)
class McpServerSpec:
    """One MCP server: how to reach it, how long a call may take, which calls to ask about.

    `confirm` asks the user before every call of the server's tools; `confirm_tools` before
    the calls of the tools it names (unprefixed). Invalid values raise `ValueError`.
    """

    name: str
    transport: Transport = "stdio"
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None  # of a stdio server (None: ours)
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT  # of one call
    start_timeout: float = DEFAULT_TIMEOUT  # of the start (a stdio server: `npx` may fetch it)
    confirm: bool = False
    confirm_tools: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        """Check the spec (see the class doc)."""
        if not self.name.strip():
            raise ValueError("an MCP server needs a name")
        if not self.prefix.strip("_-"):
            raise ValueError(f"MCP server {self.name!r}: its name needs a letter or a digit")
        if self.transport not in TRANSPORTS:
            raise ValueError(
                f"MCP server {self.name!r}: transport {self.transport!r} is not one of "
                f"{', '.join(TRANSPORTS)}"
            )
        if self.transport == "stdio" and not self.command.strip():
            raise ValueError(f"MCP server {self.name!r}: a stdio server needs a command")
        if self.transport != "stdio" and not self.url.startswith(("http://", "https://")):
            raise ValueError(
                f"MCP server {self.name!r}: url {self.url!r} must start with http:// or https://"
            )
        if not (self.timeout > 0 and self.start_timeout > 0):
            raise ValueError(f"MCP server {self.name!r}: a timeout must be more than 0 seconds")

    @property
    def prefix(self) -> str:
        """Return what the server's tool names start with (`<prefix>_<tool>`)."""
        return _NOT_IN_A_TOOL_NAME.sub("_", self.name.strip())

    def needs_confirm(self, tool: str) -> bool:
        """Return True if a call of `tool` (unprefixed) is asked about first."""
        return self.confirm or tool in self.confirm_tools


def checked_specs(specs: Iterable[McpServerSpec]) -> tuple[McpServerSpec, ...]:
    """Return `specs` as a tuple; `ValueError` if two servers' tool names would share a prefix."""
    out = tuple(specs)
    seen: dict[str, int] = {}  # lower-cased prefix -> the index of its server
    for index, spec in enumerate(out):
        other = out[seen.setdefault(spec.prefix.lower(), index)].name
        if seen[spec.prefix.lower()] == index:
            continue
        if other == spec.name:
            raise ValueError(f"two MCP servers are named {spec.name!r}")
        raise ValueError(
            f"MCP servers {other!r} and {spec.name!r} would name their tools alike "
            f"({spec.prefix}_...): rename one"
        )
    return out


def _pairs(value: Any, what: str, server: str) -> dict[str, str]:
    """Read `[{name, value}]` (ACP's shape) or `{name: value}` into a dict of strings."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
        items = [(v.get("name"), v.get("value")) for v in value]
    else:
        raise ValueError(f"MCP server {server!r}: {what} must be a list of {{name, value}}")
    if not all(isinstance(k, str) and k and isinstance(v, str) for k, v in items):
        raise ValueError(f"MCP server {server!r}: each of its {what} needs a name and a value")
    return dict(items)


def spec_from_json(raw: Any) -> McpServerSpec:
    """Read one server as JSON gives it (ACP's stdio, http and sse shapes); `ValueError` if bad.

    stdio: `{name, command, args, env: [{name, value}]}`; http/sse: `{type, name, url,
    headers: [{name, value}]}`. `env` and `headers` may also be plain objects. Our own
    additions, all optional: `timeout` and `startTimeout` (seconds), `confirm` (true, or a
    list of tool names).
    """
    if not isinstance(raw, Mapping):
        raise ValueError("an MCP server must be an object")
    name = raw.get("name")
    if not isinstance(name, str):
        raise ValueError("an MCP server needs a name")
    kind = raw.get("type", "stdio" if "command" in raw else "http")
    args = raw.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"MCP server {name!r}: args must be a list of strings")
    for key in ("command", "url", "cwd"):
        if raw.get(key) is not None and not isinstance(raw.get(key), str):
            raise ValueError(f"MCP server {name!r}: {key} must be a string")
    timeouts = [raw.get(key, DEFAULT_TIMEOUT) for key in ("timeout", "startTimeout")]
    if any(isinstance(t, bool) or not isinstance(t, int | float) for t in timeouts):
        raise ValueError(f"MCP server {name!r}: a timeout must be a number of seconds")
    confirm = raw.get("confirm", False)
    if not isinstance(confirm, bool) and not (
        isinstance(confirm, list) and all(isinstance(t, str) for t in confirm)
    ):
        raise ValueError(f"MCP server {name!r}: confirm must be true, false or a list of tools")
    return McpServerSpec(
        name=name,
        transport=kind,
        command=raw.get("command") or "",
        args=tuple(args),
        env=_pairs(raw.get("env"), "env", name),
        cwd=raw.get("cwd"),
        url=raw.get("url") or "",
        headers=_pairs(raw.get("headers"), "headers", name),
        timeout=float(timeouts[0]),
        start_timeout=float(timeouts[1]),
        confirm=confirm is True,
        confirm_tools=frozenset(confirm) if isinstance(confirm, list) else frozenset(),
    )


def parse_mcp_servers(raw: Any) -> tuple[McpServerSpec, ...]:
    """Read a JSON list of servers (`spec_from_json`) and check their names together."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError("mcpServers must be a list")
    return checked_specs(spec_from_json(item) for item in raw)
