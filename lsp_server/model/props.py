"""Whether llama.cpp's llama-server gives the model the tools: its chat template says.

llama-server renders a request through the model's chat template. A template with no tools
(SmolLM2, Gemma 2, many older or small models) drops them without an error: the request
succeeds, the model never hears of a tool, and answers that it cannot read files. The
server says so only in `GET /props`, as `chat_template_caps.supports_tools`. It calls
itself `llama.cpp` in its `Server` header, which the HTTP transport keeps
(`ServerQuirks.server`); so no other server is asked for `/props`.
"""

from __future__ import annotations

import logging

import httpx2

logger = logging.getLogger(__name__)

LLAMA_SERVER = "llama.cpp"  # llama-server's `Server` header
PROPS_TIMEOUT = 5.0


def props_url(base_url: str) -> str:
    """Return llama-server's `/props` for an OpenAI base URL (`…/v1` or the root)."""
    root = base_url.rstrip("/")
    return f"{root.removesuffix('/v1')}/props"


async def template_takes_tools(base_url: str, api_key: str | None) -> bool | None:
    """Return what llama-server's `/props` says of its chat template's tools (None: unknown)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx2.AsyncClient(timeout=PROPS_TIMEOUT) as client:
            response = await client.get(props_url(base_url), headers=headers)
        if response.status_code != 200:
            return None
        caps = response.json().get("chat_template_caps")
    except (httpx2.HTTPError, ValueError, AttributeError) as exc:
        logger.debug("llama-server's /props not read: %s", exc)
        return None
    takes = caps.get("supports_tools") if isinstance(caps, dict) else None
    return takes if isinstance(takes, bool) else None
