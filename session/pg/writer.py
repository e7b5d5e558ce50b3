"""One writer per session across machines: an advisory lock held by the writer's connection.

`pg_try_advisory_lock` is taken on a connection of the writer's own (not the pool's, which
may close connections at any time), and every append runs on that same connection: while
the writer can write, it holds the lock, and when its process dies the server drops the
connection and with it the lock. A connection that breaks loses the lock, so the writer
is then unusable and says so; a new one must be acquired.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
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

# A granted 64-bit advisory lock in this database as pg_locks shows it: two 32-bit halves,
# objsubid 1 (`key` is the signed 64-bit key, from both halves).
_ADVISORY = """l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"""
_KEY = "((l.classid::bigint << 32) | l.objid::bigint)"
# Who holds these keys now: the role of each holder (visible to every role), and its
# application name and start (hidden, NULL, for another role's connection).
_HOLDERS = f"""SELECT {_KEY}, a.usename::text, a.usename = current_user,
    a.application_name, a.backend_start, l.pid = pg_backend_pid() FROM pg_locks l
    LEFT JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE {_ADVISORY} AND {_KEY} = ANY(%(keys)s::bigint[])"""  # noqa: S608 - constants only

# A session's lock has several keys, its generations, tried in order: the first free one is
# taken. Every role sees every key held (`pg_locks`), and a key is a plain number: another
# role could take a key it saw once its holder let go, but only that key. A key held by a
# connection of another role is skipped, never trusted, and a writer holds the session only
# when no connection of its own role holds another of its keys (checked after taking one).
GENERATIONS = 64

T = TypeVar("T")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def session_keys(schema: str, owner: str, session_id: str) -> list[int]:
    """Return the session's lock keys, generation 0 first (generation 0: the key of old)."""
    return [advisory_key(schema, owner, session_id)] + [
        advisory_key(schema, owner, session_id, f"generation {n}") for n in range(1, GENERATIONS)
    ]


@dataclass(frozen=True)
class Holder:
    """A connection that holds one of a session's keys."""

    key: int
    role: str | None  # None: gone by the time pg_stat_activity was read
    own_role: bool
    application: str | None
    since: datetime | None
    me: bool

    def describe(self) -> str:
        """Say who this is, as far as PostgreSQL tells (another role's details are hidden)."""
        if not self.own_role:
            role = f" ({self.role})" if self.role else ""
            return f"another database role{role} / connection"
        app = self.application or "a connection of your role"
        since = f", since {self.since:%Y-%m-%d %H:%M %Z}" if self.since is not None else ""
        return f"another agent-assist ({app}{since})" if self.application else f"{app}{since}"


def holders(conn: Conn, keys: Sequence[int]) -> list[Holder]:
    """Return the connections holding any of `keys` now (one look at pg_locks)."""
    rows = conn.execute(_HOLDERS, {"keys": list(keys)}).fetchall()
    return [
        Holder(_signed(int(r[0])), r[1], bool(r[2]), r[3] or None, r[4], bool(r[5])) for r in rows
    ]


def held_sessions(conn: Conn, schema: str, owner: str, session_ids: Sequence[str]) -> set[str]:
    """Return the sessions a connection of this role holds the writer lock of (no lock taken).

    A key held by another role's connection does not make a session in use: its writer
    takes the next generation's key.
    """
    keys = {key: sid for sid in session_ids for key in session_keys(schema, owner, sid)}
    return {keys[h.key] for h in holders(conn, list(keys)) if h.own_role and h.key in keys}


def take_lock(conn: Conn, schema: str, owner: str, session_id: str) -> int:
    """Take one of the session's keys on `conn` and return it, or raise `SessionLockedError`.

    Refused when a connection of this role holds any of its keys (a writer, or a deletion
    of the admin commands), or when another role holds every one.
    """
    keys = session_keys(schema, owner, session_id)
    foreign: list[Holder] = []

    def in_use(holder: Holder) -> SessionLockedError:
        return SessionLockedError(f"session {session_id} is in use by {holder.describe()}")

    for holder in holders(conn, keys):
        if holder.own_role and not holder.me:
            raise in_use(holder)
    for key in keys:
        got = conn.execute("SELECT pg_try_advisory_lock(%s::bigint)", (key,)).fetchone()
        if got and got[0]:
            # Another writer of this role may have taken another generation meanwhile.
            rival = [h for h in holders(conn, keys) if h.own_role and not h.me]
            if rival:
                conn.execute("SELECT pg_advisory_unlock(%s::bigint)", (key,))
                raise in_use(rival[0])
            return key
        now = [h for h in holders(conn, [key]) if not h.me]
        mine = [h for h in now if h.own_role or h.role is None]
        if mine:
            raise in_use(mine[0])
        foreign.extend(now)
    roles = sorted({h.role for h in foreign if h.role})
    by = f" ({', '.join(roles)})" if roles else ""
    raise SessionLockedError(
        f"session {session_id} is in use by another database role{by} / connection: it holds "
        f"all {len(keys)} of the session's lock keys (an administrator can end those "
        "connections with pg_terminate_backend)"
    )


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
        # One use of the connection at a time: the writer's, or the store's (`lend`).
        self._use = threading.RLock()

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
                key = take_lock(conn, schema, str(owner[0] if owner else ""), session_id)
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

    @contextmanager
    def lend(self) -> Iterator[Conn | None]:
        """Lend the connection to the store's other work (None: closed), one use at a time.

        The server then needs no connection besides its writer's (`PgStore.connection`).
        A statement that breaks the connection ends the writer too, as one of its own would.
        """
        with self._use:
            if self._conn.closed:
                yield None
                return
            try:
                yield self._conn
            finally:
                if self._conn.broken:
                    self._conn.close()

    def _call(self, operation: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self._use:
            return self._call_alone(operation, *args, **kwargs)

    def _call_alone(self, operation: Callable[..., T], *args: Any, **kwargs: Any) -> T:
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
        with self._use, reporting(self._info):
            return any(h.me for h in holders(self._conn, [self.key]))

    def release(self) -> None:
        """Release the lock and close the connection (safe to call twice)."""
        with self._use:
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
