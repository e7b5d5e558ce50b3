"""`$/progress` for one piece of long work: the LSP edge's `Host.long_work`."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from .server import AgentAssistServer

logger = logging.getLogger(__name__)


class Progress:
    """`$/progress` for one piece of long work (a no-op if the client cannot show it)."""

    def __init__(self, ls: AgentAssistServer, token: str | None) -> None:
        self.ls = ls
        self.token = token

    def report(self, message: str, percentage: int | None = None) -> None:
        """Report a step."""
        if self.token is not None:
            self.ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
            )


@asynccontextmanager
async def progress(ls: AgentAssistServer, title: str) -> AsyncIterator[Progress]:
    """Show progress for the duration of the block, with a fresh token."""
    window = ls.client_capabilities.window
    token: str | None = None
    if window is not None and window.work_done_progress:
        token = str(uuid.uuid4())
        try:
            await ls.work_done_progress.create_async(token)
            ls.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title=title, percentage=0)
            )
        except Exception as exc:
            logger.info("progress not shown: %s", exc)
            token = None
    try:
        yield Progress(ls, token)
    finally:
        if token is not None:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))
