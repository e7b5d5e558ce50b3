"""Secrets never reach disk: every form of the corpus, read from a `.env` by the model and
quoted back in small streamed chunks, is in no byte of the store (logs, snapshots,
`index.sqlite`, `listing.sqlite` and their WAL files, checkpoint records and blobs), in no
export and in no search result; a base URL's password is in no error, log or stored event.

The attacker: a model that quotes what it read, in chunks that cut secrets anywhere.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI
from session.redaction import Redactor
from session.store.choose import SCHEMA_ENV, STORE_ENV
from tests.e2e import harness
from tests.e2e.conftest import store_kind  # local, and PostgreSQL with AGENT_ASSIST_TEST_PG
from tests.e2e.harness import REPO, Editor, server_env, shown, stored
from tests.unit.test_redaction import SECRET_FORMS

__all__ = ["store_kind"]

API_KEY = "sk-test-KEY-0123456789abcdef"  # the key `make_editor` configures
OPAQUE = b"opaque-pem-body-5521"  # a `.pem` whose content no pattern catches
SECRETS = [secret for _, secret in SECRET_FORMS] + [API_KEY]
ENV_TEXT = "\n".join(line for line, _ in SECRET_FORMS) + "\n"
# A reply quoting every secret, the configured key among them, mid-sentence.
QUOTED = (
    "Your .env holds:\n" + ENV_TEXT + f"and the key you configured is {API_KEY}, in case. Done."
)


def cli(home: Path, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", *args, "--workspace", str(workspace)],
        env=server_env(home),
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def leaks(data: bytes | str, secrets: list[str]) -> list[str]:
    """The secrets found in `data` (as UTF-8, and as JSON would escape them)."""
    raw = data.encode() if isinstance(data, str) else data
    found = []
    for secret in secrets:
        forms = {secret.encode(), json.dumps(secret)[1:-1].encode()}
        if any(form in raw for form in forms):
            found.append(secret)
    return found


def store_leaks(home: Path, secrets: list[str]) -> dict[str, list[str]]:
    """Every file under the store (SQLite files and their WAL included) holding a secret."""
    out = {}
    for path in sorted(home.rglob("*")):
        if path.is_file() and (found := leaks(path.read_bytes(), secrets)):
            out[str(path.relative_to(home))] = found
    return out


def pg_rows() -> dict[str, str]:
    """The rows (every column, as JSON text) of each table of the PostgreSQL store's schema."""
    if STORE_ENV not in harness.STORE_ENV:
        return {}
    import psycopg
    from psycopg import sql

    schema = harness.STORE_ENV[SCHEMA_ENV]
    out = {}
    with psycopg.connect(harness.STORE_ENV[STORE_ENV]) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchall()
        for (table,) in tables:
            query = sql.SQL("SELECT row_to_json(t)::text FROM {}.{} t").format(
                sql.Identifier(schema), sql.Identifier(table)
            )
            out[table] = "\n".join(row[0] for row in conn.execute(query).fetchall())
    return out


def pg_leaks(rows: dict[str, str], secrets: list[str]) -> dict[str, list[str]]:
    """The tables whose rows hold a secret (as text, or in hex: a bytea column's blob)."""
    out = {}
    for table, text in rows.items():
        found = leaks(text, secrets) + [s for s in secrets if s.encode().hex() in text]
        if found:
            out[table] = found
    return out


