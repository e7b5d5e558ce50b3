"""What a model server says of itself, asked once per model and base URL: window and tools.

Asked in the background after `initialize` (never in its way), with short timeouts; the
first turn waits for the answer a few seconds at most, so that it is sent within the real
window and with the tools the server really takes:

- `GET /v1/models`: the models the server serves (offered to choose from, e.g. as ACP's
  model option); the model's entry may state its window (vLLM `max_model_len`;
  OpenRouter, LM Studio, Groq and gateways `context_length`, `max_context_length` or
  `context_window`; llama-server `meta.n_ctx_train`, the window it was trained with). The
  `Server` header and the entry say which server it is: llama.cpp's llama-server says
  `llama.cpp`; llama-cpp-python lists models `owned_by: "me"` with `permissions`.
- llama-server: `GET /props` (`props.py`) gives a slot's `n_ctx`, the window a prompt must
  fit, and whether the model's chat template takes tools.
- llama-cpp-python gives a model tools only with a function-calling chat format
  (`--chat_format chatml-function-calling`, `functionary-v2`); with the model's own chat
  template, its default, tools are dropped without an error (a call the model writes
  comes back as text). Which one it runs is asked with one tiny request: a forced tool
  choice (`"required"`, `max_tokens: 1`) fails the function-calling handlers' assertion
  (HTTP 500 with no message) before anything is generated, and is answered as plain chat
  otherwise; any other answer leaves the tools as they are.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

import httpx2

from .props import LLAMA_SERVER, props_url

logger = logging.getLogger(__name__)

FACTS_TIMEOUT = 3.0  # seconds for each GET: a server that is slower says nothing
PROBE_TIMEOUT = 30.0  # the probe waits for a one-slot server's slot, then reads ~20 tokens
# The fields of a `/v1/models` entry that state the model's window, best first.
WINDOW_FIELDS = ("max_model_len", "context_length", "max_context_length", "context_window")
LLAMA_CPP_PYTHON = "llama-cpp-python"
_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "list_files",
        "description": "List files.",
        "parameters": {"type": "object", "properties": {}},
    },
}


@dataclass(frozen=True)
class ServerFacts:
    """What the server said (None: it did not say, or could not be asked)."""

    kind: str = ""  # "llama-server", "llama-cpp-python", "vllm", or "" (another, or unknown)
    window: int | None = None
    window_source: str | None = None  # "/props" or "/v1/models"
    takes_tools: bool | None = None
    models: tuple[str, ...] = ()  # the ids `/v1/models` listed, in its order


def models_url(base_url: str) -> str:
    """Return the `/models` list beside an OpenAI base URL (`…/v1/models`)."""
    return f"{base_url.rstrip('/')}/models"


def _count(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def entry_window(entry: dict[str, Any]) -> int | None:
    """Return the window a `/v1/models` entry states, if it states one."""
    for name in WINDOW_FIELDS:
        if (window := _count(entry.get(name))) is not None:
            return window
    meta = entry.get("meta")
    return _count(meta.get("n_ctx_train")) if isinstance(meta, dict) else None


def model_ids(body: object) -> tuple[str, ...]:
    """Return the model ids a `/v1/models` answer lists (each once, in its order)."""
    data = body.get("data") if isinstance(body, dict) else None
    entries = data if isinstance(data, list) else []
    ids = (e.get("id") for e in entries if isinstance(e, dict))
    return tuple(dict.fromkeys(i for i in ids if isinstance(i, str) and i.strip()))


def model_entry(body: object, model: str | None) -> dict[str, Any] | None:
    """Return the entry of `model` in a `/v1/models` answer (or its only entry)."""
    data = body.get("data") if isinstance(body, dict) else None
    entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    named = [e for e in entries if e.get("id") == model]
    if named:
        return named[0]
    return entries[0] if len(entries) == 1 else None


def server_kind(header: str, entry: dict[str, Any] | None) -> str:
    """Return which server answered, from its `Server` header and its model entry."""
    if header == LLAMA_SERVER:
        return "llama-server"
    if entry is not None and entry.get("owned_by") == "me" and "permissions" in entry:
        return LLAMA_CPP_PYTHON
    if entry is not None and entry.get("owned_by") == "vllm":
        return "vllm"
    return ""


async def learn_server(
    base_url: str, api_key: str | None, model: str | None, *, probe_tools: bool
) -> ServerFacts:
    """Ask the server what it is, its window and (where it can be asked) its tools."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx2.AsyncClient(timeout=FACTS_TIMEOUT, headers=headers) as client:
        try:
            response = await client.get(models_url(base_url))
            body = response.json() if response.status_code == 200 else None
        except (httpx2.HTTPError, ValueError) as exc:
            logger.info("the model server's /models not read: %s", exc)
            return ServerFacts()
        entry = model_entry(body, model)
        kind = server_kind(response.headers.get("server", ""), entry)
        window = entry_window(entry) if entry is not None else None
        source = "/v1/models" if window else None
        facts = ServerFacts(kind, window, source, models=model_ids(body))
        if kind == "llama-server":
            return await _with_props(client, base_url, facts)
        if kind == LLAMA_CPP_PYTHON and probe_tools:
            return replace(facts, takes_tools=await _probe(client, base_url, model))
        return facts


async def _with_props(client: httpx2.AsyncClient, base_url: str, facts: ServerFacts) -> ServerFacts:
    """Add what llama-server's `/props` say: a slot's window, and its template's tools."""
    try:
        response = await client.get(props_url(base_url))
        body = response.json() if response.status_code == 200 else None
    except (httpx2.HTTPError, ValueError) as exc:
        logger.info("llama-server's /props not read: %s", exc)
        return facts
    if not isinstance(body, dict):
        return facts
    caps, settings = body.get("chat_template_caps"), body.get("default_generation_settings")
    takes = caps.get("supports_tools") if isinstance(caps, dict) else None
    n_ctx = _count(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return replace(
        facts,
        window=n_ctx or facts.window,
        window_source="/props" if n_ctx else facts.window_source,
        takes_tools=takes if isinstance(takes, bool) else None,
    )


async def _probe(client: httpx2.AsyncClient, base_url: str, model: str | None) -> bool | None:
    """Return whether llama-cpp-python's chat handler takes tools (see the module doc)."""
    request = {
        "model": model or "",
        "messages": [{"role": "user", "content": "Say OK."}],
        "tools": [_PROBE_TOOL],
        "tool_choice": "required",
        "max_tokens": 1,
        "stream": False,
    }
    url = f"{base_url.rstrip('/')}/chat/completions"
    try:
        response = await client.post(url, json=request, timeout=PROBE_TIMEOUT)
    except httpx2.HTTPError as exc:
        logger.info("llama-cpp-python's chat handler not asked: %s", exc)
        return None
    if response.status_code == 500:  # its handler raised: a bare assertion says nothing
        return True if not _error_text(response) else None  # a function-calling handler's
    if response.status_code == 200:
        return False  # plain chat: the model's own template, tools dropped
    return None


def _error_text(response: httpx2.Response) -> str:
    """Return the `error.message` of an error answer ("" if it has none)."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message.strip() if isinstance(message, str) else ""
