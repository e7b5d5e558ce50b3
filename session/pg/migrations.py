"""The schema's versions: each migration is the SQL that takes version N-1 to N.

Every table of user data carries `owner` (the role that wrote the row, `current_user` by
default) and has row-level security enabled and forced, so each role, the tables' owner
included, sees and writes only its own rows. Keys start with `owner`, so a role can never
collide with (and so learn of) another role's rows. Privileges go to PUBLIC: who may
connect to the database is the boundary, the policies isolate the roles within it.
Events and blobs get no UPDATE privilege, and a trigger refuses updates of events even by
the tables' owner: the log is append-only.

A migration must keep what older readers need (add, do not rename or drop), because a
server that finds a newer schema still reads it (read-only).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    """The statements that take the schema to `version` (`{s}` is the schema)."""

    version: int
    description: str
    statements: tuple[str, ...]


def _owned(table: str) -> tuple[str, ...]:
    """Row-level security on `table`: enabled, forced, and one policy, the row's owner."""
    return (
        f"ALTER TABLE {{s}}.{table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {{s}}.{table} FORCE ROW LEVEL SECURITY",
        f"CREATE POLICY owner_only ON {{s}}.{table} "
        "USING (owner = current_user) WITH CHECK (owner = current_user)",
    )


_V1 = (
    """CREATE TABLE {s}.sessions (
        owner text NOT NULL DEFAULT current_user,
        session_id text NOT NULL CHECK (session_id ~ '^[a-f0-9]{{12}}$'),
        project text NOT NULL,
        workspace_root text,
        instance_id text,
        parent_session_id text,
        fork_boundary bigint,
        persistence text NOT NULL DEFAULT 'full' CHECK (persistence IN ('full', 'metadata')),
        title text,
        turns integer NOT NULL DEFAULT 0,
        next_seq bigint NOT NULL DEFAULT 0 CHECK (next_seq >= 0),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        snapshot jsonb,
        snapshot_seq bigint,
        PRIMARY KEY (owner, session_id)
    )""",
    "CREATE INDEX sessions_by_project ON {s}.sessions (owner, project, updated_at DESC)",
    """CREATE TABLE {s}.events (
        owner text NOT NULL DEFAULT current_user,
        session_id text NOT NULL,
        seq bigint NOT NULL CHECK (seq >= 0),
        ts timestamptz NOT NULL,
        type text NOT NULL,
        turn integer,
        step integer,
        event jsonb NOT NULL,
        PRIMARY KEY (owner, session_id, seq),
        FOREIGN KEY (owner, session_id) REFERENCES {s}.sessions ON DELETE CASCADE
    )""",
    """CREATE FUNCTION {s}.events_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'session events are append-only';
        END
    $$""",
    """CREATE TRIGGER events_are_append_only BEFORE UPDATE ON {s}.events
        FOR EACH ROW EXECUTE FUNCTION {s}.events_are_append_only()""",
    """CREATE TABLE {s}.pointers (
        owner text NOT NULL DEFAULT current_user,
        project text NOT NULL,
        instance_id text NOT NULL,
        session_id text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (owner, project, instance_id),
        FOREIGN KEY (owner, session_id) REFERENCES {s}.sessions ON DELETE CASCADE
    )""",
    """CREATE TABLE {s}.blobs (
        owner text NOT NULL DEFAULT current_user,
        digest text NOT NULL,
        size bigint NOT NULL,
        data bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (owner, digest),
        CHECK (digest = encode(sha256(data), 'hex')),
        CHECK (size = length(data))
    )""",
    """CREATE TABLE {s}.checkpoints (
        owner text NOT NULL DEFAULT current_user,
        session_id text NOT NULL,
        number integer NOT NULL CHECK (number >= 1),
        seq bigint NOT NULL CHECK (seq >= 0),
        created_at timestamptz NOT NULL,
        record jsonb NOT NULL,
        PRIMARY KEY (owner, session_id, number),
        FOREIGN KEY (owner, session_id) REFERENCES {s}.sessions ON DELETE CASCADE
    )""",
    """CREATE TABLE {s}.checkpoint_files (
        owner text NOT NULL DEFAULT current_user,
        session_id text NOT NULL,
        number integer NOT NULL,
        path text NOT NULL,
        digest text NOT NULL,
        PRIMARY KEY (owner, session_id, number, path),
        FOREIGN KEY (owner, session_id, number) REFERENCES {s}.checkpoints ON DELETE CASCADE,
        FOREIGN KEY (owner, digest) REFERENCES {s}.blobs
    )""",
    "CREATE INDEX checkpoint_files_by_blob ON {s}.checkpoint_files (owner, digest)",
    *_owned("sessions"),
    *_owned("events"),
    *_owned("pointers"),
    *_owned("blobs"),
    *_owned("checkpoints"),
    *_owned("checkpoint_files"),
    "GRANT USAGE ON SCHEMA {s} TO PUBLIC",
    "GRANT SELECT ON {s}.schema_version TO PUBLIC",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON {s}.sessions, {s}.pointers TO PUBLIC",
    "GRANT SELECT, INSERT, DELETE ON {s}.events, {s}.blobs TO PUBLIC",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON {s}.checkpoints, {s}.checkpoint_files TO PUBLIC",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "sessions, events, pointers, checkpoints, blobs; owner-only RLS", _V1),
)
