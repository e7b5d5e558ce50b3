"""The `mcpServers` map as other assistants write it, read into specs (`engine.mcp_config`)."""

from __future__ import annotations

from pathlib import Path

from engine.config import parse_initialization_options
from engine.mcp_config import command_line, specs_from_map


def test_the_shapes_of_claude_code_cursor_and_vs_code_are_read(tmp_path: Path) -> None:
    raw = {
        "local": {
            "type": "stdio",
            "command": "node",
            "args": ["${workspaceFolder}/server.js"],
            "env": {"TOKEN": "t"},
            "cwd": "tools",
            "confirm": ["delete"],
            "timeout": 5,
        },
        "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
        "stream": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"},
        "events": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        "off": {"command": "nothing", "disabled": True},
    }
    specs, warnings = specs_from_map(raw, "mcpServers", tmp_path)
    assert warnings == []
    by_name = {s.name: s for s in specs}
    assert sorted(by_name) == ["events", "local", "remote", "stream"]
    local = by_name["local"]
    assert local.args == (f"{tmp_path}/server.js",) and local.cwd == str(tmp_path / "tools")
    assert local.needs_confirm("delete") and not local.needs_confirm("read")
    assert local.timeout == 5 and dict(local.env) == {"TOKEN": "t"}
    assert "TOKEN=t node" in command_line(local)
    assert [by_name[n].transport for n in ("remote", "stream", "events")] == ["http", "http", "sse"]


def test_a_bad_server_is_left_out_with_a_warning_naming_it(tmp_path: Path) -> None:
    raw = {"ok": {"command": "x"}, "noargs": {"command": "x", "args": "a b"}, "odd": 3}
    specs, warnings = specs_from_map(raw, "mcpServers", tmp_path)
    assert [s.name for s in specs] == ["ok"]
    assert any("'noargs'" in w and "args" in w for w in warnings)
    assert any("'odd'" in w for w in warnings)
    _, said = parse_initialization_options({"mcpServers": ["not", "a", "map"]}, "t", {})
    assert any("mcpServers must be an object" in w for w in said)
