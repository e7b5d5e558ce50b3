"""agentAssist/inspect: any session's steps, read-only (being built: #42)."""

from __future__ import annotations

from .base import Feature


class Inspect(Feature):
    """See the module."""

    name = "inspect"
