"""A hostile clone names its files with characters a terminal obeys.

`templates/**` is tracked; file names holding CR, ESC (`\\x1b[2J` clears the screen),
U+2028 or NEL would reach the drift message, the resume block (and so the model and the
terminal chat) as they are. The manifest refuses them: they are never tracked, a warning
says how many were skipped (escaped, once), and no message names them raw.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lsprotocol import types

from lsp_server.fake_model import FakeOpenAI
from session.terminal_text import has_controls
from tests.e2e.harness import Editor, shown

HOSTILE_NAMES = ["a\rb.txt", "\x1b[2J.txt", "line\u2028sep.txt", "nel\x85.txt"]
RAW = ["\r", "\x1b", "\u2028", "\x85"]


def create(path: Path, text: str) -> None:
    """Create a file whose name Path helpers might normalise: os.open, byte for byte."""
    fd = os.open(os.fsencode(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def log_texts(editor: Editor) -> list[str]:
    out = []
    for m in editor.client.log_messages:
        out.append(m.message if isinstance(m, types.LogMessageParams) else m["message"])
    return out


def assert_no_raw(where: str, text: str) -> None:
    for char in RAW:
        assert char not in text, f"{char!r} in {where}: {text!r}"


async def test_names_with_control_characters_are_refused_and_never_shown_raw(
    make_editor: Any, fake: FakeOpenAI, workspace: Path
) -> None:
    templates = workspace / "templates"
    create(templates / HOSTILE_NAMES[0], "before the first session\n")  # in its baseline
    fake.add("first answer")
    first: Editor = make_editor()
    await first.start()
    await first.ready()
    await first.request("agentAssist/chat", {"text": "first question"})
    await first.request("agentAssist/save")
    await first.request("agentAssist/save")  # a second scan: nothing said again
    skipped = [t for t in log_texts(first) if "skipped" in t and "control" in t]
    assert len(skipped) == 1, log_texts(first)
    assert "1 file name(s)" in skipped[0] and "a␍b.txt" in skipped[0]
    await first.stop()

    for name in HOSTILE_NAMES[1:]:
        create(templates / name, "created since\n")
    (workspace / "agent_spec.md").write_text("# Support agent\nfour tools\n")

    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    drift = await editor.wait_for("agentAssist/drift")
    assert drift["modified"] == ["agent_spec.md"]
    assert drift["created"] == [] and drift["deleted"] == []
    assert_no_raw("the drift notification", json.dumps(drift, ensure_ascii=False))
    for message in shown(editor):
        assert_no_raw("a shown message", message)
    context = (await editor.request("agentAssist/resume"))["context"]
    assert "agent_spec.md: modified" in context
    assert_no_raw("the resume block", context)
    fake.add("noted")
    await editor.request("agentAssist/chat", {"text": "what changed?"})
    assert_no_raw("the system prompt", fake.system_text(-1))

    skipped = [t for t in log_texts(editor) if "skipped" in t and "control" in t]
    assert len(skipped) == 1, log_texts(editor)  # once, all four counted, escaped
    assert "4 file name(s)" in skipped[0]
    assert "␛[2J.txt" in skipped[0] and "line\\u2028sep.txt" in skipped[0]
    assert_no_raw("the warning", skipped[0])
    await editor.stop()

    manifests = [
        event.data.manifest
        for event in _events(workspace, editor)
        if getattr(event.data, "manifest", None)
    ]
    assert manifests, "a manifest was recorded"
    for manifest in manifests:
        assert not any(has_controls(path) for path in manifest), manifest


def _events(workspace: Path, editor: Editor) -> list[Any]:
    from tests.e2e.harness import stored

    store = stored(workspace, editor.home)
    session_id = store.list_sessions()[0].session_id
    return list(store.read_events(session_id).events)
