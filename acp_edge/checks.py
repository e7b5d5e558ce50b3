"""What a request names, checked into our terms; a bad value is ACP's invalid params."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import RequestError

from session.paths import is_valid_session_id

INVALID_PARAMS = -32602
FAILED = -32603  # the request was understood and could not be done: the message says why


def invalid(message: str, **data: object) -> RequestError:
    """Return an invalid-params error whose message says what is wrong."""
    return RequestError(INVALID_PARAMS, message, data or None)


def failed(message: str) -> RequestError:
    """Return the error of a request that could not be done (a session in use, a failed turn)."""
    return RequestError(FAILED, message)


def project_dir(cwd: object) -> Path:
    """Return the project directory `cwd` names: absolute, existing, a directory."""
    if not isinstance(cwd, str) or not cwd.strip():
        raise invalid("cwd must be an absolute path", cwd=cwd)
    path = Path(cwd)
    if not path.is_absolute():
        raise invalid(f"cwd {cwd!r} is not an absolute path", cwd=cwd)
    if not path.is_dir():
        raise invalid(f"cwd {cwd!r} is not a directory", cwd=cwd)
    return path.resolve()


def session_id(value: object) -> str:
    """Return `value` if it is one of our session ids (12 hex digits)."""
    if not is_valid_session_id(value):
        raise invalid(
            f"{value!r} is not an agent-assist session id (12 hex digits)", sessionId=value
        )
    assert isinstance(value, str)
    return value


def prompt_text(blocks: list[Any]) -> str:
    """Return a prompt's content as the text of one user message.

    Text as it is; a resource link as the file it names; an embedded resource's text
    after the file it comes from (the editor's text, unsaved changes and all).
    """
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"[{block.name}]({block.uri})")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                parts.append(f"\n<file uri={resource.uri!r}>\n{text}\n</file>\n")
            else:
                parts.append(f"[binary resource {resource.uri}: not read]")
        else:
            raise invalid(f"content of type {kind!r} is not supported (text and resources are)")
    text = "".join(parts).strip("\n")
    if not text.strip():
        raise invalid("the prompt is empty")
    return text


def mcp_servers(servers: list[Any] | None) -> tuple[Any, ...]:
    """Return the client's MCP servers as the engine's specs (invalid params if one is bad)."""
    from engine.model.mcp import parse_mcp_servers

    raw = [s.model_dump(mode="json", by_alias=True, exclude_none=True) for s in servers or []]
    try:
        return parse_mcp_servers(raw)
    except ValueError as exc:
        raise invalid(f"mcpServers: {exc}") from None
