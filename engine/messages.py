"""What the engine says to the user: why a turn failed, why a reply stopped short.

Each message names the option to change as the user set it (`ServerConfig.option`: the
editor's setting, the terminal's flag, the environment variable).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Protocol

from session.redaction import url_without_userinfo

from .model.faults import ModelFault

if TYPE_CHECKING:
    from .config import ServerConfig


class Configured(Protocol):
    """What a message reads of the engine: its options, to name one as the user set it."""

    @property
    def config(self) -> ServerConfig:
        """Return the options."""
        ...


CUT_ANSWERS = {  # an answer the server stopped short, said (it is kept as it came)
    "length": "The reply stopped at the model server's limit on an answer's length: ask it to "
    "go on, or raise the limit (Ollama: num_predict; llama-server: --n-predict; here: {option}).",
    "content_filter": "The model provider's content filter stopped the reply short.",
}


def cut_answer(ls: Configured, reason: str) -> str:
    """Say why an answer stopped short: our `maxOutputTokens`, or the server's own limit."""
    limit = ls.config.model.max_output_tokens
    option = ls.config.option("model.maxOutputTokens")
    if reason == "length" and limit is not None:
        return (
            f"The reply stopped at {option} ({limit:,} tokens): ask the model to go on, "
            "or raise it."
        )
    return CUT_ANSWERS[reason].format(option=option)


WITHOUT_TOOLS = (
    "Chatting without them: the assistant cannot read or write workspace files, record "
    "decisions or set the phase."
)
NO_TOOLS_WARNING = (
    f"The model server takes no tools for this model ({{detail}}). {WITHOUT_TOOLS} For "
    'tools, pick a model that has them (Ollama lists them as "tools"), or start llama-server '
    "with --jinja, or vLLM with --enable-auto-tool-choice and --tool-call-parser."
)
TEMPLATE_WARNING = (
    "llama-server gives this model no tools: the model's chat template has none (its /props "
    f"say supports_tools: false), so they were dropped without an error. {WITHOUT_TOOLS} For "
    "tools, pick a model whose template has them, or start llama-server with "
    "--chat-template-file and a template that does (llama.cpp's models/templates)."
)
RAISE_LENGTH = (
    "raise the server's context length (Ollama: OLLAMA_CONTEXT_LENGTH, or PARAMETER num_ctx "
    "in a Modelfile) and set {window} to it"
)


def options_named(ls: Configured, text: str) -> str:
    """Return `text` with each `(model.x)` / `(tools.x)` it names as the user set it."""
    return OPTION_IN_TEXT.sub(lambda m: f"({ls.config.option(m.group(1))})", text)


OPTION_IN_TEXT = re.compile(r"\(((?:model|tools)\.[A-Za-z]+)\)")


def capitalized(text: str) -> str:
    """Return `text` with its first letter in upper case (a sentence of a message)."""
    return text[:1].upper() + text[1:]


def final_message(ls: Configured, fault: ModelFault, attempts: int, reads: int = 0) -> str:
    """Say why a turn failed, and what the user can do about it (`reads`: files read)."""
    window = ls.config.option("contextWindow")
    if fault.kind == "truncated":
        return (
            f"{capitalized(fault.message)}, even after compacting what could be. "
            f"{capitalized(RAISE_LENGTH.format(window=window))}, "
            f"or start a new session: a message this long does not fit {fault.window} tokens."
        )
    if fault.kind == "overflow" and reads:  # the turn's own reads filled the window
        return (
            f"The model refused the prompt as too long for its context window ({fault.detail})"
            f" after this turn's {reads} read{'s' * (reads != 1)} of files and directories. "
            f"The working window is {ls.config.context_window} tokens: ask about fewer "
            "files at a time, or give the model a larger window (the server's context size, "
            f"then {window})."
        )
    if fault.kind == "overflow":
        return (
            f"The model refused the prompt as too long for its context window ({fault.detail}),"
            f" even after compacting what could be. The working window is "
            f"{ls.config.context_window} tokens: set {window} to the model's real window, "
            "run /compact, or start a new session (a single message this long cannot be sent)."
        )
    if fault.kind == "runaway":
        return (
            f"{capitalized(fault.message)}, so the turn stopped. Ask again more precisely, or use "
            "a model better at calling tools; each call is in the transcript."
        )
    if fault.kind == "tool-misuse":
        last = f" (the last: {fault.detail})" if fault.detail else ""
        return (
            f"{capitalized(fault.message)}{last}, so the turn stopped. Ask again more precisely, "
            "or use a model better at calling tools; each call and its error is in the "
            "transcript."
        )
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if fault.kind == "unreachable":
        option = ls.config.option("model.baseUrl")
        if ls.config.model.base_url is None:
            return (
                f"{capitalized(fault.message)}{tries}: no base URL is set ({option}), so "
                "OpenAI's was asked; set it to your model server's (e.g. http://127.0.0.1:8080/v1)"
            )
        where = url_without_userinfo(ls.config.model.base_url)
        return (
            f"{capitalized(fault.message)}{tries}: is the server at {where} running, and is "
            f"{option} right?"
        )
    status = (
        f" (HTTP {fault.status})"
        if fault.status is not None and "HTTP" not in fault.message
        else ""
    )
    return options_named(ls, f"The model request failed{tries}{status}: {fault.message}")
