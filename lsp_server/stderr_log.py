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


class AnsweredErrorFilter(logging.Filter):
    """One line, no stack, for a request answered with an error on purpose (pygls' log).

    pygls logs every failed request with its traceback and its params. A refusal the server
    meant (in use, no such session, bad params: any JSON-RPC error but an internal one) is
    an answer, not a crash: it is logged as one line naming the code and message, without
    the params (a user's text). Internal errors keep their stack.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite a meant refusal's record; always let it through."""
        from pygls.exceptions import JsonRpcException, JsonRpcInternalError

        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, JsonRpcException) and not isinstance(error, JsonRpcInternalError):
            code = getattr(error, "code", None)
            record.msg, record.args = "request answered with error %s: %s", (code, error.message)
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True
