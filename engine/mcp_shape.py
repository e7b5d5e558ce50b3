"""An `mcpServers` map read by its declaration: its shape, then each server (`McpServerOptions`).

The editor's settings (`config`) and the project's file (`mcp_config`) are read alike: a
server that is not an object, or whose fields its declaration refuses, is left out with a
warning naming it and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from .options import McpServerOptions


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


def read_server(name: str, entry: Mapping[str, Any]) -> McpServerOptions:
    """Return one server as declared (no type coerced); `ValueError` naming what is wrong."""
    try:
        return McpServerOptions.model_validate(entry, strict=True)
    except ValidationError as exc:
        said: dict[str, list[str]] = {}  # what each field must be, by where it is
        for error in exc.errors():
            what = error["msg"].removeprefix("Input should be ")
            musts = said.setdefault(_path(error["loc"], entry), [])
            musts += [] if what in musts else [what]
        problems = "; ".join(f"{at} must be {' or '.join(w)}" for at, w in said.items())
        raise ValueError(f"MCP server {name!r}: {problems}") from None


def valid_servers(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, McpServerOptions]:
    """Return the servers their declaration takes (`mcp_config` warns about the others)."""
    servers: dict[str, McpServerOptions] = {}
    for name, entry in entries.items():
        try:
            servers[name] = read_server(name, entry)
        except ValueError:
            continue
    return servers


def _path(loc: tuple[int | str, ...], entry: Mapping[str, Any]) -> str:
    """Return where in `entry` an error is (`env.TOKEN`, `args[1]`); a union's branch is not."""
    path, at = "", entry
    for part in loc:
        if isinstance(at, Mapping) and isinstance(part, str) and part in at:
            path, at = f"{path}.{part}" if path else part, at[part]
        elif isinstance(at, list) and isinstance(part, int) and part < len(at):
            path, at = f"{path}[{part}]", at[part]
    return path or "the server"
