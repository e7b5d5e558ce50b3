"""The client's files over ACP: `read_file` reads the editor's buffer (`fs/read_text_file`)
when the client can, after every check of the path; an edit's question names the live call."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from acp import RequestError, text_block
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
)

from lsp_server.fake_model import FakeOpenAI
from session.events import ToolResultEvent
from session.store.backend import SessionStore
from tests.acp.harness import Recorder, Running

Start = Callable[..., AbstractAsyncContextManager[Running]]
UNSAVED = "the editor's unsaved text\n"


class Editor(Recorder):
    """A client with buffers: `fs/read_text_file` answers their text (or fails)."""

    def __init__(self, failing: bool = False) -> None:
        super().__init__()
        self.reads: list[tuple[str, str]] = []  # (session id, path) asked
        self.failing = failing
        self.seen_when_asked: list[int] = []  # updates received before each question

    async def request_permission(
        self, options: Any, session_id: str, tool_call: Any, **kwargs: Any
    ) -> Any:
        self.seen_when_asked.append(len(self.updates))
        return await super().request_permission(options, session_id, tool_call, **kwargs)

    async def read_text_file(
        self, path: str, session_id: str, **kwargs: Any
    ) -> ReadTextFileResponse:
        self.reads.append((session_id, path))
        if self.failing:
            raise RequestError.internal_error({"details": "no such buffer"})
        return ReadTextFileResponse(content=UNSAVED)


async def begin(agent: Running, workspace: Path, *, reads: bool) -> str:
    await agent.conn.initialize(
        protocol_version=1,
        client_capabilities=ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=reads, write_text_file=False)
        ),
        client_info=Implementation(name="acp-test", version="1.0"),
    )
    return (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id


def read(path: str, call: str = "r1") -> dict[str, object]:
    return {"tool_calls": [{"name": "read_file", "arguments": {"path": path}, "id": call}]}


def results(store: SessionStore, sid: str) -> list[Any]:
    """Return the session's recorded tool results."""
    return [e.data for e in store.read_events(sid).events if isinstance(e, ToolResultEvent)]


async def test_read_file_reads_the_editors_unsaved_text(
    start: Start, workspace: Path, fake: FakeOpenAI, stored: Callable[[], SessionStore]
) -> None:
    (workspace / "notes.md").write_text("saved on disk\n")
    editor = Editor()
    async with start(client=editor) as agent:
        sid = await begin(agent, workspace, reads=True)
        fake.add(read("./notes.md"), "read it")
        answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("read notes")])
        assert answer.stop_reason == "end_turn"
    assert editor.reads == [(sid, str(workspace.resolve() / "notes.md"))]  # absolute
    [result] = results(stored(), sid)
    assert (result.content, result.is_error) == (UNSAVED, False)
    told = [m for m in fake.messages() if m["role"] == "tool"]
    assert told[-1]["content"] == UNSAVED


async def test_a_client_that_cannot_read_files_is_not_asked(
    start: Start, workspace: Path, fake: FakeOpenAI, stored: Callable[[], SessionStore]
) -> None:
    (workspace / "notes.md").write_text("saved on disk\n")
    editor = Editor()
    async with start(client=editor) as agent:
        sid = await begin(agent, workspace, reads=False)
        fake.add(read("notes.md"), "read it")
        await agent.conn.prompt(session_id=sid, prompt=[text_block("read notes")])
    assert editor.reads == []
    [result] = results(stored(), sid)
    assert result.content == "saved on disk\n"


async def test_a_refused_path_is_never_asked_of_the_client(
    start: Start, workspace: Path, fake: FakeOpenAI, stored: Callable[[], SessionStore]
) -> None:
    outside = workspace.parent / "outside-secret.txt"
    outside.write_text("secret\n")
    (workspace / "link.txt").symlink_to(outside)
    editor = Editor()
    async with start(client=editor) as agent:
        sid = await begin(agent, workspace, reads=True)
        fake.add(
            read("../outside-secret.txt", "r1"),
            read(str(outside), "r2"),
            read("link.txt", "r3"),
            "none of them",
        )
        answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("read secrets")])
        assert answer.stop_reason == "end_turn"
    assert editor.reads == []
    told = [m["content"] for m in fake.messages() if m["role"] == "tool"]
    assert len(told) == 3 and not any("secret\n" == t for t in told)
    assert all("outside the workspace or not allowed" in t for t in told)


async def test_a_client_read_that_fails_falls_back_to_disk(
    start: Start, workspace: Path, fake: FakeOpenAI, stored: Callable[[], SessionStore]
) -> None:
    (workspace / "notes.md").write_text("saved on disk\n")
    editor = Editor(failing=True)
    async with start(client=editor) as agent:
        sid = await begin(agent, workspace, reads=True)
        fake.add(read("notes.md"), "went on")
        answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("read notes")])
        assert answer.stop_reason == "end_turn"
        assert "went on" in "".join(
            u.content.text for u in editor.of(sid) if u.session_update == "agent_message_chunk"
        )
    assert len(editor.reads) == 1
    [result] = results(stored(), sid)
    assert (result.content, result.is_error) == ("saved on disk\n", False)
    log = agent.stderr.read_text()
    assert "fs/read_text_file" in log and "reading the disk" in log


async def test_an_edits_question_names_the_live_tool_call(
    start: Start, workspace: Path, fake: FakeOpenAI
) -> None:
    editor = Editor()
    async with start(client=editor) as agent:
        sid = await begin(agent, workspace, reads=False)
        edit = {"name": "write_file", "arguments": {"path": "a.md", "content": "a\n"}}
        protected = {"name": "write_file", "arguments": {"path": ".envrc", "content": "X=1\n"}}
        fake.add(
            {"tool_calls": [{**edit, "id": "call-edit-7"}]},
            {"tool_calls": [{**protected, "id": "call-env-8"}]},
            "done",
        )
        await agent.conn.prompt(session_id=sid, prompt=[text_block("write")])
        asked = [call.tool_call_id for call in editor.asked]
        assert asked == ["call-edit-7", "call-env-8"]
        # Each question came after the client was shown the call it names.
        for call_id, seen in zip(asked, editor.seen_when_asked, strict=True):
            shown = editor.updates[:seen]
            assert any(
                u.session_update == "tool_call" and u.tool_call_id == call_id for _, u in shown
            ), call_id
        assert (workspace / "a.md").read_text() == "a\n"
