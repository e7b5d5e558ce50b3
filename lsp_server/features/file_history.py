"""agentAssist/fileHistory, fileVersion, restoreFile: a file's timeline (being built: #42)."""

from __future__ import annotations

from .base import Feature


class FileHistory(Feature):
    """See the module."""

    name = "file_history"
