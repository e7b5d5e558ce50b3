"""One deletion for every edge: under the session's lock, refused while another process holds it."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError, text_block

from lsp_server.fake_model import FakeOpenAI
from session.errors import SessionLockedError
from tests.acp.harness import agent_env
from tests.cli.conftest import run_cli


async def test_delete_takes_the_lock_and_the_cli_refuses_a_session_acp_holds(
    start, stored, store_env: dict[str, str], workspace: Path, home: Path, fake: FakeOpenAI
) -> None:
    async with start() as agent:
        await agent.initialize()
        fake.add("ok")
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await agent.conn.prompt(session_id=sid, prompt=[text_block("delete me later")])

        cli_env = agent_env(home, store_env)
        rm = ("sessions", "rm", sid, "--yes", "--workspace", str(workspace))
        refused = run_cli(*rm, env=cli_env)  # the ACP agent holds it
        assert refused.returncode == 1 and "in use" in refused.stderr
        await agent.conn.close_session(session_id=sid)

        store = stored()
        lock = store.acquire_lock(sid)  # this test's process holds it now, as a writer would
        try:
            with pytest.raises(SessionLockedError):
                store.acquire_lock(sid).release()  # the lock is exclusive, even here
            with pytest.raises(RequestError) as held:
                await agent.raw("session/delete", {"sessionId": sid})
            assert "in use" in str(held.value)
            assert store.exists(sid)
        finally:
            lock.release()
        assert await agent.raw("session/delete", {"sessionId": sid}) == {}
        assert not store.exists(sid)
        listed = run_cli("sessions", "list", "--workspace", str(workspace), env=cli_env)
        assert sid not in listed.stdout
