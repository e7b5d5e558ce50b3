"""The server's features, installed in this order (a feature's `needs` come before it)."""

from __future__ import annotations

from ..server import AgentAssistServer
from .base import Feature, install
from .chat import Chat
from .file_history import FileHistory
from .history import History
from .inspect import Inspect
from .lifecycle import Lifecycle
from .mcp import McpTools
from .session_commands import SessionCommands
from .settings import LiveSettings
from .stats import Stats
from .store_watch import StoreWatch
from .workspace_watch import WorkspaceWatch

FEATURES: list[type[Feature]] = [
    McpTools,
    Lifecycle,
    LiveSettings,
    History,
    Chat,
    SessionCommands,
    WorkspaceWatch,
    StoreWatch,
    Inspect,
    FileHistory,
    Stats,
]


def setup_features(server: AgentAssistServer) -> None:
    """Install every feature; one that fails to set up is logged and skipped."""
    install(server, FEATURES)
