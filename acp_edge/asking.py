"""A command's question to the user (`session/request_permission` with options of its own)."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Sequence
from typing import Any

from acp.meta import CLIENT_METHODS
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ToolCallUpdate,
    ToolKind,
)
from acp.utils import request_model

from .client import ClientLink

logger = logging.getLogger(__name__)

CANCEL = PermissionOption(option_id="reject", name="Cancel", kind="reject_once")


def option(option_id: str, name: str) -> PermissionOption:
    """Return a choice that goes ahead (`allow_once`)."""
    return PermissionOption(option_id=option_id, name=name, kind="allow_once")


async def choose(
    link: ClientLink,
    session_id: str,
    title: str,
    options: Sequence[PermissionOption],
    *,
    kind: ToolKind = "other",
    content: list[Any] | None = None,
) -> str | None:
    """Ask the user; return the option chosen, None for Cancel, a dismissal or no answer."""
    request = RequestPermissionRequest(
        session_id=session_id,
        tool_call=ToolCallUpdate(
            tool_call_id=f"command-{secrets.token_hex(4)}", title=title, kind=kind, content=content
        ),
        options=[*options, CANCEL],
    )
    try:
        answer = await request_model(
            link.connection,
            CLIENT_METHODS["session_request_permission"],
            request,
            RequestPermissionResponse,
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the client could not ask: nothing is done without a yes
        logger.warning("permission request failed: %s", exc)
        return None
    outcome = answer.outcome
    if not isinstance(outcome, AllowedOutcome):
        return None
    chosen = outcome.option_id
    return chosen if chosen in {o.option_id for o in options} else None