async def test_every_secret_form_is_kept_off_the_store_exports_and_search(
    make_editor: Any, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    (workspace / ".env").write_text(ENV_TEXT)
    (workspace / "templates" / "deploy.pem").write_bytes(OPAQUE)
    fake.add(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": ".env"}}]},
        {"text": QUOTED, "chunk": 3},
    )
    # The same text cut at other offsets: every secret split somewhere else.
    for size in (5, 7, 11):
        fake.add({"text": QUOTED, "chunk": size})
    fake.add({"text": "x" + QUOTED, "chunk": 2})
    options = {"instanceId": "w", "trackedFiles": ["agent_spec.md", "templates/**", ".env"]}
    editor: Editor = make_editor(options=options)
    await editor.start()
    await editor.ready()
    first = await editor.request("agentAssist/chat", {"text": "quote my .env back to me"})
    session_id = first["sessionId"]
    assert first["text"] == QUOTED and editor.deltas().startswith(QUOTED)
    for n in range(4):
        reply = await editor.request("agentAssist/chat", {"text": f"again, {n}: DB_PASSWORD=x"})
        assert reply["text"].endswith(QUOTED)
    # The user types one too.
    fake.add("noted")
    await editor.request("agentAssist/chat", {"text": "my password: typed-pw-8812 ok"})
    saved = await editor.request("agentAssist/save", {})
    plan = await editor.request(
        "agentAssist/checkpoint", {"number": saved["checkpoint"], "dryRun": True}
    )
    assert set(plan["withheldFiles"]) == {".env", "templates/deploy.pem"}
    results = []
    for secret in [*SECRETS, "typed-pw-8812", "DB_PASSWORD", "REDACTED", "sk-proj", "postgres://"]:
        found = await editor.request("agentAssist/search", {"query": secret})
        results.append(found)
        assert not leaks(json.dumps(found), [*SECRETS, "typed-pw-8812"]), secret
        if secret in SECRETS:
            assert found["results"] == [], secret  # no event holds it
    assert any(r["results"] for r in results)  # the searches do find the redacted text
    await editor.stop()

    exports = [
        cli(home, workspace, "sessions", "export", session_id, "--format", fmt).stdout
        for fmt in ("md", "json")
    ]
    exports.append(cli(home, workspace, "sessions", "show", session_id).stdout)
    exports.append(cli(home, workspace, "sessions", "search", "PASSWORD", "--json").stdout)
    assert "[REDACTED]" in exports[0] and "DB_PASSWORD" in exports[0]
    for out in exports:
        assert not leaks(out, [*SECRETS, "typed-pw-8812"])
    assert store_leaks(home, [*SECRETS, "typed-pw-8812", OPAQUE.decode()]) == {}
    rows = pg_rows()
    assert pg_leaks(rows, [*SECRETS, "typed-pw-8812", OPAQUE.decode()]) == {}
    assert not rows or "DB_PASSWORD=[REDACTED]" in rows["events"]  # the rows were read
    # The joined chunks of each turn are its text redacted, as `assistant/message` is.
    events = stored(workspace, home).read_events(session_id).events
    redacted = Redactor([API_KEY]).scrub_text(QUOTED)
    for turn in range(1, 5):
        chunks = [e for e in events if e.turn == turn and e.type == "assistant/chunk"]
        joined = "".join(e.data.delta for e in chunks)  # type: ignore[union-attr]
        assert joined.endswith(redacted) and len(chunks) > 3


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_base_url_password_is_never_shown_logged_or_stored(
    make_editor: Any, workspace: Path, home: Path
) -> None:
    password = "pw-base-url-4471"
    base_url = f"http://alice:{password}@127.0.0.1:{closed_port()}/v1"
    model = {"name": "test-model", "baseUrl": base_url, "apiKey": API_KEY, "maxRetries": 0}
    editor: Editor = make_editor(options={"instanceId": "w", "model": model})
    await editor.start()
    await editor.ready()
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/chat", {"text": "hello"})
    message = str(info.value)
    assert "could not connect" in message.lower() and "127.0.0.1" in message
    assert password not in message and "alice" not in message
    status = await editor.request("agentAssist/status")
    said = [*shown(editor), *(m.message for m in editor.client.log_messages), json.dumps(status)]
    await editor.stop()
    assert not leaks("\n".join(said), [password])
    assert store_leaks(home, [password]) == {}
    assert pg_leaks(pg_rows(), [password]) == {}
    out = cli(home, workspace, "sessions", "export", status["sessionId"], "--format", "json")
    assert "could not connect" in out.stdout.lower() and password not in out.stdout


async def test_the_configured_key_is_scrubbed_from_every_log_record(
    make_editor: Any, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    # A key of no known vendor form: only the server's knowledge of it can scrub it.
    key = "plain-Key-7741-qwerty"
    fake.add({"error": 401, "message": f"Incorrect API key provided: {key}.", "retry": False})
    model = {"name": "test-model", "baseUrl": fake.base_url, "apiKey": key, "maxRetries": 0}
    editor: Editor = make_editor(options={"instanceId": "w", "model": model})
    await editor.start()
    await editor.ready()
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/chat", {"text": "hello"})
    assert "Incorrect API key" in str(info.value) and key not in str(info.value)
    logged = [m.message for m in editor.client.log_messages]
    await editor.stop()
    stderr = await editor.process.stderr.read() if editor.process.stderr else b""
    assert any("Incorrect API key" in m for m in logged)  # the record was there, scrubbed
    assert key not in "\n".join(logged) and key.encode() not in stderr
    assert store_leaks(home, [key]) == {}
