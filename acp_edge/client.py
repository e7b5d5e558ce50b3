"""What the agent asks of the client: session updates, and the user's yes for an edit."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp.connection import Connection
from acp.meta import CLIENT_METHODS
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    ToolCallUpdate,
)
from acp.utils import notify_model, request_model

logger = logging.getLogger(__name__)

ALLOW = "allow"
REJECT = "reject"
PERMISSION_OPTIONS = (
    PermissionOption(option_id=ALLOW, name="Allow", kind="allow_once"),
    PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
)


class ClientLink:
    """The client's side of the connection, as the agent calls it."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    async def update(self, session_id: str, update: Any) -> None:
        """Send one `session/update`."""
        await notify_model(
            self.connection,
            CLIENT_METHODS["session_update"],
            SessionNotification(session_id=session_id, update=update),
        )

    async def allowed(self, session_id: str, call_id: str, title: str) -> bool:
        """Ask the user about a tool call; True only for an explicit allow."""
        request = RequestPermissionRequest(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id=call_id, title=title, kind="edit"),
            options=list(PERMISSION_OPTIONS),
        )
        try:
            answer = await request_model(
                self.connection,
                CLIENT_METHODS["session_request_permission"],
                request,
                RequestPermissionResponse,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the client could not ask: no is the only safe answer
            logger.warning("permission request failed: %s", exc)
            return False
        outcome = answer.outcome
        return isinstance(outcome, AllowedOutcome) and outcome.option_id == ALLOW
