"""The `FileChange`s a session records: a tool's write, a restore's, a drift's.

Each is made from the contents (`file_changes.prepare`) and recorded with its blobs: the
event naming them is appended inside `keeping` (see `CheckpointStorage.keeping`). A store
that cannot keep the blobs costs the diffs, never the event.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from ..errors import SessionError
from ..file_changes import PendingChange, contents_of, digest_of, prepare
from ..redaction import Redactor
from ..storage import StorageError
from ..workspace.drift import DriftReport
from ..workspace.files import read_workspace_file

# A drift of more files than this keeps digests only (a branch switch, a pull: their
# contents are git's, and reading them would slow the resume that found them).
DRIFT_COPIES = 32
DRIFT_COPY_BYTES = 4 << 20  # and reads at most about this much
TOO_MANY_WITHHELD = f"not kept: more than {DRIFT_COPIES} files (or 4 MB) changed at once"

logger = logging.getLogger(__name__)
Keep = Callable[[list[bytes]], AbstractContextManager[None]]


@contextmanager
def recording(keep: Keep, changes: list[PendingChange]) -> Iterator[list[dict[str, Any]]]:
    """Keep the changes' contents as blobs; yield their records for the event appended inside.

    A store that fails to keep them before the event says so in `withheld`; one that fails
    after it (PostgreSQL writes them once the event is in) costs those diffs, not the turn.
    """
    records = [change.record() for change in changes]
    contents = contents_of(changes)
    if not contents:
        yield records
        return
    try:
        kept = keep(contents)
        kept.__enter__()
    except (StorageError, SessionError, OSError) as exc:
        why = f"not kept: {exc}".splitlines()[0][:200]
        for record in records:
            record["withheld"] = record["withheld"] or why
        yield records
        return
    try:
        yield records
    except BaseException:
        if not kept.__exit__(*sys.exc_info()):
            raise
    else:
        try:
            kept.__exit__(None, None, None)
        except (StorageError, SessionError, OSError) as exc:
            logger.warning("file change contents not kept: %s", exc)


def drift_changes(
    root: Path, drift: DriftReport, redactor: Redactor | None, metadata: bool
) -> list[PendingChange]:
    """Return the changes a drift saw: before the last known digest, after disk's now.

    Only the changed files are read; a file that changed again since it was hashed is
    recorded by its digest alone (its content is not the one the drift saw).
    """
    changes = []
    budget = DRIFT_COPY_BYTES
    paths = sorted({*drift.modified, *drift.created, *drift.deleted})
    many = len(paths) > DRIFT_COPIES
    for path in paths:
        before, after = drift.digests.get(path, (None, None))
        data = None
        if after is not None and not metadata:
            if many or budget <= 0:  # a branch switch: digests only, kept cheap
                changes.append(PendingChange(path, before, after, TOO_MANY_WITHHELD))
                continue
            data = read_workspace_file(root, path)
            if data is not None and digest_of(data) != after:
                data = None
            budget -= len(data or b"")
        change = prepare(
            path,
            None,
            data,
            redactor=redactor,
            metadata=metadata,
            before_digest=before,
            after_digest=after,
        )
        if data is None and after is not None and change.withheld is None and not metadata:
            change.withheld = "not kept: changed again while it was read"
        changes.append(change)
    return changes
