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

# pg_trgm where it is or can be installed (trusted since PostgreSQL 13: a role with CREATE on
# the database may create it); without it there is no trigram index and a search reads
# every text, with the same results. One server at a time installs it (per database).
_TRIGRAMS = """DO $$
DECLARE
    home text;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_trgm') THEN
        PERFORM pg_advisory_xact_lock(hashtext('agent-assist pg_trgm'));
        BEGIN
            CREATE EXTENSION IF NOT EXISTS pg_trgm;
        EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported THEN
            RAISE WARNING 'pg_trgm cannot be installed (%): search reads every text', SQLERRM;
        END;
    END IF;
    SELECT n.nspname INTO home FROM pg_extension e
        JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    IF home IS NOT NULL THEN
        EXECUTE format('CREATE INDEX search_texts_grams ON {s}.search_texts'
            ' USING gin (norm %I.gin_trgm_ops)', home);
    END IF;
END
$$"""

# The step, tool and paths of a search row from its event (`scope`: more conditions on `t`).
BACKFILL = """UPDATE {{s}}.search_texts t SET
    step = CASE WHEN t.part = 0 THEN e.step ELSE (SELECT c.step FROM {{s}}.events c
        WHERE c.owner = t.owner AND c.session_id = t.session_id AND c.seq <= t.seq
            AND c.type = 'assistant/chunk' ORDER BY c.seq DESC LIMIT 1) END,
    tool = CASE WHEN t.part = 0 AND t.type IN ('tool/call', 'tool/result')
        THEN e.event->'data'->>'name' END,
    paths = CASE WHEN t.part = 0 THEN {{s}}.search_paths(t.type, e.event->'data') END
    FROM {{s}}.events e
    WHERE e.owner = t.owner AND e.session_id = t.session_id AND e.seq = t.seq{scope}"""

# Search (session/pg/search.py): one row per searchable text of an event, as the local
# index's `event_rows`, and how far each session is indexed. `search_pattern` is a second,
# restrictive policy: a search sets `agent_assist.search_pattern` (a LIKE pattern) for its
# transaction and sees only the rows that match it. Being a policy's, that condition may
# use the trigram index; the same `LIKE` in the query's own WHERE may not, under forced
# row-level security, because `textlike` is not leakproof. Unset, it matches every row.
# `owner` is collated "C", as `current_user` (a `name`) is: `owner = current_user` can then
# use the indexes that start with it (with the default collation it cannot).
_V2 = (
    """CREATE TABLE {s}.search_texts (
        owner text COLLATE "C" NOT NULL DEFAULT current_user,
        session_id text NOT NULL,
        seq bigint NOT NULL CHECK (seq >= 0),
        part smallint NOT NULL CHECK (part IN (0, 1)),
        type text NOT NULL,
        turn integer,
        ts timestamptz NOT NULL,
        text text NOT NULL,
        norm text NOT NULL,
        PRIMARY KEY (owner, session_id, seq, part),
        FOREIGN KEY (owner, session_id) REFERENCES {s}.sessions ON DELETE CASCADE
    )""",
    # newest first, in the order a search takes them (see session/pg/search.py)
    "CREATE INDEX search_texts_by_time ON {s}.search_texts (owner, ts, session_id, seq, part)",
    _TRIGRAMS,
    """CREATE TABLE {s}.search_progress (
        owner text COLLATE "C" NOT NULL DEFAULT current_user,
        session_id text NOT NULL,
        indexed_seq bigint NOT NULL DEFAULT -1,
        stream_text text,
        stream_seq bigint,
        stream_turn integer,
        PRIMARY KEY (owner, session_id),
        FOREIGN KEY (owner, session_id) REFERENCES {s}.sessions ON DELETE CASCADE
    )""",
    *_owned("search_texts"),
    *_owned("search_progress"),
    """CREATE POLICY search_pattern ON {s}.search_texts AS RESTRICTIVE FOR SELECT
        USING (norm LIKE coalesce(
            nullif(current_setting('agent_assist.search_pattern', true), ''), '%'))""",
    "GRANT SELECT, INSERT, DELETE ON {s}.search_texts TO PUBLIC",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON {s}.search_progress TO PUBLIC",
)

