"""The model's edits over ACP: each asked with its diff (once, always, reject); a protected
path always asked; written through the client when it can write files."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import text_block

from lsp_server.fake_model import FakeOpenAI
from tests.acp.harness import Running


def write(path: str, content: str, call: str = "w1") -> dict[str, object]:
    return {
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": path, "content": content}, "id": call}
        ]
    }


async def new(agent: Running, workspace: Path) -> str:
    return (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id


async def test_an_edit_is_asked_with_its_diff_and_written_once_allowed(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    fake.add(write("templates/reply.txt", "Hello {name},\n"), "written")
    sid = await new(agent, workspace)
    await agent.conn.prompt(session_id=sid, prompt=[text_block("change the greeting")])
    call = next(u for u in agent.client.of(sid) if u.session_update == "tool_call")
    target = workspace / "templates" / "reply.txt"
    assert (call.kind, call.locations[0].path) == ("edit", str(target))
    [shown] = call.content  # the live tool call shows the diff too
    assert (shown.type, shown.old_text, shown.new_text) == (
        "diff",
        "Dear {name},\n",
        "Hello {name},\n",
    )
    [asked] = agent.client.asked
    [diff] = asked.content
    assert (diff.type, diff.path) == ("diff", str(target))
    assert (diff.old_text, diff.new_text) == ("Dear {name},\n", "Hello {name},\n")
    assert target.read_text() == "Hello {name},\n"


async def test_a_rejected_edit_writes_nothing_and_the_model_is_told(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    agent.client.answer = "reject"
    fake.add(write("notes.md", "hello\n"), "understood")
    sid = await new(agent, workspace)
    answer = await agent.conn.prompt(session_id=sid, prompt=[text_block("write notes")])
    assert answer.stop_reason == "end_turn"
    assert not (workspace / "notes.md").exists()
    told = [m for m in fake.messages() if m["role"] == "tool"]
    assert "did not apply" in told[-1]["content"]


async def test_allowed_for_the_session_the_next_edits_are_not_asked(
    agent: Running, workspace: Path, fake: FakeOpenAI
) -> None:
    agent.client.answer = "allow-always"
    fake.add(write("a.md", "a\n", "w1"), write("b.md", "b\n", "w2"), "both")
    sid = await new(agent, workspace)
    await agent.conn.prompt(session_id=sid, prompt=[text_block("write two files")])
    assert len(agent.client.asked) == 1
    assert (workspace / "b.md").read_text() == "b\n"


@pytest.mark.parametrize("answer", ["allow", None])
async def test_a_protected_path_is_asked_once_with_its_reason(
    agent: Running, workspace: Path, fake: FakeOpenAI, answer: str | None
) -> None:
    agent.client.answer = answer
    fake.add(write(".envrc", "export X=1\n"), "done")
    sid = await new(agent, workspace)
    result = await agent.conn.prompt(session_id=sid, prompt=[text_block("set up direnv")])
    assert result.stop_reason == "end_turn"
    [asked] = agent.client.asked  # the protected path's question, not a second one
    assert "direnv" in asked.title
    assert (workspace / ".envrc").exists() is (answer is not None)


async def test_a_client_that_writes_files_is_given_the_edit(
    start, workspace: Path, fake: FakeOpenAI
) -> None:
    async with start() as agent:
        await agent.initialize(writes=True)
        fake.add(write("notes.md", "from the model\n"), "sent")
        sid = await new(agent, workspace)
        await agent.conn.prompt(session_id=sid, prompt=[text_block("write notes")])
        assert agent.client.writes == [(str(workspace / "notes.md"), "from the model\n")]
        assert not (workspace / "notes.md").exists()  # the client's to write, not ours
