"""What llama.cpp's llama-server says of itself at `GET /props`: tools, and the window.

llama-server renders a request through the model's chat template. A template with no tools
(SmolLM2, Gemma 2, many older or small models) drops them without an error: the request
succeeds, the model never hears of a tool, and answers that it cannot read files. The
server says so only in `/props`, as `chat_template_caps.supports_tools`. The same answer
holds a slot's context size (`default_generation_settings.n_ctx`: `-c` divided among the
`-np` slots), the window a prompt must fit, otherwise learned only from a refused prompt.
llama-server calls itself `llama.cpp` in its `Server` header, which the HTTP transport
keeps (`ServerQuirks.server`); no other server is asked for `/props`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import httpx2

logger = logging.getLogger(__name__)

LLAMA_SERVER = "llama.cpp"  # llama-server's `Server` header
PROPS_TIMEOUT = 5.0


@dataclass(frozen=True)
class ServerProps:
    """What `/props` said (None: it did not say, or could not be read)."""

    takes_tools: bool | None = None
    window: int | None = None  # tokens of one slot's context


def props_url(base_url: str) -> str:
    """Return llama-server's `/props` for an OpenAI base URL (`…/v1` or the root)."""
    root = base_url.rstrip("/")
    return f"{root.removesuffix('/v1')}/props"


async def read_props(base_url: str, api_key: str | None) -> ServerProps:
    """Return what llama-server's `/props` says of its template's tools and its window."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx2.AsyncClient(timeout=PROPS_TIMEOUT) as client:
            response = await client.get(props_url(base_url), headers=headers)
        body = response.json() if response.status_code == 200 else None
    except (httpx2.HTTPError, ValueError) as exc:
        logger.debug("llama-server's /props not read: %s", exc)
        return ServerProps()
    if not isinstance(body, dict):
        return ServerProps()
    takes = _field(body, "chat_template_caps", "supports_tools")
    window = _field(body, "default_generation_settings", "n_ctx")
    return ServerProps(
        takes_tools=takes if isinstance(takes, bool) else None,
        window=window if isinstance(window, int) and not isinstance(window, bool) else None,
    )


def _field(body: dict[str, Any], section: str, name: str) -> object:
    part = body.get(section)
    return part.get(name) if isinstance(part, dict) else None
