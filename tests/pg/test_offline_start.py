"""The real server started while its PostgreSQL database does not answer (issue #43).

Through `CuttableProxy` the database is away for the server only: it starts on the spool,
chat works, status says so, the user is told once; when the proxy lets connections through
again the spooled events are sent, in order and once, and the session goes on there. A
`kill -9` while offline loses no completed turn, a second machine writing the same project
meanwhile keeps its own session, and `agent-assist acp` started offline works the same way.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from acp import text_block
from lsprotocol import types

from lsp_server.fake_model import FakeOpenAI
from session.events import EVENT_ADAPTER
from session.pg.backend import PgSessionStore
from session.store.choose import SCHEMA_ENV, STORE_ENV
from tests.acp.harness import running_agent, texts
from tests.e2e.harness import Editor
from tests.pg.proxy import CuttableProxy
from tests.pg.test_outage import editor_on, messages, password_of

OFFLINE = "is unreachable: working offline"
BACK = "spooled events are stored"


@pytest.fixture
def proxy(pg_dsn: str) -> Iterator[CuttableProxy]:
    through = CuttableProxy(pg_dsn)
    yield through
    through.close()


async def status_until(editor: Editor, condition: Any, seconds: float = 60) -> dict[str, Any]:
    """Poll `agentAssist/status` until `condition(status["store"])` holds (a deadline)."""
    deadline = time.monotonic() + seconds
    while True:
        status: dict[str, Any] = await editor.request("agentAssist/status")
        if condition(status["store"]):
            return status
        assert time.monotonic() < deadline, f"timed out: {status['store']}"
        await asyncio.sleep(0.1)


async def told(editor: Editor, text: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not any(text in m for m in messages(editor)):
        assert time.monotonic() < deadline, f"never told {text!r}: {messages(editor)}"
        await asyncio.sleep(0.1)


def spooled(home: Path, session_id: str) -> list[dict[str, Any]]:
    [path] = list((home / "spool").rglob(f"{session_id}.events.jsonl"))
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return [EVENT_ADAPTER.validate_python(raw).model_dump(mode="json") for raw in lines]


def stored(dsn: str, schema: str, workspace: Path, session_id: str) -> list[dict[str, Any]]:
    store = PgSessionStore.open(dsn, workspace, schema=schema)
    try:
        events = store.read_events(session_id).events
    finally:
        store.close()
    return [e.model_dump(mode="json") for e in events]


def inputs(events: list[dict[str, Any]]) -> list[str]:
    assert [e["seq"] for e in events] == list(range(len(events)))  # dense, in order, once
    return [e["data"]["input"] for e in events if e["type"] == "turn/start"]


def same(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["seq"], e["type"], e["turn"], e["step"]) for e in events]


async def test_down_at_start_a_session_works_offline_and_is_sent_when_it_answers(
    proxy: CuttableProxy, pg_dsn: str, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    fake.add("offline answer", "second offline answer", "online again")
    proxy.cut()
    editor = editor_on(workspace, home, fake, proxy.dsn, schema)
    await editor.start()
    changed = await editor.ready()
    assert changed["reason"] == "new" and not editor.questions  # nothing to offer here yet
    session_id = changed["sessionId"]
    reply = await editor.request("agentAssist/chat", {"text": "written on the train"})
    assert reply["text"] == "offline answer"
    await editor.request("agentAssist/chat", {"text": "still on the train"})
    status = await status_until(editor, lambda store: store["pending"] > 0)
    assert status["store"]["kind"] == "postgresql" and status["store"]["online"] is False
    on_disk = spooled(home, session_id)
    assert status["store"]["pending"] == len(on_disk)
    await told(editor, OFFLINE)
    [notice] = [m for m in messages(editor) if OFFLINE in m]  # told once, naming the host
    assert f"PostgreSQL at 127.0.0.1:{proxy.port} is unreachable" in notice
    assert "kept on this machine and sent when it answers" in notice
    assert password_of(pg_dsn) not in str(messages(editor)) + str(status)
    assert not messages(editor, types.MessageType.Error)
    assert not any("cannot be reached" in m for m in messages(editor))  # not told twice
    with pytest.raises(Exception, match=f"127.0.0.1:{proxy.port}"):
        await editor.request("agentAssist/sessions", {})  # the list needs the database
    proxy.restore()
    status = await status_until(editor, lambda store: store["online"])
    assert status["store"]["pending"] == 0 and status["sessionId"] == session_id
    await told(editor, BACK)
    sent = stored(pg_dsn, schema, workspace, session_id)
    assert same(sent[: len(on_disk)]) == same(on_disk)  # the spooled events, in order, once
    assert [e["data"] for e in sent[: len(on_disk)]] == [e["data"] for e in on_disk]
    assert not list((home / "spool").rglob("*.events.jsonl"))
    await editor.request("agentAssist/chat", {"text": "in the office"})  # goes on there
    listed = await editor.request("agentAssist/sessions", {})
    assert [s["sessionId"] for s in listed["sessions"]] == [session_id]
    await editor.stop()
    assert inputs(stored(pg_dsn, schema, workspace, session_id)) == [
        "written on the train",
        "still on the train",
        "in the office",
    ]
    again = editor_on(workspace, home, fake, pg_dsn, schema)  # its pointer was written
    await again.start()
    changed = await again.ready()
    assert (changed["sessionId"], changed["reason"]) == (session_id, "resumed")
    await again.stop()


async def test_kill_9_offline_loses_no_turn_offline_or_online_next(
    proxy: CuttableProxy, pg_dsn: str, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    fake.add("first", "second")
    proxy.cut()
    editor = editor_on(workspace, home, fake, proxy.dsn, schema)
    await editor.start()
    session_id = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/chat", {"text": "before the crash"})
    await editor.kill()
    # Started offline again: the session born in the spool is offered and goes on as it is.
    again = editor_on(workspace, home, fake, proxy.dsn, schema)
    await again.start()
    changed = await again.ready()
    assert (changed["sessionId"], changed["reason"]) == (session_id, "resumed")
    assert any("Resume previous session?" in q.message for q in again.questions)
    await again.request("agentAssist/chat", {"text": "after the crash"})
    status = await again.request("agentAssist/status")
    assert status["turns"] == 2 and status["store"]["online"] is False
    await again.kill()
    assert inputs(spooled(home, session_id)) == ["before the crash", "after the crash"]
    # Started online: the spool left behind is sent.
    online = editor_on(workspace, home, fake, pg_dsn, schema)
    await online.start()
    await online.ready()
    await told(online, "spooled events sent to the database")
    listed = await online.request("agentAssist/sessions", {})
    row = next(s for s in listed["sessions"] if s["sessionId"] == session_id)
    assert (row["title"], row["turns"]) == ("before the crash", 2)
    await online.stop()
    assert inputs(stored(pg_dsn, schema, workspace, session_id)) == [
        "before the crash",
        "after the crash",
    ]
    assert not list((home / "spool").rglob("*.events.jsonl"))


async def test_another_machine_writing_the_project_meanwhile_keeps_its_own_session(
    proxy: CuttableProxy,
    pg_dsn: str,
    schema: str,
    workspace: Path,
    tmp_path: Path,
    fake: FakeOpenAI,
) -> None:
    fake.add("earlier", "on the laptop", "on the desk")
    # A session the laptop knows (and caches) from before the outage.
    laptop_home = tmp_path / "laptop-home"
    before = editor_on(workspace, laptop_home, fake, pg_dsn, schema)
    await before.start()
    earlier_id = (await before.ready())["sessionId"]
    await before.request("agentAssist/chat", {"text": "plan the kestrel survey"})
    await before.stop()
    proxy.cut()
    laptop = editor_on(workspace, laptop_home, fake, proxy.dsn, schema)
    await laptop.start()
    changed = await laptop.ready()  # offered from the cache; continued in a new session
    assert any("Resume previous session?" in q.message for q in laptop.questions)
    laptop_id = changed["sessionId"]
    assert laptop_id != earlier_id
    assert any(earlier_id in m and "continued in a new session" in m for m in messages(laptop))
    await laptop.request("agentAssist/chat", {"text": "written on the laptop"})
    system = fake.requests[-1].body["messages"][0]["content"]  # the earlier session's block
    assert "# Resumed Session Context" in system and earlier_id in system
    desk = Editor(  # another machine (home, instance), writing the database meanwhile
        workspace,
        tmp_path / "desk-home",
        options={**laptop.options, "instanceId": "desk"},
        env=laptop.env | {STORE_ENV: pg_dsn},
        resume_answer="New session",
    )
    await desk.start()
    desk_id = (await desk.ready())["sessionId"]
    await desk.request("agentAssist/chat", {"text": "written on the desk"})
    await desk.stop()
    proxy.restore()
    await status_until(laptop, lambda store: store["online"] and store["pending"] == 0)
    await laptop.stop()
    assert len({earlier_id, laptop_id, desk_id}) == 3
    assert inputs(stored(pg_dsn, schema, workspace, laptop_id)) == ["written on the laptop"]
    assert inputs(stored(pg_dsn, schema, workspace, desk_id)) == ["written on the desk"]
    assert inputs(stored(pg_dsn, schema, workspace, earlier_id)) == ["plan the kestrel survey"]


async def test_the_acp_agent_started_offline_works_and_its_session_is_sent_later(
    proxy: CuttableProxy, pg_dsn: str, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    fake.add("an answer over ACP")
    proxy.cut()
    env = {
        "AGENT_ASSIST_LLM_API_KEY": "sk-test-KEY-0123456789abcdef",
        STORE_ENV: proxy.dsn,
        SCHEMA_ENV: schema,
    }
    model = ("--model", "test-model", "--base-url", fake.base_url)
    async with running_agent(workspace, home, *model, env=env) as agent:
        await agent.initialize()
        new = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        session_id = new.session_id
        answer = await agent.conn.prompt(session_id=session_id, prompt=[text_block("on ACP")])
        assert answer.stop_reason == "end_turn"
        said = texts(agent.client.of(session_id), "agent_message_chunk")
        assert "an answer over ACP" in "".join(said)
        assert any(OFFLINE in text for text in said)  # told, naming the host
    assert inputs(spooled(home, session_id)) == ["on ACP"]
    proxy.restore()
    editor = editor_on(workspace, home, fake, pg_dsn, schema)  # the next start sends it
    await editor.start()
    await editor.ready()
    await told(editor, "spooled events sent to the database")
    await editor.stop()
    assert inputs(stored(pg_dsn, schema, workspace, session_id)) == ["on ACP"]


async def test_a_database_that_never_answers_lets_the_server_settle(
    pg_dsn: str, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    fake.add("answered anyway")
    silent = socket.create_server(("127.0.0.1", 0))  # takes connections, never says a word
    try:
        port = silent.getsockname()[1]
        dsn = pg_dsn.replace("127.0.0.1:5432", f"127.0.0.1:{port}")
        assert dsn != pg_dsn
        editor = editor_on(workspace, home, fake, dsn, schema)
        await editor.start()
        changed = await editor.wait_for("agentAssist/sessionChanged", timeout=30)
        assert changed["reason"] == "new"  # settled after the bounded connect timeout
        reply = await editor.request("agentAssist/chat", {"text": "hello?"})
        assert reply["text"] == "answered anyway"
        status = await editor.request("agentAssist/status")
        assert status["store"]["online"] is False and status["store"]["pending"] > 0
        await told(editor, f"PostgreSQL at 127.0.0.1:{port} is unreachable")
        await editor.stop()
    finally:
        silent.close()


async def test_a_machine_without_the_cache_rebuilds_it_online_and_offers_from_it_offline(
    proxy: CuttableProxy,
    pg_dsn: str,
    schema: str,
    workspace: Path,
    tmp_path: Path,
    fake: FakeOpenAI,
) -> None:
    fake.add("from the other machine", "continued offline")
    other = editor_on(workspace, tmp_path / "other-home", fake, pg_dsn, schema)
    await other.start()
    earlier_id = (await other.ready())["sessionId"]
    await other.request("agentAssist/chat", {"text": "written elsewhere"})
    await other.stop()
    home = tmp_path / "new-machine"
    online = editor_on(workspace, home, fake, proxy.dsn, schema, resume_answer="New session")
    await online.start()
    await online.ready()
    assert list((home / "cache" / "pg").rglob(f"{earlier_id}.snapshot.json"))  # rebuilt
    await online.kill()  # nothing saved at exit: what follows comes from the rebuilt cache
    proxy.cut()
    offline = editor_on(workspace, home, fake, proxy.dsn, schema)
    await offline.start()
    changed = await offline.ready()
    [question] = offline.questions
    assert "Previous session found" in question.message and "written elsewhere" in question.message
    assert changed["sessionId"] != earlier_id
    reply = await offline.request("agentAssist/chat", {"text": "go on"})
    assert reply["text"] == "continued offline"
    await offline.stop()


async def test_two_windows_offline_on_one_machine_each_send_their_own_spool(
    proxy: CuttableProxy, pg_dsn: str, schema: str, workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    fake.add("to a", "to b", "to b again")
    other = CuttableProxy(pg_dsn)  # window b's way to the database, back later than a's
    try:
        proxy.cut()
        other.cut()
        windows = []
        for name, dsn in (("a", proxy.dsn), ("b", other.dsn)):
            window = editor_on(workspace, home, fake, dsn, schema)
            window.options["instanceId"] = name
            await window.start()
            windows.append((window, (await window.ready())["sessionId"]))
        (a, a_id), (b, b_id) = windows
        await a.request("agentAssist/chat", {"text": "in window a"})
        await b.request("agentAssist/chat", {"text": "in window b"})
        proxy.restore()
        await told(a, BACK)  # a is back and sends what was left behind: never b's spool...
        await b.request("agentAssist/chat", {"text": "b goes on"})  # ...which b still writes
        other.restore()
        await status_until(b, lambda store: store["online"] and store["pending"] == 0)
        await a.stop()
        await b.stop()
    finally:
        other.close()
    assert not any(b_id in m for m in messages(a))
    assert inputs(stored(pg_dsn, schema, workspace, a_id)) == ["in window a"]
    assert inputs(stored(pg_dsn, schema, workspace, b_id)) == ["in window b", "b goes on"]
    assert not list((home / "spool").rglob("*.events.jsonl"))
