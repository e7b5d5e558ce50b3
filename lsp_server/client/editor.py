"""The editor's side: what this client can do, and its answers to the server's requests.

Questions go to an `Asker`, workspace edits to the files on disk; registrations and
progress tokens are acknowledged; configuration is empty.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .. import protocol as proto
from .errors import LspError
from .workspace_edit import PlannedWrite, WorkspaceEditor, refused_in_git

# Asks the user one of the server's questions: (message, action titles) -> chosen title.
Asker = Callable[[str, list[str]], Awaitable[str | None]]
# Shows the files an edit would write, (writes, label) -> None to apply it, else why not.
EditReviewer = Callable[[list[PlannedWrite], str], Awaitable[str | None]]

# Requests this client accepts and has nothing to do for.
_ACKNOWLEDGED = (
    "client/registerCapability",
    "client/unregisterCapability",
    "window/workDoneProgress/create",
)


def client_capabilities() -> dict[str, Any]:
    """Return what this client can do: apply whole-file edits, show progress and questions.

    File watching is left to the server (no dynamic registration for watched files).
    """
    return {
        "workspace": {
            "applyEdit": True,
            "workspaceEdit": {"documentChanges": True, "resourceOperations": ["create"]},
            "didChangeWatchedFiles": {"dynamicRegistration": False},
            "executeCommand": {"dynamicRegistration": False},
        },
        "window": {
            "workDoneProgress": True,
            "showMessage": {"messageActionItem": {"additionalPropertiesSupport": False}},
        },
        "general": {"positionEncodings": ["utf-16"]},
    }


async def _dismiss(message: str, actions: list[str]) -> str | None:
    return None


class EditorSide:
    """Answers the server's requests: questions through `ask`, edits to the workspace."""

    def __init__(
        self, workspace: Path, ask: Asker | None = None, review: EditReviewer | None = None
    ) -> None:
        self.ask: Asker = ask or _dismiss
        self.review = review
        self.editor = WorkspaceEditor(workspace)
        self.questions: list[tuple[str, list[str], str | None]] = []

    async def answer(self, method: str, params: dict[str, Any]) -> Any:
        """Return the result for a server request; LspError (MethodNotFound) if unknown."""
        if method == "window/showMessageRequest":
            actions = [str(a.get("title", "")) for a in params.get("actions") or []]
            message = str(params.get("message", ""))
            answer = await self.ask(message, actions)
            self.questions.append((message, actions, answer))
            return None if answer is None else {"title": answer}
        if method == "workspace/applyEdit":
            applied, reason = await self.apply_edit(params)
            result: dict[str, Any] = {"applied": applied}
            if reason:
                result["failureReason"] = reason
            return result
        if method in _ACKNOWLEDGED:
            return None
        if method == "workspace/configuration":
            return [None for _ in params.get("items") or []]
        raise LspError(proto.METHOD_NOT_FOUND, f"{method} is not supported by this client")

    async def apply_edit(self, params: dict[str, Any]) -> tuple[bool, str | None]:
        """Check the edit, have `review` approve it (when set), then write it."""
        try:
            writes = self.editor.plan(params.get("edit") or {})
        except (OSError, ValueError) as exc:
            return False, str(exc)
        if self.review is None:
            refused = refused_in_git(writes)  # no one to say yes to a write into .git
        else:
            refused = await self.review(writes, str(params.get("label") or ""))
        if refused is not None:
            return False, refused
        return self.editor.commit(writes)