# The listing's columns kept as events are written, not only when a snapshot is (the phase).
_V3 = ("ALTER TABLE {s}.sessions ADD COLUMN phase text",)
# "Previous session found (… on HOST)": the host of the server that last opened it to write.
_V4 = ("ALTER TABLE {s}.sessions ADD COLUMN host text",)

# Search hits carry their step and filters narrow them (session/search/filters.py): the
# step, the tool name and the paths a row names, as the local index keeps them. The rows
# already there get them from their events here; under forced row-level security this
# role's only, so each other role's are filled by its next search (`backfilled`, false
# for every row there now, true for rows made from now on). `search_paths` is the SQL
# twin of `filters.tool_paths`/`joined_paths` (the rows written from now on are made in
# Python); a stream's row (part 1) takes the step of its last chunk.
_PATH_ARGS = "'path', 'paths', 'file', 'files', 'file_path', 'filename', 'directory'"
_V5 = (
    "ALTER TABLE {s}.search_texts ADD COLUMN step integer, ADD COLUMN tool text,"
    " ADD COLUMN paths text",
    "ALTER TABLE {s}.search_progress ADD COLUMN stream_step integer,"
    " ADD COLUMN stream_ts timestamptz, ADD COLUMN backfilled boolean NOT NULL DEFAULT false",
    "ALTER TABLE {s}.search_progress ALTER COLUMN backfilled SET DEFAULT true",
    f"""CREATE FUNCTION {{s}}.search_paths(kind text, data jsonb) RETURNS text
        LANGUAGE sql IMMUTABLE AS $$
        SELECT E'\\n' || string_agg(p, E'\\n') || E'\\n' FROM (
            SELECT regexp_replace(regexp_replace(btrim(v, ' '), '^(\\./)+', ''), '/+$', '') AS p
            FROM (
                SELECT el #>> '{{{{}}}}' AS v FROM jsonb_each(CASE WHEN kind = 'tool/call'
                    AND jsonb_typeof(data->'args') = 'object' THEN data->'args'
                    ELSE '{{{{}}}}'::jsonb END) a, jsonb_array_elements(CASE
                    WHEN jsonb_typeof(a.value) = 'array' THEN a.value
                    ELSE jsonb_build_array(a.value) END) el
                WHERE a.key IN ({_PATH_ARGS}) AND jsonb_typeof(el) = 'string'
                    AND (jsonb_typeof(a.value) = 'array' OR el = a.value)
                UNION ALL
                SELECT el #>> '{{{{}}}}' FROM jsonb_array_elements(CASE
                    WHEN kind = 'workspace/drift' THEN coalesce(data->'modified', '[]')
                        || coalesce(data->'deleted', '[]') || coalesce(data->'created', '[]')
                    ELSE '[]'::jsonb END) el
                WHERE jsonb_typeof(el) = 'string'
            ) listed
        ) normal WHERE p <> '' AND strpos(p, E'\\n') = 0
    $$""",  # noqa: S608
    "GRANT UPDATE (step, tool, paths) ON {s}.search_texts TO PUBLIC",
    BACKFILL.format(scope=""),
    "UPDATE {s}.search_progress SET backfilled = true",
)
# Lists that stay fast (#43). Whether a session is listed or folded (`records._LISTED`'s
# condition without its parameters) is kept as a column, set by a trigger whenever a row is
# inserted or its turns, title, snapshot or project are written (not on an event's append,
# which touches only `next_seq` and `updated_at`); an index in the listing's order holds
# it, so a page's keys are an index-only scan of offset + limit entries, never a sort of
# the project's rows nor a read of their snapshots. The listing's total comes from
# `session_counts`, kept by a second trigger for the (owner, project) pairs that have a
# row there, so it costs one row, not a count of 100,000. The migrating role's rows and
# counts are made here (the ALTER TABLE holds the table: no writer races them); each other
# role's, under forced row-level security, by its first listing (`records.prepare_counts`,
# which takes the table's write lock for that instant), and its rows also by their next
# write; a listing that finds them missing and may not write counts and reads as before.
# The new index starts with the old one's columns, which it replaces.
_LISTABLE = """(NEW.turns > 0 OR NEW.title IS NOT NULL
    OR coalesce(NEW.snapshot->>'summary', '') <> ''
    OR coalesce(NEW.snapshot->'recent_messages', '[]'::jsonb) <> '[]'::jsonb)"""
