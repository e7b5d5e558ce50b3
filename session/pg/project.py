"""Which `project` a workspace's sessions are kept under in a PostgreSQL store."""

from __future__ import annotations

import logging

from ..workspace.identity import ProjectIdentity, claimed_remote
from .store import PgStore

logger = logging.getLogger(__name__)


def choose_project(pg: PgStore, identity: ProjectIdentity, workspace_root: str) -> str:
    """Return the `project` this workspace's sessions are kept under (`docs/storage.md`).

    The identity's key, unless an origin remote is claimed without that key's proof and this
    very workspace recorded sessions under the claim: rows recorded before the root commit was
    required (`remote:<location>`) take the proved key now; without a proof (no commit yet, a
    shallow clone) the project this workspace used is kept. A remote URL alone joins nothing.
    """
    claim = identity.remote
    if claim is None:
        return identity.key
    used = [p for p in pg.projects_at(workspace_root) if claimed_remote(p) == claim]
    if identity.kind == "path":
        return used[0] if used else identity.key
    if claim in used:
        if pg.read_only_reason is not None:
            return claim  # read as it is; moved by the next start that may write
        moved = pg.rename_project(claim, identity.key)
        logger.info("%d sessions of %s moved to the proved project %s", moved, claim, identity.key)
    return identity.key
