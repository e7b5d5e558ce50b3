"""The shape of an `mcpServers` map, checked where the options are parsed (`config`).

Each server's own fields are checked when it is read (`mcp_config.specs_from_map`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def server_entries(raw: object, where: str) -> tuple[dict[str, Mapping[str, Any]], list[str]]:
    """Return the map's servers that are objects, and a warning for each thing that is not."""
    if raw is None:
        return {}, []
    if not isinstance(raw, Mapping):
        return {}, [f"{where} must be an object {{name: {{command, args}} | {{url}}}}; ignored"]
    entries: dict[str, Mapping[str, Any]] = {}
    warnings: list[str] = []
    for name, entry in raw.items():
        if isinstance(entry, Mapping):
            entries[str(name)] = entry
        else:
            warnings.append(f"{where}: MCP server {name!r} must be an object; left out")
    return entries, warnings


def settings_warnings(raw: object) -> list[str]:
    """Return what is wrong with the shape of the editor's `mcpServers`."""
    return server_entries(raw, "mcpServers")[1]
