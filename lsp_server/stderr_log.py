"""stderr logging that can never flood (the editor keeps it in its log file)."""

from __future__ import annotations

import logging
import sys
import threading
import time


class BoundedStderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr logging that can never flood: a burst, then a steady trickle, then a count.

    An error that repeats in a loop (a write to a closed transport reported as an error,
    which is written, which fails...) would otherwise fill the editor's log file at tens
    of megabytes a second.
    """

    def __init__(self, burst: int = 200, per_second: float = 20.0) -> None:
        super().__init__(sys.stderr)
        self.capacity = float(burst)
        self.tokens = float(burst)
        self.rate = per_second
        self.stamp = time.monotonic()
        self.dropped = 0
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        """Write `record` if the budget allows; count it otherwise."""
        with self._guard:
            now = time.monotonic()
            self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.tokens < 1:
                self.dropped += 1
                return
            self.tokens -= 1
            dropped, self.dropped = self.dropped, 0
        if dropped:
            note = logging.LogRecord(
                record.name,
                logging.WARNING,
                __file__,
                0,
                "%d log records suppressed",
                (dropped,),
                None,
            )
            super().emit(note)
        super().emit(record)
