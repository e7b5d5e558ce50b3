"""Another local account: it can neither read the sessions nor hand the server a store.

Through the real server: everything it writes under the store (logs, snapshots, the SQLite
indexes and their journals, checkpoint blobs) is private to the user, whatever the umask; a
store directory open to others is made private; one that belongs to another account is
refused with a clear error, and nothing is written into it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI

from ..e2e.harness import Editor


def modes_open_to_others(root: Path) -> list[str]:
    found = []
    for path in [root, *root.rglob("*")]:
        st = os.lstat(path)
        if stat.S_IMODE(st.st_mode) & 0o077:
            found.append(f"{path.relative_to(root)}: {stat.S_IMODE(st.st_mode):o}")
    return found


async def test_everything_the_server_writes_is_private_to_the_user(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    previous = os.umask(0o002)  # the server inherits it: a permissive one, as on many desktops
    try:
        fake.add({"tool_calls": [{"name": "read_file", "arguments": {"path": "agent_spec.md"}}]})
        fake.add("It describes an agent.")
        editor: Editor = make_editor()
        await editor.start()
        await editor.ready()
        await editor.request("agentAssist/chat", {"text": "what is in the spec?"})
        await editor.request("agentAssist/checkpoint", {"label": "before"})
        await editor.request("agentAssist/search", {"query": "agent"})
        await editor.request("agentAssist/sessions", {})
        await editor.stop()
    finally:
        os.umask(previous)
    assert len(list(home.rglob("*.sqlite"))) >= 1  # the indexes were written, and checked
    assert modes_open_to_others(home) == []


async def test_a_store_open_to_others_is_made_private(
    make_editor, fake: FakeOpenAI, home: Path
) -> None:
    home.mkdir()
    os.chmod(home, 0o777)
    fake.add("Hello.")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    await editor.request("agentAssist/chat", {"text": "hi"})
    await editor.stop()
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert modes_open_to_others(home) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
async def test_a_store_of_another_account_is_refused_and_left_alone(
    make_editor, fake: FakeOpenAI, home: Path
) -> None:
    home.mkdir(mode=0o700)
    planted = home / "projects"
    planted.mkdir(mode=0o777)
    os.chown(home, 65534, 65534)  # nobody's: another account prepared it
    os.chown(planted, 65534, 65534)
    before = sorted(p.name for p in home.rglob("*"))
    editor: Editor = make_editor()
    await editor.start()
    with pytest.raises(JsonRpcException) as refused:
        await editor.request("agentAssist/status", {})
    assert "belongs to another account" in refused.value.message
    assert "AGENT_ASSIST_HOME" in refused.value.message
    await editor.stop()
    assert sorted(p.name for p in home.rglob("*")) == before  # nothing written into it
