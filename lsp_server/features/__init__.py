"""One module per feature, each with a `setup(server)`; wired in order by `FEATURES`."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..server import AgentAssistServer
from . import chat, history, lifecycle, session_commands, summaries, workspace_watch

logger = logging.getLogger(__name__)

FEATURES: list[tuple[str, Callable[[AgentAssistServer], None]]] = [
    ("lifecycle", lifecycle.setup),
    ("running summary", summaries.setup),
    ("chat", chat.setup),
    ("session commands", session_commands.setup),
    ("history", history.setup),
    ("workspace watch", workspace_watch.setup),
]


def setup_features(server: AgentAssistServer) -> None:
    """Register every feature; one that fails to set up is logged and skipped."""
    for name, setup in FEATURES:
        try:
            setup(server)
        except Exception:
            logger.exception("feature %r failed to set up; continuing without it", name)
