"""`$/progress`, the one helper: a token begun, reported and ended; `Host.long_work` over it.

A chat's reply and a model's thinking (`features/sink.py`) and long work (compaction, the
search index rebuilt) all show their progress through `Progress`, on any pygls server.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

logger = logging.getLogger(__name__)


def can_show(ls: LanguageServer) -> bool:
    """Return whether the client can show `$/progress` (`window.workDoneProgress`)."""
    window = ls.client_capabilities.window
    return window is not None and bool(window.work_done_progress)


class Progress:
    """`$/progress` on one token, ended once (a no-op without a token)."""

    def __init__(self, ls: LanguageServer, token: int | str | None) -> None:
        self.ls = ls
        self.token = token
        self.ended = False

    @classmethod
    async def create(cls, ls: LanguageServer) -> Progress:
        """Return progress on a fresh token the client accepted (a no-op if it cannot)."""
        if not can_show(ls):
            return cls(ls, None)
        token = str(uuid.uuid4())
        try:
            await ls.work_done_progress.create_async(token)
        except Exception as exc:  # the work goes on without it
            logger.warning("the client refused a progress token: %s", exc)
            return cls(ls, None)
        return cls(ls, token)

    def begin(
        self,
        title: str,
        *,
        message: str | None = None,
        percentage: int | None = None,
        cancellable: bool | None = None,
    ) -> None:
        """Send the begin report."""
        if self.token is not None:
            value = types.WorkDoneProgressBegin(
                title=title, message=message, percentage=percentage, cancellable=cancellable
            )
            self.ls.work_done_progress.begin(self.token, value)

    def report(self, message: str, percentage: int | None = None) -> None:
        """Report a step, unless the progress ended."""
        if self.token is not None and not self.ended:
            value = types.WorkDoneProgressReport(message=message, percentage=percentage)
            self.ls.work_done_progress.report(self.token, value)

    def end(self, message: str) -> None:
        """Send the end report (once)."""
        if self.ended:
            return
        self.ended = True
        if self.token is not None:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))


@asynccontextmanager
async def progress(ls: LanguageServer, title: str) -> AsyncIterator[Progress]:
    """Show progress for the duration of the block, with a fresh token."""
    bar = await Progress.create(ls)
    try:
        bar.begin(title, percentage=0)
    except Exception as exc:
        logger.info("progress not shown: %s", exc)
        bar = Progress(ls, None)
    try:
        yield bar
    finally:
        bar.end("done")
