"""Sessions (metadata and snapshot) and pointers (instance → session), row by row.

Every statement names `owner = current_user` although the policies already confine a role
to its rows: a superuser or a BYPASSRLS role is not confined, and must still act only on
its own sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from ..errors import SessionError, SessionNotFoundError
from ..events import Persistence
from ..paths import is_valid_instance_id, is_valid_session_id
from ..redaction import Redactor
from ..snapshot import SessionState
from ..store.rows import SessionInfo
from .query import Conn, jsonb, q, text_value

_COLUMNS = (
    "owner, session_id, project, workspace_root, instance_id, parent_session_id, "
    "fork_boundary, persistence, title, turns, next_seq, created_at, updated_at, snapshot_seq, "
    "coalesce(phase, snapshot->>'phase'), host"
)
# The column list is a constant: these are not built from input.
_CREATE = f"""INSERT INTO {{s}}.sessions (session_id, project, workspace_root, instance_id,
    parent_session_id, fork_boundary, persistence) VALUES (%s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT DO NOTHING RETURNING {_COLUMNS}"""  # noqa: S608
COLUMNS = _COLUMNS  # (session/pg/listing.py)
_SELECT = f"SELECT {_COLUMNS} FROM {{s}}.sessions WHERE owner = {{me}}"  # noqa: S608


@dataclass(frozen=True)
class SessionRow:
    """A session's row: what a listing shows, without its snapshot."""

    owner: str
    session_id: str
    project: str
    workspace_root: str | None
    instance_id: str | None
    parent_session_id: str | None
    fork_boundary: int | None
    persistence: str
    title: str | None
    turns: int
    next_seq: int
    created_at: datetime
    updated_at: datetime
    snapshot_seq: int | None
    phase: str | None = None  # the snapshot's `phase`
    host: str | None = None  # the machine it was last opened for writing on

    def info(self) -> SessionInfo:
        """Return the row as a listing shows it."""
        return SessionInfo(
            self.session_id,
            self.title,
            self.created_at,
            self.updated_at,
            self.turns,
            self.parent_session_id,
            self.phase,
        )


def row_of(values: tuple[Any, ...]) -> SessionRow:
    """Return the row of `COLUMNS`' values."""
    return SessionRow(*values)


def _checked_id(session_id: str) -> str:
    if not is_valid_session_id(session_id):
        raise SessionError(f"invalid session id {session_id!r}")
    return session_id


def create_session(
    conn: Conn,
    schema: str,
    session_id: str,
    project: str,
    *,
    workspace_root: str | None = None,
    instance_id: str | None = None,
    parent_session_id: str | None = None,
    fork_boundary: int | None = None,
    persistence: Persistence = "full",
) -> SessionRow:
    """Insert a new session's row (no events yet); an existing id is an error."""
    row = conn.execute(
        q(schema, _CREATE),
        (
            _checked_id(session_id),
            text_value(project),
            text_value(workspace_root) if workspace_root is not None else None,
            instance_id,
            parent_session_id,
            fork_boundary,
            persistence,
        ),
    ).fetchone()
    if row is None:
        raise SessionError(f"session {session_id} already exists in the PostgreSQL store")
    return row_of(row)


def get_session(conn: Conn, schema: str, session_id: str) -> SessionRow | None:
    """Return the session's row, or None."""
    row = conn.execute(
        q(schema, _SELECT + " AND session_id = %s"),
        (session_id,),
    ).fetchone()
    return row_of(row) if row else None


def list_sessions(conn: Conn, schema: str, project: str | None = None) -> list[SessionRow]:
    """Return this role's sessions (of one project, or all), the most recently updated first."""
    rows = conn.execute(
        q(
            schema,
            _SELECT + " AND (%(project)s::text IS NULL OR project = %(project)s)"
            " ORDER BY updated_at DESC, session_id",
        ),
        {"project": project},
    ).fetchall()
    return [row_of(row) for row in rows]


def projects_at(conn: Conn, schema: str, workspace_root: str) -> list[str]:
    """Return the projects whose sessions recorded this workspace, the most recent first."""
    rows = conn.execute(
        q(
            schema,
            "SELECT project FROM {s}.sessions WHERE owner = {me} AND workspace_root = %s"
            " GROUP BY project ORDER BY max(updated_at) DESC, project",
        ),
        (text_value(workspace_root),),
    ).fetchall()
    return [str(row[0]) for row in rows]


def rename_project(conn: Conn, schema: str, old: str, new: str) -> int:
    """Move this role's sessions and pointers from project `old` to `new`; return how many."""
    with conn.transaction():
        done = conn.execute(
            q(schema, "UPDATE {s}.sessions SET project = %s WHERE owner = {me} AND project = %s"),
            (text_value(new), text_value(old)),
        )
        conn.execute(
            q(
                schema,
                "UPDATE {s}.pointers p SET project = %(new)s"
                " WHERE p.owner = {me} AND p.project = %(old)s AND NOT EXISTS ("
                " SELECT 1 FROM {s}.pointers o WHERE o.owner = p.owner"
                " AND o.project = %(new)s AND o.instance_id = p.instance_id)",
            ),
            {"new": text_value(new), "old": text_value(old)},
        )
    return done.rowcount


def delete_session(conn: Conn, schema: str, session_id: str) -> bool:
    """Delete a session with its events, pointers and checkpoints (not its blobs)."""
    cur = conn.execute(
        q(schema, "DELETE FROM {s}.sessions WHERE owner = {me} AND session_id = %s"),
        (session_id,),
    )
    return cur.rowcount > 0


def put_snapshot(conn: Conn, schema: str, state: SessionState, redactor: Redactor) -> None:
    """Store the session's snapshot (scrubbed) and the listing columns taken from it."""
    payload = state.model_dump(mode="json")
    # Paths and digests, as the local snapshot keeps them: a file named like a key is a path.
    manifest = payload.pop("file_manifest")
    payload = redactor.scrub(payload)
    payload["file_manifest"] = manifest
    cur = conn.execute(
        q(
            schema,
            "UPDATE {s}.sessions SET snapshot = %s, snapshot_seq = %s, title = %s, turns = %s,"
            " phase = %s, updated_at = greatest(updated_at, %s)"
            " WHERE owner = {me} AND session_id = %s",
        ),
        (
            jsonb(payload),
            state.last_seq,
            text_value(payload["title"]) if payload.get("title") is not None else None,
            state.turns,
            state.phase,
            state.updated_at,
            state.session_id,
        ),
    )
    if cur.rowcount == 0:
        raise SessionError(f"no session {state.session_id} in the PostgreSQL store")


def get_snapshot(conn: Conn, schema: str, session_id: str) -> dict[str, Any] | None:
    """Return the session's stored snapshot (its JSON, unvalidated), or None."""
    row = conn.execute(
        q(
            schema,
            "SELECT snapshot FROM {s}.sessions WHERE owner = {me} AND session_id = %s",
        ),
        (session_id,),
    ).fetchone()
    return row[0] if row and row[0] is not None else None


def set_pointer(conn: Conn, schema: str, project: str, instance_id: str, session_id: str) -> None:
    """Point the editor instance at the session (replacing what it pointed at)."""
    if not is_valid_instance_id(instance_id):
        raise SessionError(f"invalid instance id {instance_id!r}")
    try:
        conn.execute(
            q(
                schema,
                "INSERT INTO {s}.pointers (project, instance_id, session_id) VALUES (%s, %s, %s)"
                " ON CONFLICT (owner, project, instance_id)"
                " DO UPDATE SET session_id = excluded.session_id, updated_at = now()",
            ),
            (text_value(project), instance_id, _checked_id(session_id)),
        )
    except psycopg.errors.ForeignKeyViolation:
        raise SessionNotFoundError(f"no session {session_id} in the PostgreSQL store") from None


def get_pointer(conn: Conn, schema: str, project: str, instance_id: str) -> str | None:
    """Return the session the editor instance points at, or None."""
    row = conn.execute(
        q(
            schema,
            "SELECT session_id FROM {s}.pointers"
            " WHERE owner = {me} AND project = %s AND instance_id = %s",
        ),
        (text_value(project), instance_id),
    ).fetchone()
    return str(row[0]) if row else None


def delete_pointer(conn: Conn, schema: str, project: str, instance_id: str) -> None:
    """Forget the editor instance's pointer."""
    conn.execute(
        q(
            schema,
            "DELETE FROM {s}.pointers WHERE owner = {me} AND project = %s AND instance_id = %s",
        ),
        (text_value(project), instance_id),
    )


def set_listing(
    conn: Conn, schema: str, session_id: str, title: str | None, turns: int, phase: str | None
) -> None:
    """Keep the listing's columns in step with the events (title, turns, phase)."""
    conn.execute(
        q(
            schema,
            "UPDATE {s}.sessions SET title = %s, turns = %s, phase = %s"
            " WHERE owner = {me} AND session_id = %s",
        ),
        (text_value(title) if title is not None else None, turns, phase, session_id),
    )


def set_host(conn: Conn, schema: str, session_id: str, host: str) -> None:
    """Record the machine a session is being written from."""
    conn.execute(
        q(schema, "UPDATE {s}.sessions SET host = %s WHERE owner = {me} AND session_id = %s"),
        (text_value(host)[:255], session_id),
    )
