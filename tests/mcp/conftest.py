"""Fixtures for `agent-assist mcp`: stores with several sessions, and the SDK's stdio client.

Sessions are recorded through the real store API (`create_session`, `append`, the session
core's `SessionLifecycle`), on the local files or on PostgreSQL (`AGENT_ASSIST_TEST_PG`; a
schema of its own). The server is `agent-assist mcp` spawned by the official SDK's client
(`mcp.client.stdio`); one client lives on a thread of its own for a whole module, so the
tests share a server process and stay synchronous.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import pytest

from session.derive.messages import text_message
from session.lifecycle import SessionLifecycle
from session.store.backend import SessionStore
from tests.cli.conftest import REPO, clean_env
from tests.file_timeline import write_history

PG_ENV = "AGENT_ASSIST_TEST_PG"
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token: redacted when written
LONG_RESULT = "".join(f"line {n}: the quick brown fox\n" for n in range(2000))  # ~60 KB


@dataclass
class Stores:
    """The data under test: which store, its environment, the folders and the session ids."""

    kind: str
    env: dict[str, str]
    workspace: Path
    other: Path
    home: Path
    ids: dict[str, str] = field(default_factory=dict)
    dsn: str | None = None
    schema: str | None = None
    before: str = ""  # `stored_digest` before any server ran


def stored_digest(stores: Stores) -> str:
    """Return a digest of what the store holds: every row, or the sessions' files.

    Locally the machine-local derived caches (`*.sqlite`) are left out: a listing and a
    search refresh them as the CLI's do.
    """
    import hashlib

    if stores.dsn is not None:
        from tests.pg.conftest import connect

        with connect(stores.dsn) as conn:
            tables = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY 1",
                (stores.schema,),
            ).fetchall()
            parts = []
            for (table,) in tables:
                row = conn.execute(
                    f"SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), ''))"
                    f' FROM "{stores.schema}"."{table}" t'
                ).fetchone()
                parts.append(f"{table}:{row[0] if row else ''}")
        return str(hashlib.sha256("\n".join(parts).encode()).hexdigest())
    files = sorted(p for p in stores.home.rglob("*") if p.is_file() and ".sqlite" not in p.name)
    listed = [f"{p.relative_to(stores.home)}:{p.read_bytes().hex()}" for p in files]
    return str(hashlib.sha256("\n".join(listed).encode()).hexdigest())


def record(store: SessionStore, turns: list[tuple[str, str]], instance: str) -> str:
    """Record a real session through the session core (no model): questions and answers."""
    lifecycle = SessionLifecycle(store, instance)
    lifecycle.start_fresh()
    for question, answer in turns:
        recorder = lifecycle.begin_turn(question)
        recorder.start_step([])
        recorder.chunk(answer)
        recorder.assistant_message(text_message(answer))
        recorder.end_step()
        recorder.end("completed")
    session_id = lifecycle.session_id
    lifecycle.close()
    return session_id


def record_tools(store: Any) -> str:
    """A session with the file timeline's history, a decision, and a long tool result."""
    from tests.search_timeline import Clock

    writer = store.create_session()
    write_history(writer, store, Clock())
    writer.append("session/decision", {"text": "Keep the config in YAML"}, turn=2)
    writer.append("turn/start", {"input": f"read the big log (token {SECRET})"}, turn=3)
    writer.append("step/start", {"messages": []}, turn=3, step=1)
    call = {"tool_call_id": "r1", "name": "read_file", "args": {"path": "big.log"}}
    writer.append("tool/call", call, turn=3, step=1)
    result = {"tool_call_id": "r1", "name": "read_file", "content": LONG_RESULT}
    writer.append("tool/result", result, turn=3, step=1)
    writer.append("step/end", {"usage": {}}, turn=3, step=1)
    writer.append("step/start", {"messages": []}, turn=3, step=2)
    answer = {"message": text_message("The log holds 2000 fox lines.")}
    writer.append("assistant/message", answer, turn=3, step=2)
    writer.append("step/end", {"usage": {}}, turn=3, step=2)
    writer.append("turn/end", {"reason": "completed"}, turn=3)
    summary = {"summary": "Config work.", "decisions": ["Port 8080"], "covers_seq": 5, "turns": 1}
    writer.append("session/summary", summary)
    store.save(writer)
    session_id: str = writer.session_id
    writer.close()
    return session_id


def record_metadata(store: Any) -> str:
    """A session kept with metadata-only persistence."""
    writer = store.create_session(persistence="metadata")
    writer.append("turn/start", {"input": "a private plan about walruses"}, turn=1)
    writer.append("session/decision", {"text": "walruses first"}, turn=1)
    writer.append("turn/end", {"reason": "completed"}, turn=1)
    store.save(writer)
    session_id: str = writer.session_id
    writer.close()
    return session_id


def populate(stores: Stores, open_store: Any) -> None:
    """Three sessions here (`populate_late` adds the rest)."""
    here = open_store(stores.workspace)
    ids = stores.ids
    ids["tools"] = record_tools(here)
    for n in range(2):
        ids[f"plain{n}"] = record(here, [(f"question {n} about zebras", f"answer {n}")], f"i{n}")
    _close(here)


