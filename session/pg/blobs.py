"""Content-addressed blobs and checkpoint records with the files they keep.

A blob is one row per role and digest, shared by all the role's sessions. The table checks
that a blob's digest is the SHA-256 of its bytes, and `checkpoint_files` refers to blobs by
foreign key, so a checkpoint never names a blob that is not stored and a blob that a
checkpoint keeps cannot be deleted. A checkpoint's blobs and record are written in one
transaction holding the role's blob lock shared; the collector holds it alone, so it never
takes a blob a checkpoint being written is about to name, whatever the blob's age.
"""

from __future__ import annotations

import hashlib

import psycopg
from pydantic import ValidationError

from ..checkpoints import CheckpointRecord
from ..errors import SessionError
from ..redaction import Redactor
from .query import Conn, advisory_key, jsonb, q, text_value

BLOB_LOCK_TIMEOUT_S = 30  # a writer or collector waits this long for the other, then says so


def put_blob(conn: Conn, schema: str, data: bytes) -> str:
    """Store `data` once per role (the same bytes again add nothing); return its digest."""
    digest = hashlib.sha256(data).hexdigest()
    conn.execute(
        q(
            schema,
            "INSERT INTO {s}.blobs (digest, size, data) VALUES (%s, %s, %s)"
            " ON CONFLICT (owner, digest) DO NOTHING",
        ),
        (digest, len(data), data),
    )
    return digest


def get_blob(conn: Conn, schema: str, digest: str) -> bytes | None:
    """Return the blob's bytes (verified against its digest), or None."""
    row = conn.execute(
        q(schema, "SELECT data FROM {s}.blobs WHERE owner = {me} AND digest = %s"),
        (digest,),
    ).fetchone()
    if row is None:
        return None
    data = bytes(row[0])
    if hashlib.sha256(data).hexdigest() != digest:
        raise SessionError(f"blob {digest[:12]}… does not match its digest")
    return data


def put_checkpoint(conn: Conn, schema: str, record: CheckpointRecord, redactor: Redactor) -> None:
    """Store a checkpoint record and its files (their blobs must be stored already)."""
    payload = record.model_dump(mode="json")
    payload["title"] = redactor.scrub({"title": payload["title"]})["title"]
    try:
        with conn.transaction():
            conn.execute(
                q(
                    schema,
                    "INSERT INTO {s}.checkpoints (session_id, number, seq, created_at, record)"
                    " VALUES (%s, %s, %s, %s, %s)",
                ),
                (record.session_id, record.number, record.seq, record.created_at, jsonb(payload)),
            )
            with conn.cursor() as cur:
                cur.executemany(
                    q(
                        schema,
                        "INSERT INTO {s}.checkpoint_files (session_id, number, path, digest)"
                        " VALUES (%s, %s, %s, %s)",
                    ),
                    [
                        (record.session_id, record.number, text_value(path), digest)
                        for path, digest in record.files.items()
                    ],
                )
    except psycopg.errors.UniqueViolation:
        raise SessionError(
            f"session {record.session_id} already has checkpoint {record.number}"
        ) from None
    except psycopg.errors.ForeignKeyViolation as exc:
        raise SessionError(
            f"checkpoint {record.number} of session {record.session_id} refers to a session or "
            f"blob the store does not hold ({exc.diag.message_detail or exc})"
        ) from None


def list_checkpoints(conn: Conn, schema: str, session_id: str) -> list[CheckpointRecord]:
    """Return the session's checkpoint records, by number."""
    rows = conn.execute(
        q(
            schema,
            "SELECT record FROM {s}.checkpoints"
            " WHERE owner = {me} AND session_id = %s ORDER BY number",
        ),
        (session_id,),
    ).fetchall()
    records = []
    for (record,) in rows:
        try:
            records.append(CheckpointRecord.model_validate(record))
        except ValidationError as exc:
            raise SessionError(f"a checkpoint of session {session_id} is damaged: {exc}") from None
    return records


def hold_blobs(conn: Conn, schema: str, *, alone: bool) -> None:
    """Take the role's blob lock for the transaction: shared by writers, alone to collect."""
    key = advisory_key(schema, "blobs", conn.info.user or "")
    conn.execute(f"SET LOCAL lock_timeout = '{BLOB_LOCK_TIMEOUT_S}s'")
    take = "pg_advisory_xact_lock" if alone else "pg_advisory_xact_lock_shared"
    try:
        conn.execute(f"SELECT {take}(%s::bigint)", (key,))
    except psycopg.errors.LockNotAvailable:
        doing = "collect unused checkpoint copies" if alone else "write a checkpoint"
        raise SessionError(
            f"cannot {doing}: another connection held the store's checkpoint copies for "
            f"{BLOB_LOCK_TIMEOUT_S} s (a checkpoint being written, or a clean-up); try again"
        ) from None


# The digests the role's events name in `FileChange`s (tool results, restores, drifts).
_COLLECT = (
    "WITH referenced AS (SELECT DISTINCT v.digest FROM (SELECT CASE"
    " WHEN e.type = 'workspace/drift' THEN e.event->'data'->'changes'"
    " ELSE e.event->'data'->'files' END AS list"
    " FROM {s}.events e WHERE e.owner = {me}"
    " AND e.type IN ('tool/result', 'session/rewind', 'workspace/drift')) c"
    " CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(c.list) = 'array'"
    " THEN c.list ELSE '[]'::jsonb END) AS f(change)"
    " CROSS JOIN LATERAL (VALUES (f.change->>'before'), (f.change->>'after')) AS v(digest)"
    " WHERE v.digest IS NOT NULL)"
    " DELETE FROM {s}.blobs b WHERE owner = {me}"
    " AND NOT EXISTS (SELECT 1 FROM {s}.checkpoint_files f"
    " WHERE f.owner = b.owner AND f.digest = b.digest)"
    " AND b.digest NOT IN (SELECT digest FROM referenced) RETURNING digest"
)


def collect_garbage(conn: Conn, schema: str) -> list[str]:
    """Delete this role's blobs no checkpoint keeps and no event names, whatever their age."""
    with conn.transaction():
        hold_blobs(conn, schema, alone=True)
        rows = conn.execute(q(schema, _COLLECT)).fetchall()
    return [row[0] for row in rows]