_V6 = (
    "ALTER TABLE {s}.sessions ADD COLUMN listable boolean",
    f"""CREATE FUNCTION {{s}}.session_listable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.listable := {_LISTABLE};
            RETURN NEW;
        END
    $$""",
    """CREATE TRIGGER session_listable
        BEFORE INSERT OR UPDATE OF turns, title, snapshot, project, listable ON {s}.sessions
        FOR EACH ROW EXECUTE FUNCTION {s}.session_listable()""",
    "UPDATE {s}.sessions SET listable = NULL",  # the trigger sets it
    "CREATE INDEX sessions_listing ON {s}.sessions (owner, project, updated_at DESC, session_id)"
    " INCLUDE (listable)",
    "CREATE INDEX sessions_unfilled ON {s}.sessions (owner, project) WHERE listable IS NULL",
    "DROP INDEX {s}.sessions_by_project",
    """CREATE TABLE {s}.session_counts (
        owner text NOT NULL DEFAULT current_user,
        project text NOT NULL,
        listed bigint NOT NULL CHECK (listed >= 0),
        folded bigint NOT NULL CHECK (folded >= 0),
        PRIMARY KEY (owner, project)
    )""",
    """CREATE FUNCTION {s}.session_counted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP <> 'INSERT' THEN
                UPDATE {s}.session_counts SET listed = listed - (OLD.listable IS TRUE)::int,
                    folded = folded - (OLD.listable IS FALSE)::int
                    WHERE owner = OLD.owner AND project = OLD.project;
            END IF;
            IF TG_OP <> 'DELETE' THEN
                UPDATE {s}.session_counts SET listed = listed + (NEW.listable IS TRUE)::int,
                    folded = folded + (NEW.listable IS FALSE)::int
                    WHERE owner = NEW.owner AND project = NEW.project;
            END IF;
            RETURN NULL;
        END
    $$""",
    # (on any update whose row changed either: the first trigger may have set `listable`)
    """CREATE TRIGGER session_counted AFTER INSERT OR DELETE ON {s}.sessions
        FOR EACH ROW EXECUTE FUNCTION {s}.session_counted()""",
    """CREATE TRIGGER session_recounted AFTER UPDATE ON {s}.sessions FOR EACH ROW
        WHEN (OLD.listable IS DISTINCT FROM NEW.listable OR OLD.project <> NEW.project)
        EXECUTE FUNCTION {s}.session_counted()""",
    """INSERT INTO {s}.session_counts (owner, project, listed, folded)
        SELECT owner, project, count(*) FILTER (WHERE listable),
            count(*) FILTER (WHERE NOT listable) FROM {s}.sessions GROUP BY owner, project""",
    *_owned("session_counts"),
    "GRANT SELECT, INSERT, UPDATE, DELETE ON {s}.session_counts TO PUBLIC",
)
MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "sessions, events, pointers, checkpoints, blobs; owner-only RLS", _V1),
    Migration(2, "search texts with a trigram index (pg_trgm) and search progress", _V2),
    Migration(3, "the session's phase as a listing column", _V3),
    Migration(4, "the machine a session was last written from", _V4),
    Migration(5, "search rows' step, tool and paths (filters), filled from the events", _V5),
    Migration(6, "listed or folded per session, the listing's index and its counts", _V6),
)
