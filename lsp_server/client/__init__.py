"""The LSP client the terminal chat and the demo use to drive `agent-assist serve`.

`connection.py` runs the server process and the JSON-RPC conversation, `editor.py` answers
the requests the server sends to its editor, `workspace_edit.py` applies workspace edits to
files on disk, `errors.py` says what went wrong.
"""

from .connection import LOG_MESSAGE, PROGRESS, SHOW_MESSAGE, LspClient, PendingRequest
from .errors import LspError, ServerExitedError
from .workspace_edit import (
    PlannedWrite,
    WorkspaceEditor,
    apply_text_edits,
    path_to_uri,
    uri_to_path,
)

__all__ = [
    "LOG_MESSAGE",
    "PROGRESS",
    "SHOW_MESSAGE",
    "LspClient",
    "LspError",
    "PendingRequest",
    "PlannedWrite",
    "ServerExitedError",
    "WorkspaceEditor",
    "apply_text_edits",
    "path_to_uri",
    "uri_to_path",
]
