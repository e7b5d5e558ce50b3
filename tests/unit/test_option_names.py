"""Messages name an option as the user set it: a flag, a setting, a setup key, a variable."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from engine.config import parse_initialization_options
from engine.messages import cut_answer, final_message
from engine.model.faults import ModelFault
from engine.option_names import client_style, how_to_configure_model, snake_case

UNREACHABLE = ModelFault("unreachable", "could not connect to the model server (refused)", True)


def server(options: dict[str, Any], client: str | None, env: dict[str, str] | None = None) -> Any:
    config, warnings = parse_initialization_options(options, client, env or {})
    assert warnings == []
    return cast(Any, SimpleNamespace(config=config))


@pytest.mark.parametrize(
    ("client", "options", "env", "named"),
    [
        ("agent-assist-terminal", {"model": {"baseUrl": "http://h:1/v1"}}, {}, "--base-url"),
        (
            "agent-assist-terminal",
            {},
            {"AGENT_ASSIST_LLM_BASE_URL": "http://h:1/v1"},
            "AGENT_ASSIST_LLM_BASE_URL",
        ),
        (
            "Visual Studio Code",
            {"model": {"baseUrl": "http://h:1/v1"}},
            {},
            "agentAssist.model.baseUrl",
        ),
        ("Neovim", {"model": {"baseUrl": "http://h:1/v1"}}, {}, "model.base_url"),
        ("eglot", {"model": {"baseUrl": "http://h:1/v1"}}, {}, "model.baseUrl"),
        (
            "eglot",
            {"model": {"baseUrl": "http://h:1/v1"}, "optionNames": {"model.baseUrl": "my-url"}},
            {},
            "my-url",
        ),
        ("Neovim", {}, {"OPENAI_BASE_URL": "http://h:1/v1"}, "OPENAI_BASE_URL"),
        # `agent-assist acp` run by Zed: configured with the terminal's flags
        ("acp-Zed", {"model": {"baseUrl": "http://h:1/v1"}}, {}, "--base-url"),
    ],
)
def test_a_connection_error_names_the_option_the_user_set(
    client: str, options: dict[str, Any], env: dict[str, str], named: str
) -> None:
    message = final_message(server(options, client, env), UNREACHABLE, 3)
    assert message.endswith(f"is {named} right?"), message
    assert "http://h:1/v1" in message and "after 3 attempts" in message


def test_no_base_url_at_all_says_openai_was_asked() -> None:
    message = final_message(server({}, "agent-assist-terminal"), UNREACHABLE, 1)
    assert "no base URL is set (--base-url)" in message and "OpenAI's was asked" in message


def test_an_overflow_names_the_window_option_of_the_client() -> None:
    fault = ModelFault("overflow", "too long", False, detail="4096 tokens")
    ls = server({"contextWindow": 4096}, "Visual Studio Code")
    assert "set agentAssist.contextWindow to the model's real window" in final_message(ls, fault, 1)
    ls = server({"contextWindow": 4096}, "agent-assist-terminal")
    assert "set --context-window to" in final_message(ls, fault, 1)


def test_max_output_tokens_is_parsed_named_and_said_when_an_answer_stops_there() -> None:
    flag = {"model.maxOutputTokens": "--max-output-tokens"}  # as a client with the flag says
    ls = server({"model": {"maxOutputTokens": 256}, "optionNames": flag}, "agent-assist-terminal")
    assert ls.config.model.max_output_tokens == 256
    assert cut_answer(ls, "length") == (
        "The reply stopped at --max-output-tokens (256 tokens): ask the model to go on, "
        "or raise it."
    )
    env = {"AGENT_ASSIST_LLM_MAX_OUTPUT_TOKENS": "512"}
    ls = server({}, "Neovim", env)
    assert ls.config.model.max_output_tokens == 512
    assert "AGENT_ASSIST_LLM_MAX_OUTPUT_TOKENS (512 tokens)" in cut_answer(ls, "length")
    unset = server({}, "Neovim")
    assert unset.config.model.max_output_tokens is None
    assert "here: model.max_output_tokens" in cut_answer(unset, "length")
    terminal = server({}, "agent-assist-terminal")  # its flag, even when not given
    assert "here: --max-output-tokens" in cut_answer(terminal, "length")


@pytest.mark.parametrize("bad", [0, -1, "many", 2_000_000, 1.5, True])
def test_an_invalid_max_output_tokens_falls_back_to_the_servers_limit(bad: object) -> None:
    config, warnings = parse_initialization_options({"model": {"maxOutputTokens": bad}}, None, {})
    assert config.model.max_output_tokens is None
    assert [w for w in warnings if w.startswith("model.maxOutputTokens")]


def test_bad_option_names_are_left_out_with_a_warning() -> None:
    config, warnings = parse_initialization_options(
        {"optionNames": {"model.baseUrl": "--url", "bad key": "x", "contextWindow": 3}}, None, {}
    )
    assert config.option_names("model.baseUrl") == "--url"
    assert config.option_names("contextWindow") == "contextWindow"
    assert len(warnings) == 2
    config, warnings = parse_initialization_options({"optionNames": ["x"]}, None, {})
    assert warnings == ["optionNames must be an object {option path: name}; ignored"]


def test_known_clients_and_their_names() -> None:
    assert client_style("Visual Studio Code - Insiders") == "vscode"
    assert client_style("code-server") == client_style("VSCodium") == "vscode"
    assert client_style("vscode") == "vscode"  # vscode-languageclient without an appName
    assert client_style("Neovim") == "neovim"
    assert client_style("agent-assist-terminal") == "terminal"
    assert client_style(None) == client_style("emacs") == "generic"
    assert snake_case("tools.maxCallsPerTurn") == "tools.max_calls_per_turn"


def test_how_to_configure_a_model_in_the_clients_words() -> None:
    terminal = parse_initialization_options({}, "agent-assist-terminal", {})[0]
    assert "set --model and --base-url" in how_to_configure_model(terminal.option_names)
    vscode = parse_initialization_options({}, "Visual Studio Code", {})[0]
    said = how_to_configure_model(vscode.option_names)
    assert "agentAssist.model.name and agentAssist.model.baseUrl" in said
    assert "Set API Key" in said
    generic = parse_initialization_options({}, "eglot", {})[0]
    assert "initializationOptions.model" in how_to_configure_model(generic.option_names)


def test_the_window_source_says_whether_the_user_set_it() -> None:
    assert parse_initialization_options({}, None, {})[0].window_source == "default"
    assert parse_initialization_options({"contextWindow": 4096}, None, {})[0].window_source == (
        "setting"
    )
    assert parse_initialization_options({"contextWindow": 5}, None, {})[0].window_source == (
        "default"
    )
    as_text = parse_initialization_options({"contextWindow": "4096"}, None, {})[0]
    assert (as_text.context_window, as_text.window_source) == (4096, "setting")


def test_a_stall_names_the_timeout_as_the_client_calls_it() -> None:
    fault = ModelFault(
        "stall", "the model stopped sending: nothing for 60 s (model.streamTimeout)", True
    )
    said = final_message(server({}, "Visual Studio Code"), fault, 3)
    assert said.endswith("nothing for 60 s (agentAssist.model.streamTimeout)"), said
    said = final_message(server({}, "Neovim"), fault, 3)
    assert said.endswith("(model.stream_timeout)"), said
    assert final_message(server({}, "eglot"), fault, 3).endswith("(model.streamTimeout)")
    said = final_message(server({}, "agent-assist-terminal"), fault, 3)  # no flag: its variable
    assert said.endswith("(AGENT_ASSIST_LLM_STREAM_TIMEOUT)"), said
