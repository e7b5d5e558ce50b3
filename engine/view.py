"""The engine as its parts (summaries, model server, compaction, attempts, turns) see it.

`core.Engine`, which makes the parts, is one. Each part names what it reads of the engine:
`EngineView`, or a protocol of its own that adds to it, so none imports `core`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from session.lifecycle import SessionLifecycle

    from .config import ServerConfig
    from .host import Host
    from .model.runner import ChatRunner


class EngineView(Protocol):
    """One session's options, edge, model runner and lifecycle."""

    config: ServerConfig  # replaced when the model's window is learned or lowered
    host: Host

    @property
    def runner(self) -> ChatRunner | None:
        """Return the model runner (None before the options are taken)."""
        ...

    @property
    def lifecycle(self) -> SessionLifecycle:
        """Return the session's lifecycle (`UserError` before the store is open)."""
        ...
