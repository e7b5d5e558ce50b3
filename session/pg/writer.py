"""One writer per session across machines: an advisory lock held by the writer's connection.

`pg_try_advisory_lock` is taken on a connection of the writer's own (not the pool's, which
may close connections at any time), and every append runs on that same connection: while
the writer can write, it holds the lock, and when its process dies the server drops the
connection and with it the lock. A connection that breaks loses the lock, so the writer
is then unusable and says so; a new one must be acquired.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import psycopg

from ..errors import SessionError, SessionLockedError
from ..events import Event
from ..paths import is_valid_session_id
from ..redaction import Redactor
from .connection import open_connection, reporting
from .dsn import DsnInfo
from .events import (
    EventDraft,
    append_events,
    commit_durably,
    copy_events,
    insert_events,
    open_turn,
)
from .query import Conn, advisory_key
from .records import set_listing

# A granted 64-bit advisory lock as pg_locks shows it: two 32-bit halves, objsubid 1.
_LOCK = """l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid::bigint = (%(key)s::bigint >> 32) & 4294967295
    AND l.objid::bigint = %(key)s::bigint & 4294967295"""
_HOLDER = f"""SELECT a.application_name, a.backend_start FROM pg_locks l
    JOIN pg_stat_activity a ON a.pid = l.pid WHERE {_LOCK}"""  # noqa: S608 - constants only
_MINE = f"SELECT count(*) FROM pg_locks l WHERE l.pid = pg_backend_pid() AND {_LOCK}"  # noqa: S608

# The sessions among `keys` (their writers' lock keys) whose lock is granted now, at once.
_HELD = f"""SELECT DISTINCT k.key FROM pg_locks l
    JOIN unnest(%(keys)s::bigint[]) AS k(key) ON {_LOCK.replace("%(key)s::bigint", "k.key")}"""  # noqa: S608 - constants only

T = TypeVar("T")


def held_sessions(conn: Conn, schema: str, owner: str, session_ids: Sequence[str]) -> set[str]:
    """Return the sessions whose writer lock a process holds now (pg_locks once, no lock)."""
    keys = {advisory_key(schema, owner, sid): sid for sid in session_ids}
    rows = conn.execute(_HELD, {"keys": list(keys)}).fetchall()
    return {keys[row[0]] for row in rows}


class SessionWriter:
    """The writing end of one session: holds its lock and appends on the lock's connection."""

    def __init__(
        self, conn: Conn, info: DsnInfo, schema: str, session_id: str, key: int, redactor: Redactor
    ) -> None:
        self._conn = conn
        self._info = info
        self.schema = schema
        self.session_id = session_id
        self.key = key
        self.redactor = redactor

    @classmethod
    def acquire(
        cls, dsn: str, info: DsnInfo, schema: str, session_id: str, redactor: Redactor
    ) -> SessionWriter:
        """Take the session's lock, or raise `SessionLockedError` saying who holds it."""
        if not is_valid_session_id(session_id):
            raise SessionError(f"invalid session id {session_id!r}")
        conn = open_connection(dsn, info, "writer")
        try:
            with reporting(info):
                if conn.info.server_version >= 140000:
                    # the lock lives as long as this connection, which is mostly idle
                    conn.execute("SET idle_session_timeout = 0")
                owner = conn.execute("SELECT current_user").fetchone()
                key = advisory_key(schema, str(owner[0] if owner else ""), session_id)
                got = conn.execute("SELECT pg_try_advisory_lock(%s::bigint)", (key,)).fetchone()
                if not got or not got[0]:
                    holder = conn.execute(_HOLDER, {"key": key}).fetchone()
                    by = f" ({holder[0]}, since {holder[1]:%Y-%m-%d %H:%M %Z})" if holder else ""
                    raise SessionLockedError(
                        f"session {session_id} is in use by another agent-assist{by}"
                    )
        except BaseException:
            conn.close()
            raise
        return cls(conn, info, schema, session_id, key, redactor)

    @property
    def closed(self) -> bool:
        """True once released, or once its connection (and so the lock) is gone."""
        return self._conn.closed

    def _live(self) -> Conn:
        if self._conn.closed:
            raise SessionError(
                f"session {self.session_id}: the writer's connection to {self._info.where} is "
                "closed, so its lock is gone; acquire the session again"
            )
        return self._conn

    def append(self, drafts: Sequence[EventDraft], *, durable: bool = True) -> list[Event]:
        """Append `drafts` in order, in one transaction (committed when this returns)."""
        return self._call(append_events, drafts, self.redactor, durable=durable)

    def write(self, raws: Sequence[dict[str, Any]], *, durable: bool) -> None:
        """Append events this writer numbered and validated (`events.insert_events`)."""
        self._call(insert_events, raws, self.redactor, durable=durable)

    def sync(self) -> None:
        """Return once everything this writer committed is flushed to the server's disk."""
        self._call(commit_durably)

    def open_turn(self) -> int | None:
        """Return the turn left open at the end of the log (its writer died), or None."""
        return self._call(open_turn)

    def set_listing(self, title: str | None, turns: int, phase: str | None) -> None:
        """Keep the session row's listing columns in step with the events."""
        self._call(set_listing, title, turns, phase)

    def copy(self, events: Sequence[Mapping[str, Any]]) -> int:
        """Append already-written events verbatim (their seqs must continue the log)."""
        return self._call(copy_events, events)

    def _call(self, operation: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        conn = self._live()
        with reporting(self._info):
            try:
                return operation(conn, self.schema, self.session_id, *args, **kwargs)
            except psycopg.OperationalError:
                if conn.broken:
                    conn.close()  # and with it the lock: this writer is done
                raise

    def holds_lock(self) -> bool:
        """Ask the server whether this writer's connection still holds the lock."""
        if self._conn.closed:
            return False
        with reporting(self._info):
            row = self._conn.execute(_MINE, {"key": self.key}).fetchone()
        return bool(row and row[0])

    def release(self) -> None:
        """Release the lock and close the connection (safe to call twice)."""
        if self._conn.closed:
            return
        try:
            self._conn.execute("SELECT pg_advisory_unlock(%s::bigint)", (self.key,))
        except psycopg.Error:
            pass  # closing the connection releases it anyway
        finally:
            self._conn.close()

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
