"""What the agent asks of the client: session updates, the user's yes, its files."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Literal

from acp.connection import Connection
from acp.helpers import tool_diff_content
from acp.meta import CLIENT_METHODS
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    ReadTextFileRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    ToolCallUpdate,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from acp.utils import notify_model, request_model, request_optional_model

logger = logging.getLogger(__name__)

Answer = Literal["once", "always", "no"]

ONCE = PermissionOption(option_id="allow", name="Allow", kind="allow_once")
ALWAYS = PermissionOption(
    option_id="allow-always", name="Allow edits for this session", kind="allow_always"
)
REJECT = PermissionOption(option_id="reject", name="Reject", kind="reject_once")
ANSWERS: dict[str, Answer] = {"allow": "once", "allow-always": "always"}


@dataclass(frozen=True)
class ClientFiles:
    """What the client said of its files at `initialize` (`clientCapabilities.fs`)."""

    read: bool = False
    write: bool = False

    @classmethod
    def of(cls, params: object) -> ClientFiles:
        """Return the file capabilities in `initialize` params (raw JSON)."""
        caps = params.get("clientCapabilities") if isinstance(params, dict) else None
        fs = caps.get("fs") if isinstance(caps, dict) else None
        if not isinstance(fs, dict):
            return cls()
        return cls(read=fs.get("readTextFile") is True, write=fs.get("writeTextFile") is True)


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

    async def ask(
        self,
        session_id: str,
        call_id: str,
        title: str,
        diff: tuple[str, str, str | None] | None = None,
        *,
        always: bool = False,
        kind: Literal["edit", "execute"] = "edit",
    ) -> Answer:
        """Ask about an edit (`diff`: path, new, old text) or a call; "no" unless allowed.

        `call_id` names the tool call asked about: the live one the sink announced, or one
        of the agent's own for a question outside a call.
        """
        content = [tool_diff_content(*diff)] if diff is not None else None
        request = RequestPermissionRequest(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id=call_id, title=title, kind=kind, content=content),
            options=[ONCE, ALWAYS, REJECT] if always else [ONCE, REJECT],
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
            return "no"
        outcome = answer.outcome
        if not isinstance(outcome, AllowedOutcome):
            return "no"
        return ANSWERS.get(outcome.option_id, "no")

    async def read_file(self, session_id: str, path: str) -> str:
        """Read a file through the client (`fs/read_text_file`: its buffer, unsaved text too)."""
        answer = await request_model(
            self.connection,
            CLIENT_METHODS["fs_read_text_file"],
            ReadTextFileRequest(session_id=session_id, path=path),
            ReadTextFileResponse,
        )
        return answer.content

    async def write_file(self, session_id: str, path: str, content: str) -> None:
        """Write a file through the client (`fs/write_text_file`: its buffer, and disk)."""
        await request_optional_model(
            self.connection,
            CLIENT_METHODS["fs_write_text_file"],
            WriteTextFileRequest(session_id=session_id, path=path, content=content),
            WriteTextFileResponse,
        )
