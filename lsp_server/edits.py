"""Whole-file edits through the editor (`workspace/applyEdit`), so the user can undo them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

if TYPE_CHECKING:
    from .server import AgentAssistServer


class WorkspaceEdits:
    """The editor side of the assistant's file writes (the tools' `EditorHost`)."""

    def __init__(self, ls: AgentAssistServer) -> None:
        self.ls = ls

    def supports_apply_edit(self) -> bool:
        """Return True if the client can apply workspace edits."""
        caps = self.ls.client_capabilities.workspace
        return bool(caps and caps.apply_edit)

    async def apply_file_edit(self, relative: str, content: str) -> bool:
        """Replace a file's content through `workspace/applyEdit` (undoable in the editor)."""
        if not self.supports_apply_edit():
            return False
        path = self.ls.root / relative
        uri = from_fs_path(str(path))
        if uri is None:
            return False
        changes: list[Any] = []
        ops = self.ls.client_capabilities.workspace
        edit_caps = ops.workspace_edit if ops else None
        document_changes = bool(edit_caps and edit_caps.document_changes)
        if not path.exists():
            kinds = (edit_caps.resource_operations or []) if edit_caps else []
            if types.ResourceOperationKind.Create not in kinds or not document_changes:
                return False
            changes.append(types.CreateFile(uri=uri, options=types.CreateFileOptions()))
            current = ""
        else:
            document = self.ls.workspace.text_documents.get(uri)
            current = (
                document.source
                if document is not None
                else path.read_text(encoding="utf-8", errors="replace")
            )
        lines = current.split("\n")
        end = types.Position(line=len(lines) - 1, character=len(lines[-1].encode("utf-16-le")) // 2)
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
        return bool(result and result.applied)

    # -- lifecycle ----------------------------------------------------------------------
