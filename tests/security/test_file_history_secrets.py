"""A file's timeline never copies a secret into the store (#42), in either store.

The model writes a file whose name marks it as secrets (`.env`), and one whose content holds
an API key or a configured secret (before or after the write); the user types a key into a
tracked file (a drift). Every change is recorded by its digests, its `withheld` says why no
content was kept, and no byte of the secrets is anywhere in the store: its files grepped,
or the database's blobs and events.
"""

from __future__ import annotations

import os
from pathlib import Path

from session.file_changes import SECRET_FILE_WITHHELD, SECRET_WITHHELD
from tests.store.conftest import Backend, backend
from tests.store.test_file_changes import change, events, open_lifecycle, turn_of_writes

__all__ = ["backend"]

API_KEY = "sk-" + "Q7fA2mZr9LkX4pWc8NvB1yTe"  # an OpenAI-looking key (split: not a real one)
CONFIGURED = "hunter2-corral-battery-staple"  # a secret the user configured
SECRETS = (API_KEY.encode(), CONFIGURED.encode(), b"DB_PASSWORD=swordfish-9931")


def secret_bytes_in_store(backend: Backend) -> list[str]:
    """Return where any of the secrets is stored (empty: nowhere)."""
    if backend.kind == "local":
        found = []
        home = Path(backend.holder_args[2])
        for directory, _, names in os.walk(home):
            for name in names:
                data = (Path(directory) / name).read_bytes()
                found += [f"{directory}/{name}" for s in SECRETS if s in data]
        return found
    import psycopg

    schema = backend.holder_args[2]
    dsn = os.environ["AGENT_ASSIST_TEST_PG"]
    found = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for secret in SECRETS:
            for table, column in (("blobs", "data"), ("events", "convert_to(event::text, 'UTF8')")):
                row = conn.execute(
                    f'SELECT count(*) FROM "{schema}".{table} WHERE position(%s IN {column}) > 0',
                    (secret,),
                ).fetchone()
                if row and row[0]:
                    found.append(f"{table}: {secret[:6]!r}…")
    return found


async def test_no_secret_reaches_a_blob(backend: Backend) -> None:
    store = backend.store
    root = store.workspace_root
    keyed = f"api_key: {API_KEY}\n".encode()
    (root / "settings.yaml").write_bytes(keyed)  # the model removes the key: before is secret
    lifecycle = open_lifecycle(store, "sec", secrets=(CONFIGURED,))
    env = b"DB_PASSWORD=swordfish-9931\n"
    configured = f"token = {CONFIGURED}\n".encode()
    written = b"api_key: read from the environment\n"
    await turn_of_writes(
        lifecycle,
        (".env", env),
        ("settings.yaml", b"api_key: read from the environment\n"),
        ("notes.md", configured),
    )
    files = [r["files"] for r in events(store, lifecycle.session_id, "tool/result")]
    assert files == [
        [change(".env", None, env, SECRET_FILE_WITHHELD)],
        [change("settings.yaml", keyed, written, SECRET_WITHHELD)],
        [change("notes.md", None, configured, SECRET_WITHHELD)],
    ]

    # The user pastes a key into a tracked file: the drift records digests only.
    pasted = f"api_key: {API_KEY}\n".encode()
    (root / "settings.yaml").write_bytes(pasted)
    assert lifecycle.check_live_drift(["settings.yaml"]) is not None
    drift = events(store, lifecycle.session_id, "workspace/drift")[-1]
    assert drift["changes"] == [change("settings.yaml", written, pasted, SECRET_WITHHELD)]
    lifecycle.close()

    assert secret_bytes_in_store(backend) == []
    blobs = store.checkpoint_store()
    assert blobs.read_blob(change("x", env, None)["before"]) is None
