"""`agentAssist/sessions` over the real server: the sessions without a turn are folded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor, stored

MakeEditor = Callable[..., Editor]
VSCODE_ONLY = pytest.mark.parametrize("client_name", ["vscode"])


def saved_without_a_turn(workspace: Path, home: Path) -> str:
    """A session as an exit without a turn saves it (issue #39); return its id."""
    store = stored(workspace, home)
    writer = store.create_session()
    store.write_snapshot(writer)
    writer.close()
    return writer.session_id


@VSCODE_ONLY
async def test_sessions_without_a_turn_are_folded_but_counted(
    make_editor: MakeEditor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    fake.add("an answer")
    first = make_editor()
    await first.start()
    await first.ready()
    old_id = (await first.request("agentAssist/chat", {"text": "a question"}))["sessionId"]
    await first.stop()
    empties = [saved_without_a_turn(workspace, home) for _ in range(2)]

    editor = make_editor(resume_answer="New session")  # a fresh session: no turn yet
    await editor.start()
    current = (await editor.ready())["sessionId"]
    await editor.request("agentAssist/save")
    listed = await editor.request("agentAssist/sessions")
    # The current session is listed even without a turn: the picker marks it.
    assert [(s["sessionId"], s["active"]) for s in listed["sessions"]] == [
        (current, True),
        (old_id, False),
    ]
    assert (listed["total"], listed["empty"]) == (2, 2)
    page = await editor.request("agentAssist/sessions", {"offset": 1, "limit": 1})
    assert [s["sessionId"] for s in page["sessions"]] == [old_id]
    assert (page["total"], page["empty"]) == (2, 2)

    every = await editor.request("agentAssist/sessions", {"includeEmpty": True})
    ids = [s["sessionId"] for s in every["sessions"]]
    assert set(ids) == {current, old_id, *empties} and ids[-1] == old_id
    assert (every["total"], every["empty"]) == (4, 0)
    assert {s["sessionId"]: s["turns"] for s in every["sessions"]}[empties[0]] == 0

    fake.add("now a turn")
    await editor.request("agentAssist/chat", {"text": "in the current one"})
    listed = await editor.request("agentAssist/sessions")
    assert [s["sessionId"] for s in listed["sessions"]] == [current, old_id]
    assert (listed["total"], listed["empty"]) == (2, 2)
