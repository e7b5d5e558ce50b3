"""Live drift from watched-file events; tracked files opened with unsaved changes."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

from lsprotocol import types
from pygls.uris import to_fs_path

from session.workspace.drift import DriftReport
from session.workspace.patterns import SKIPPED_DIRS

from .. import protocol as proto
from .base import Feature, lsp

logger = logging.getLogger(__name__)


def relative_paths(root: Path, uris: list[str]) -> list[str]:
    """Turn file URIs into workspace-relative POSIX paths; others are dropped."""
    out = []
    for uri in uris:
        path = to_fs_path(uri)
        if path is None:
            continue
        try:  # resolve the directory, never the file: a file may now be a symlink
            full = Path(path).parent.resolve() / Path(path).name
            out.append(full.relative_to(root).as_posix())
        except (ValueError, OSError):
            continue
    return out


def live_drift_message(drift: DriftReport) -> str:
    """Return the warning for files changed outside the assistant while the session is open."""
    edited = set(drift.after_assistant_edit)
    parts = [
        f"{p}: modified" + (" after the assistant's edit" if p in edited else "")
        for p in drift.modified
    ]
    parts += [f"{p}: deleted" for p in drift.deleted]
    parts += [f"{p}: created" for p in drift.created]
    more = f" (+{len(parts) - 10} more)" if len(parts) > 10 else ""
    return f"Files changed outside the assistant: {', '.join(parts[:10])}{more}"


class WorkspaceWatch(Feature):
    """Watches the workspace (through the editor when it can) and reports live drift."""

    name = "workspace watch"

    @lsp(types.WORKSPACE_DID_CHANGE_WATCHED_FILES, ready=True)
    async def changed(self, params: types.DidChangeWatchedFilesParams) -> None:
        """Report drift for tracked files the editor saw change."""
        ls = self.server
        if ls.engine.lifecycle_or_none is None:
            return
        self.report_drift(relative_paths(ls.root, [change.uri for change in params.changes]))

    @lsp(types.TEXT_DOCUMENT_DID_OPEN, ready=True)
    async def opened(self, params: types.DidOpenTextDocumentParams) -> None:
        """Note a tracked file opened with unsaved changes (after a resume, say) for the model."""
        ls = self.server
        if ls.engine.lifecycle_or_none is None:
            return
        document = params.text_document
        for relative in relative_paths(ls.root, [document.uri]):
            ls.lifecycle.note_open_document(relative, document.text.encode("utf-8"))

    async def session_started(self) -> None:
        """Ask the client to watch the workspace, when it allows dynamic registration."""
        ls = self.server
        caps = ls.client_capabilities.workspace
        watched = caps.did_change_watched_files if caps else None
        if not (watched and watched.dynamic_registration):
            logger.info("client cannot watch files; watching the workspace from the server")
            ls.spawn(self.watch_locally(), "watch-workspace")
            return
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
        )
        try:
            await ls.client_register_capability_async(
                types.RegistrationParams(
                    registrations=[
                        types.Registration(
                            id=str(uuid.uuid4()),
                            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=options,
                        )
                    ]
                )
            )
        except Exception as exc:
            logger.warning("file watcher registration failed: %s", exc)

    async def watch_locally(self) -> None:
        """Watch the workspace with watchfiles (inotify & co.) for clients that cannot."""
        from watchfiles import DefaultFilter, awatch

        class Filter(DefaultFilter):
            ignore_dirs = (*DefaultFilter.ignore_dirs, *SKIPPED_DIRS)

        ls = self.server
        try:
            async for changes in awatch(
                ls.root, watch_filter=Filter(), stop_event=ls.stop_watching, debounce=300
            ):
                paths = []
                for _change, path in changes:
                    try:
                        full = Path(path).parent.resolve() / Path(path).name
                        paths.append(full.relative_to(ls.root).as_posix())
                    except (ValueError, OSError):
                        continue
                self.report_drift(paths)
        except Exception as exc:  # e.g. too many watches: live drift degrades, chat goes on
            logger.warning("cannot watch %s (%s); live drift is off", ls.root, exc)

    def report_drift(self, paths: list[str]) -> None:
        """Check changed paths against the manifest; tell the client about real drift."""
        ls = self.server
        if ls.engine.lifecycle_or_none is None or ls.closed or not paths:
            return
        report = ls.lifecycle.check_live_drift(paths)
        if report is not None:
            ls.drift_count += len(report.modified) + len(report.deleted) + len(report.created)
            shown = ls.config.drift_messages  # a generic client shows only the message
            if shown:
                ls.show(live_drift_message(report))
            ls.notify(
                proto.DriftParams.of(
                    ls.lifecycle.session_id, "watcher", report, message_shown=shown
                )
            )
