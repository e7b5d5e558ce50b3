"""`session/list` without `cwd`: every project's sessions, each with its project's directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError, text_block

from lsp_server.fake_model import FakeOpenAI
from tests.acp.harness import Running


async def asked(agent: Running, root: Path, fake: FakeOpenAI, question: str) -> str:
    sid = (await agent.conn.new_session(cwd=str(root), mcp_servers=[])).session_id
    fake.add("ok")
    await agent.conn.prompt(session_id=sid, prompt=[text_block(question)])
    return sid


async def test_list_without_cwd_lists_every_project_with_its_directory(
    start, workspace: Path, tmp_path: Path, fake: FakeOpenAI
) -> None:
    other = tmp_path / "other-project"
    other.mkdir()
    (other / "notes.md").write_text("# notes\n")
    async with start() as first:
        await first.initialize()
        here = await asked(first, workspace, fake, "in the first project")
        there = await asked(first, other, fake, "in the other project")
        await first.conn.close_session(session_id=there)
    async with start() as agent:  # a new process: nothing open, nothing named before
        await agent.initialize()
        listed = await agent.conn.list_sessions()
        found = {s.session_id: (s.cwd, s.title) for s in listed.sessions}
        updated = [s.updated_at for s in listed.sessions]
        assert updated == sorted(updated, reverse=True)  # newest first, whichever project
        assert found == {
            here: (str(workspace.resolve()), "in the first project"),
            there: (str(other.resolve()), "in the other project"),
        }
        project = await agent.conn.list_sessions(cwd=str(other))
        assert [s.session_id for s in project.sessions] == [there]
        # listed without a project, then deleted: the agent looks where the listing said
        assert await agent.raw("session/delete", {"sessionId": there}) == {}
        assert [s.session_id for s in (await agent.conn.list_sessions()).sessions] == [here]
        with pytest.raises(RequestError):
            await agent.conn.list_sessions(cursor="not-a-cursor")
