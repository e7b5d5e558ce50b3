"""A process that opens a session for writing and holds it until it is killed.

`python -m tests.store.holder local WORKSPACE HOME SESSION` or
`python -m tests.store.holder postgresql WORKSPACE SCHEMA SESSION` (the DSN from
`AGENT_ASSIST_TEST_PG`); it says `held` on stdout once it has the lock.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from session.store.backend import SessionStore
from session.store.choose import open_store


def main(argv: list[str]) -> None:
    """Open the session named by `argv`, say so, and sleep."""
    kind, workspace, where, session_id = argv
    store: SessionStore
    if kind == "local":
        store = open_store(None, Path(workspace), home=Path(where))
    else:
        dsn = os.environ["AGENT_ASSIST_TEST_PG"]
        store = open_store(dsn, Path(workspace), schema=where, pool_size=1)
    writer = store.open_session(session_id)
    writer.append("turn/start", {"input": "held"}, turn=writer.state.turns + 1)
    sys.stdout.write("held\n")
    sys.stdout.flush()
    time.sleep(600)


if __name__ == "__main__":
    main(sys.argv[1:])
