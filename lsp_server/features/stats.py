"""agentAssist/stats: telemetry summed from the project's logs (being built: #42)."""

from __future__ import annotations

from .base import Feature


class Stats(Feature):
    """See the module."""

    name = "stats"
