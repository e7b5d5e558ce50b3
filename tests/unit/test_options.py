"""The options declared once (`engine.options`): the server's config is a view over them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.config import ServerConfig, parse_initialization_options
from engine.mcp_config import specs_from_map
from engine.mcp_shape import read_server
from engine.options import InitializationOptions, McpServerOptions, ModelOptions, ToolsOptions
from engine.options_reading import read_options
from lsp_server.protocol.generate import build_schema

GIVEN: dict[str, Any] = {
    "instanceId": "w1",
    "autoResume": "never",
    "model": {
        "name": "m",
        "baseUrl": "http://127.0.0.1:9/v1",
        "apiKey": "sk-x",
        "maxRetries": 5,
        "streamTimeout": 30,
        "firstTokenTimeout": 90,
        "maxReplyBytes": 100_000,
        "maxOutputTokens": 512,
    },
    "tools": {
        "protectedPaths": ["deploy/**"],
        "maxCallsPerResponse": 8,
        "maxCallsPerTurn": 20,
        "maxArgumentBytes": 4096,
    },
    "persistence": "metadata",
    "trackedFiles": ["spec.md"],
    "contextWindow": 32_000,
    "compactAt": 0.5,
    "store": "postgresql://h/db",
    "optionNames": {"model.baseUrl": "--url"},
    "mcpServers": {"docs": {"command": "docs-server", "env": {"T": "sk-y"}}, "bad": {"command": 5}},
    "driftMessages": False,
}


def test_every_option_is_on_the_config_under_its_name_as_read() -> None:
    config, warnings = parse_initialization_options(GIVEN, "t", {})
    read = read_options(InitializationOptions, GIVEN, {})
    assert warnings == [] and read.warnings == []
    assert isinstance(config, InitializationOptions)  # a new option needs no second declaration
    for group, view in (("model", config.model), ("tools", config.tools)):
        for name, value in read.values[group].items():
            assert getattr(view, name) == value, f"{group}.{name}"
    raw = ("model", "tools", "option_names", "mcp_servers")  # the groups, and the raw options
    for name in InitializationOptions.model_fields:
        assert hasattr(config, name), name
        if name not in raw:
            assert getattr(config, name) == read.values[name], name
    assert config.persistence == "metadata" and type(config.persistence) is str
    assert config.option_names("model.baseUrl") == "--url"
    assert list(config.mcp_servers) == ["docs"]  # the bad one is told where it is started
    assert config.mcp_servers["docs"].command == "docs-server"
    # what the server adds to the options
    assert (config.instance_derived, config.window_source, config.client) == (False, "setting", "t")
    assert config.with_window(16_000, "server").context_window == 16_000
    assert config.context_window == 32_000  # frozen: a copy was changed
    assert "sk-x" not in repr(config) and "sk-y" not in repr(config)
    assert "postgresql" not in repr(config)


def test_a_first_token_timeout_is_never_below_the_stream_timeout() -> None:
    config, _ = parse_initialization_options({"model": {"firstTokenTimeout": 5}}, "t", {})
    assert config.model.first_token_timeout == config.model.stream_timeout == 60


def test_every_option_may_be_null_on_the_wire_and_null_is_its_default() -> None:
    defs = build_schema()["$defs"]
    for model in (InitializationOptions, ModelOptions, ToolsOptions, McpServerOptions):
        for key, prop in defs[model.__name__]["properties"].items():
            assert {"type": "null"} in prop["anyOf"], f"{model.__name__}.{key}"
    nulls = {info.alias or name: None for name, info in InitializationOptions.model_fields.items()}
    config, warnings = parse_initialization_options(nulls, "t", {}, 7)
    assert warnings == []
    assert config.model_copy(update={"client": None}) == ServerConfig(
        instance_id="t-7",
        instance_derived=True,
        editor=config.editor,
        option_names=config.option_names,
    )


def test_an_mcp_server_is_read_by_its_declaration_strictly(tmp_path: Path) -> None:
    assert read_server("s", {"type": "streamable-http", "url": "http://h"}).type == "http"
    env = read_server("s", {"command": "x", "env": [{"name": "K", "value": "v"}]}).env
    assert env == {"K": "v"}  # ACP's pairs
    cases = {
        "5": {"command": "x", "timeout": "5"},  # a string is no number here
        "True": {"command": "x", "startTimeout": True},
        "list": {"command": "x", "confirm": "yes"},
        "token": {"command": "x", "env": {"TOKEN": ["sk-secret"]}},
    }
    specs, warnings = specs_from_map(cases, "mcpServers", tmp_path)
    assert specs == [] and len(warnings) == 4
    assert "MCP server '5': timeout must be a valid number" in warnings[0]
    assert "startTimeout" in warnings[1] and "confirm must be" in warnings[2]
    assert "env.TOKEN must be a valid string" in warnings[3] and "sk-secret" not in warnings[3]