def populate_late(stores: Stores, open_store: Any) -> None:
    """Two more sessions here (one metadata-only), one in another project."""
    here = open_store(stores.workspace)
    ids = stores.ids
    ids["plain2"] = record(here, [("question 2 about zebras", "answer 2")], "i2")
    ids["meta"] = record_metadata(here)
    elsewhere = open_store(stores.other)
    ids["other"] = record(elsewhere, [("secret elsewhere zebras", "other answer")], "o")
    _close(here)
    _close(elsewhere)


def _close(store: Any) -> None:
    if store.kind == "postgresql":
        store.close()


@pytest.fixture(scope="module", params=["local", "postgresql"])
def stores(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stores]:
    root = tmp_path_factory.mktemp(f"mcp-{request.param}")
    workspace, other, home = root / "project", root / "other", root / "home"
    workspace.mkdir()
    other.mkdir()
    (workspace / "config.yaml").write_text("name: demo\n")
    if request.param == "local":
        from session.local.manager import SessionManager

        found = Stores("local", clean_env(home), workspace.resolve(), other.resolve(), home)
        populate(found, lambda folder: SessionManager(folder, home=home))
        populate_late(found, lambda folder: SessionManager(folder, home=home))
        found.before = stored_digest(found)
        yield found
        return
    dsn = os.environ.get(PG_ENV)
    if not dsn:
        pytest.skip(f"{PG_ENV} is not set: no PostgreSQL server for the store tests")
    from session.pg.backend import PgSessionStore
    from tests.pg.conftest import connect

    schema = f"aam_{secrets.token_hex(6)}"
    env = clean_env(home, {"AGENT_ASSIST_STORE": dsn, "AGENT_ASSIST_STORE_SCHEMA": schema})
    found = Stores("postgresql", env, workspace.resolve(), other.resolve(), home, dsn=dsn)
    found.schema = schema
    try:
        populate(found, lambda folder: PgSessionStore.open(dsn, folder, home=home, schema=schema))
        # The database's search index is caught up by a search that may write (the editor's,
        # `sessions search`): the sessions here are, but one (`plain2`, `meta`, `other`
        # recorded after the catch-up) is searched from its events by `agent-assist mcp`.
        from session.pg import PgStore
        from session.pg.search import catch_up

        with PgStore.open(dsn, schema=schema) as writable:
            catch_up(writable)
        populate_late(
            found, lambda folder: PgSessionStore.open(dsn, folder, home=home, schema=schema)
        )
        found.before = stored_digest(found)
        yield found
    finally:
        with connect(dsn) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class Client:
    """The SDK's stdio client to one `agent-assist mcp`, driven from synchronous tests."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path, errlog: TextIO) -> None:
        from mcp.client.stdio import StdioServerParameters

        self.params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "lsp_server.cli", "mcp", *args],
            env={**env, "PYTHONPATH": str(REPO)},
            cwd=str(cwd),
        )
        self.errlog = errlog
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.ready: Future[Any] = Future()
        self.main = asyncio.run_coroutine_threadsafe(self._main(), self.loop)
        self.session = self.ready.result(timeout=120)

    async def _main(self) -> None:
        from mcp.client.session import ClientSession
        from mcp.client.stdio import stdio_client

        self.stop = asyncio.Event()
        try:
            async with stdio_client(self.params, errlog=self.errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    self.ready.set_result(session)
                    await self.stop.wait()
        except BaseException as exc:
            if not self.ready.done():
                self.ready.set_exception(exc)
            raise

    def run(self, coroutine: Any) -> Any:
        """Run a coroutine of the client's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=120)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> tuple[bool, str]:
        """Call a tool: whether it is an error, and its text."""
        result = self.run(self.session.call_tool(name, arguments or {}))
        text = "".join(getattr(part, "text", "") for part in result.content)
        return bool(result.is_error), text

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool that must answer; return its JSON."""
        is_error, text = self.call(name, arguments)
        assert not is_error, text
        found: dict[str, Any] = json.loads(text)
        return found

    def close(self) -> None:
        """Close stdin and wait for the client (and the server) to end."""
        self.loop.call_soon_threadsafe(self.stop.set)
        self.main.result(timeout=120)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=60)
        self.loop.close()


def spawn(stores: Stores, tmp: Path, *args: str) -> Iterator[tuple[Client, Path]]:
    """Yield a client to `agent-assist mcp ARGS` started in the project, and its stderr file."""
    log = tmp / f"stderr-{secrets.token_hex(3)}.txt"
    with log.open("w") as errlog:
        client = Client(list(args), stores.env, stores.workspace, errlog)
        try:
            yield client, log
        finally:
            client.close()


@pytest.fixture(scope="module")
def served(
    stores: Stores, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Client, Path]]:
    """One server over the project, for the whole module."""
    yield from spawn(stores, tmp_path_factory.mktemp("mcp-log"))


@pytest.fixture
def client(served: tuple[Client, Path]) -> Client:
    return served[0]
