"""Which checkpoint holds each file a resume found changed, worked out from the moment it is.

An editor asks at once (`agentAssist/resume`), and the answer costs a resume of 20,000
files with 200 changed ~6–8 ms in a fresh server process (the newest record's index
parsed, a stat per copy). Started in a thread as soon as the drift is known, it runs
while the resume writes its pointer (fsyncs) and the client is told. The thread only
reads (and may rewrite a stale index, atomically); what it warns of is handed over with
the answer. The answer stays right while this session's checkpoints stay as they are:
the caller drops it when it writes one (the session's lock keeps other processes out).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

Holding = dict[str, int | None]


class PendingHolding:
    """`Checkpoints.holding` of some paths of a session, computed in a worker thread."""

    def __init__(
        self,
        session_id: str,
        paths: Sequence[str],
        holding: Callable[[str, Sequence[str], list[str]], Holding],
        *,
        background: bool = True,
    ) -> None:
        self.session_id = session_id
        self.paths = tuple(paths)
        self._holding = holding
        self._warnings: list[str] = []
        self._found: Holding | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(
                target=self._run, name="checkpoints holding", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        try:
            self._found = self._holding(self.session_id, self.paths, self._warnings)
        except Exception:  # noqa: S110 - `result` asks again in the caller, which raises it
            self._found = None

    def answers(self, session_id: str, paths: Sequence[str]) -> bool:
        """Return True if this is the lookup of exactly these paths of that session."""
        return session_id == self.session_id and tuple(paths) == self.paths

    def result(self, warnings: list[str]) -> Holding:
        """Wait for the answer (asked here if the thread failed); move its warnings over."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._found is None:
            self._warnings.clear()
            self._found = self._holding(self.session_id, self.paths, self._warnings)
        warnings.extend(self._warnings)
        self._warnings.clear()
        return dict(self._found)
