"""A seed's session copied into the local store, as our session file (the seed's schema v3).

The seed's store is read by `store/seed_store.py`, whichever store imports; this is the
local store's side of it (PostgreSQL's is `pg/importing.import_seed_session`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..store.seed_store import ImportOutcome

if TYPE_CHECKING:
    from ..redaction import Redactor
    from ..store.seed_store import SeedSession
    from .project_listing import ProjectListing

logger = logging.getLogger(__name__)


def import_session(
    project: ProjectListing,
    seed: SeedSession,
    *,
    dry_run: bool = False,
    redactor: Redactor | None = None,
) -> ImportOutcome:
    """Copy a seed's session into the project's local store, never over a session of its id.

    Written under the session's lock, as our session file (the seed's schema v3), its
    content scrubbed as everything we write is (`redactor`: the server's, with its secrets
    and persistence mode; else the patterns alone); the seed's file is only read.
    """
    from ..errors import SessionLockedError
    from ..redaction import Redactor
    from .snapshots import write_state_file

    sid = seed.session_id
    exists = ImportOutcome(
        sid, "already-imported", "already in the local store: not overwritten (skipped)"
    )
    layout = project.layout
    if layout.has_session(sid):
        return exists
    if dry_run:
        return ImportOutcome(sid, "would-import", "would be imported")
    try:
        lock = project.lock(sid)
    except SessionLockedError as exc:
        return ImportOutcome(sid, "in-use", f"{exc} (skipped)")
    try:
        if layout.has_session(sid):
            return exists
        state = seed.state.model_copy(deep=True)
        if state.workspace_root is None:
            state.workspace_root = str(layout.workspace_root)
        scrubber = redactor or Redactor()
        if scrubber.metadata_only:
            state.persistence = "metadata"
        write_state_file(layout.snapshot_path(sid), state, scrubber)
    finally:
        lock.release()
    logger.info("imported session %s from %s", sid, seed.path)
    return ImportOutcome(sid, "imported", f"imported into {layout.sessions_dir}")
