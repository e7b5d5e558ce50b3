"""A scripted file history over two days, for the file-timeline tests (local and PostgreSQL).

Day one, turn 1 ("make the config") writes `config.yaml` in step 1 and edits it in step 2;
day two, a drift (the user's hand edit) is seen, then turn 2 ("add the port") writes it again
adding `port: 8080`, and a rewind restores the first version. Events go through the store's
own append path; contents through its blob store; times from the injected clock
(`tests/search_timeline.Clock`).
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from session.store.session import Session
from tests.search_timeline import DAY_ONE, DAY_TWO, Clock

V1 = "name: demo\n"
V2 = "name: demo\nlevel: 1\n"
V3 = "name: demo\nlevel: 2\n"  # the hand edit
V4 = "name: demo\nlevel: 2\nport: 8080\n"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def change(store: Any, path: str, before: str | None, after: str | None) -> dict[str, Any]:
    """Return a recorded `FileChange`, its sides stored as blobs."""
    for side in (before, after):
        if side is not None:
            store.put_blob(side.encode())
    return {
        "path": path,
        "before": None if before is None else digest(before),
        "after": None if after is None else digest(after),
    }


def write_step(
    writer: Session, store: Any, turn: int, step: int, call: str, files: list[dict[str, Any]]
) -> None:
    """One step calling `write_file` on the first file, recorded with `files`."""
    writer.append("step/start", {"messages": []}, turn=turn, step=step)
    args = {"path": files[0]["path"] if files else "config.yaml", "content": "…"}
    writer.append(
        "tool/call",
        {"tool_call_id": call, "name": "write_file", "args": args},
        turn=turn,
        step=step,
    )
    result = {"tool_call_id": call, "name": "write_file", "content": "written", "files": files}
    writer.append("tool/result", result, turn=turn, step=step)
    writer.append("step/end", {"usage": {}}, turn=turn, step=step)


def write_history(
    writer: Session, store: Any, clock: Clock, days: tuple[datetime, datetime] = (DAY_ONE, DAY_TWO)
) -> None:
    """The script above, into `writer` (a fresh session of `store`), on `days`."""
    clock.now = days[0]
    writer.append("turn/start", {"input": "make the config"}, turn=1)
    write_step(writer, store, 1, 1, "c1", [change(store, "config.yaml", None, V1)])
    write_step(writer, store, 1, 2, "c2", [change(store, "config.yaml", V1, V2)])
    writer.append("turn/end", {"reason": "completed"}, turn=1)
    clock.now = days[1]
    drift = {"source": "resume", "modified": ["config.yaml"], "unchanged": 0}
    drift["changes"] = [change(store, "config.yaml", V2, V3)]
    writer.append("workspace/drift", drift)
    writer.append("turn/start", {"input": "add the port"}, turn=2)
    write_step(writer, store, 2, 1, "c3", [change(store, "config.yaml", V3, V4)])
    writer.append("turn/end", {"reason": "completed"}, turn=2)
    rewind = {"to_seq": 3, "checkpoint": 1, "files": [change(store, "config.yaml", V4, V1)]}
    writer.append("session/rewind", rewind)


def write_old_style(writer: Session) -> None:
    """A turn as logs before #42 have it: a `write_file` call, its result without `files`."""
    writer.append("turn/start", {"input": "old times"}, turn=1)
    writer.append("step/start", {"messages": []}, turn=1, step=1)
    args = {"path": "./config.yaml", "content": "x"}
    writer.append(
        "tool/call", {"tool_call_id": "o1", "name": "write_file", "args": args}, turn=1, step=1
    )
    writer.append(
        "tool/result", {"tool_call_id": "o1", "name": "write_file", "content": "ok"}, turn=1, step=1
    )
    writer.append("step/end", {"usage": {}}, turn=1, step=1)
    writer.append("turn/end", {"reason": "completed"}, turn=1)
