"""Whole-file edits through the editor (`workspace/applyEdit`), so the user can undo them."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from engine.model.tools import EditOutcome
from session.workspace.protected import shown_path

if TYPE_CHECKING:
    from pygls.workspace import Workspace

    from engine.config import ServerConfig

CANNOT = EditOutcome(applied=False)  # the client cannot take this edit: written directly
UNSEEN_END_LINE = 2**31 - 1  # LSP's largest line number: past the end of any buffer


logger = logging.getLogger(__name__)

# The answers to a protected write's question (the terminal client knows them too).
ALLOW_WRITE, REFUSE_WRITE = "Allow write", "Refuse"
ALLOW_CALL = "Allow call"  # an MCP server's tool the configuration asks about
SHOWN_ARGS = 300  # characters of a tool call's arguments in its question


def write_question(relative: str, reason: str) -> str:
    """Return the question for a protected write: only the path comes from the model."""
    return (
        f"Agent Assist: the model wants to write {shown_path(relative)}, a protected path: "
        f"{reason}. Allow this write?"
    )


def tool_question(server: str, tool: str, args: dict[str, Any]) -> str:
    """Return the question for an MCP tool call (the arguments, from the model, cut short)."""
    shown = json.dumps(args, ensure_ascii=False)
    if len(shown) > SHOWN_ARGS:
        shown = shown[:SHOWN_ARGS] + "…"
    return (
        f"Agent Assist: the model wants to call {tool} of MCP server {server!r} with "
        f"{shown}. Allow this call?"
    )


class EditingServer(Protocol):
    """What the edits use of the server: the client's side of pygls, the root, the options."""

    @property
    def client_capabilities(self) -> types.ClientCapabilities:
        """Return the client's capabilities."""
        ...

    @property
    def workspace(self) -> Workspace:
        """Return the documents the client syncs."""
        ...

    @property
    def root(self) -> Path:
        """Return the project root."""
        ...

    @property
    def config(self) -> ServerConfig:
        """Return the options."""
        ...

    async def window_show_message_request_async(
        self, params: types.ShowMessageRequestParams
    ) -> types.MessageActionItem | None:
        """Ask the user (`window/showMessageRequest`)."""
        ...

    async def workspace_apply_edit_async(
        self, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        """Send `workspace/applyEdit`."""
        ...


class WorkspaceEdits:
    """The editor side of the assistant's file writes (the tools' `EditorHost`)."""

    def __init__(self, ls: EditingServer) -> None:
        self.ls = ls
        # uri -> (text the client accepted, the document's version then): what the buffer
        # holds until the client's `didChange` for the edit arrives (eglot sends it from an
        # idle timer), so a read right after the edit sees it.
        self.accepted: dict[str, tuple[str, int | None]] = {}

    def supports_apply_edit(self) -> bool:
        """Return True if the client can apply workspace edits."""
        caps = self.ls.client_capabilities.workspace
        return bool(caps and caps.apply_edit)

    def protected_globs(self) -> tuple[str, ...]:
        """Return the user's `tools.protectedPaths`."""
        return self.ls.config.tools.protected_paths

    def document_text(self, relative: str) -> str | None:
        """Return the text the editor has for `relative` (didOpen/didChange), None if not open."""
        path = self.ls.root / relative
        documents = self.ls.workspace.text_documents
        document = documents.get(from_fs_path(str(path)) or "")
        if document is None:  # the client may spell the URI otherwise (escapes, case)
            document = next(
                (d for uri, d in documents.items() if to_fs_path(uri) == str(path)), None
            )
        if document is None:  # (closed: what it accepted is on disk, or was dropped)
            self.accepted.pop(from_fs_path(str(path)) or "", None)
            return None
        accepted = self.accepted.pop(document.uri, None)
        if accepted is not None and accepted[1] == document.version:  # no didChange since
            self.accepted[document.uri] = accepted
            return accepted[0]
        source: str = document.source
        return source

    async def read_document(self, relative: str) -> str | None:
        """Return `document_text` (the open documents are at hand: nothing to wait for)."""
        return self.document_text(relative)

    async def confirm(self, relative: str, reason: str, call_id: str | None = None) -> bool:
        """Ask with `window/showMessageRequest`; False if refused, dismissed or not askable."""
        question = write_question(relative, reason)
        return await self._ask(question, ALLOW_WRITE, f"a write of {shown_path(relative)}")

    async def confirm_tool(self, server: str, tool: str, args: dict[str, Any]) -> bool:
        """Ask about an MCP tool call as about a protected write (`tools.ToolCallConfirmer`)."""
        question = tool_question(server, tool, args)
        return await self._ask(question, ALLOW_CALL, f"a call of {tool} ({server})")

    async def _ask(self, question: str, allow: str, what: str) -> bool:
        window = self.ls.client_capabilities.window
        if window is None or window.show_message is None:
            logger.info("refused %s: the client cannot ask", what)
            return False
        try:
            answer = await self.ls.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Warning,
                    message=question,
                    actions=[types.MessageActionItem(allow), types.MessageActionItem(REFUSE_WRITE)],
                )
            )
        except Exception as exc:  # the client failed to ask: no answer is a no
            logger.warning("the question about %s failed (%s)", what, exc)
            return False
        return answer is not None and answer.title == allow

    async def apply_file_edit(
        self, relative: str, content: str, call_id: str | None = None
    ) -> EditOutcome:
        """Replace a file's content through `workspace/applyEdit` (undoable in the editor).

        Not applied, and not refused, when the client cannot take the edit (no
        `workspace.applyEdit`, or a new file without `create` operations); refused when it
        answered `applied: false`.
        """
        if not self.supports_apply_edit():
            return CANNOT
        path = self.ls.root / relative
        uri = from_fs_path(str(path))
        if uri is None:
            return CANNOT
        changes: list[Any] = []
        ops = self.ls.client_capabilities.workspace
        edit_caps = ops.workspace_edit if ops else None
        document_changes = bool(edit_caps and edit_caps.document_changes)
        if not path.exists():
            kinds = (edit_caps.resource_operations or []) if edit_caps else []
            if types.ResourceOperationKind.Create not in kinds or not document_changes:
                return CANNOT
            changes.append(types.CreateFile(uri=uri, options=types.CreateFileOptions()))
        document = self.ls.workspace.text_documents.get(uri)
        if document is not None:  # the buffer as the editor has it: its exact end
            lines = document.source.split("\n")
            end = types.Position(len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2)
        else:
            # A buffer the editor does not sync to us (VS Code syncs none) may hold more
            # than the disk (an unsaved edit of ours, the user's typing): the range ends
            # past any end, which editors clamp to the document's (VS Code, Neovim, Eglot).
            end = types.Position(line=UNSEEN_END_LINE, character=0)
        text_edit = types.TextEdit(types.Range(types.Position(0, 0), end), content)
        if document_changes:
            changes.append(
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri),
                    edits=[text_edit],
                )
            )
            edit = types.WorkspaceEdit(document_changes=changes)
        else:
            edit = types.WorkspaceEdit(changes={uri: [text_edit]})
        result = await self.ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(
                edit=edit,
                label=f"Agent Assist: write {relative}",
            )
        )
        if not (result and result.applied):
            reason = (result.failure_reason if result else None) or "it answered no"
            return EditOutcome(applied=False, refused=reason)
        document = self.ls.workspace.text_documents.get(uri)
        if document is not None:
            self.accepted[uri] = (content, document.version)
        return EditOutcome(applied=True)

    # -- lifecycle ----------------------------------------------------------------------
