"""Live drift: watched-file events for tracked files the assistant did not change."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

from lsprotocol import types
from pygls.uris import to_fs_path

from .. import protocol as proto
from ..server import AgentAssistServer
from .lifecycle import drift_params

logger = logging.getLogger(__name__)


async def register_watchers(ls: AgentAssistServer) -> None:
    """Ask the client to watch the workspace, when it allows dynamic registration."""
    caps = ls.client_capabilities.workspace
    watched = caps.did_change_watched_files if caps else None
    if not (watched and watched.dynamic_registration):
        logger.info("client cannot register file watchers; live drift is off")
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


def setup(server: AgentAssistServer) -> None:
    """Register the watched-files handler."""

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def changed(ls: AgentAssistServer, params: types.DidChangeWatchedFilesParams) -> None:
        if ls.lifecycle is None:
            return
        await ls.ready.wait()
        paths = relative_paths(ls.root, [change.uri for change in params.changes])
        report = ls.session.check_live_drift(paths)
        if report is not None:
            ls.drift_count += len(report.modified) + len(report.deleted) + len(report.created)
            ls.notify(proto.DRIFT, drift_params(ls.session.session_id, "watcher", report))
