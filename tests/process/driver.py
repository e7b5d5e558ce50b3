"""A raw LSP client for process tests: it can stop answering, close pipes, or be killed.

`LspProcess` runs the real server as a subprocess and speaks Content-Length frames to it
from a reader thread. Unlike an editor it can leave the server's requests unanswered (a
resume prompt, a `workspace/applyEdit` of a tool), close either pipe, and record every frame
with the time it arrived. `python -m tests.process.driver` runs it as a client process of
its own, brings the server into a state and waits to be killed (SIGKILL of the editor).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.e2e.harness import REPO, server_env

# The client capabilities of an editor that applies edits (tools write through it).
CAPABILITIES: dict[str, Any] = {
    "workspace": {
        "applyEdit": True,
        "workspaceEdit": {"documentChanges": True, "resourceOperations": ["create"]},
    },
    "window": {"workDoneProgress": True},
}
STATES = ("idle", "streaming", "stalled", "tool", "prompt")
# States in which a session has been written to: the way out must leave it saved.
SAVED_STATES = ("answered", "streaming", "stalled", "tool")


class LspProcess:
    """The server as a subprocess, with every frame it sends recorded."""

    def __init__(
        self,
        workspace: Path,
        home: Path,
        options: dict[str, Any],
        stderr: Path,
        *,
        answer: frozenset[str] = frozenset(),
        process_id: int | None = None,
    ) -> None:
        self.workspace = workspace
        self.options = options
        self.answer = answer  # server->client request methods this client answers
        self.process_id = process_id
        self._stderr = stderr.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lsp_server.cli", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=server_env(home),
            cwd=str(REPO),
        )
        self.frames: list[tuple[float, dict[str, Any]]] = []
        self.cond = threading.Condition()
        self._closing = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    # -- wire ---------------------------------------------------------------------------

    def _read(self) -> None:
        # select + os.read, never a blocking read: the test may close stdout while we wait
        # (a BufferedReader closed under a blocked reader would deadlock on its lock).
        stream = self.proc.stdout
        assert stream is not None
        fd = stream.fileno()
        buffer = b""
        while not self._closing.is_set():
            readable, _, _ = select.select([fd], [], [], 0.05)
            if not readable:
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            if not data:
                return
            buffer += data
            while True:
                head, sep, rest = buffer.partition(b"\r\n\r\n")
                if not sep:
                    break
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                if len(rest) < length:
                    break
                body, buffer = json.loads(rest[:length]), rest[length:]
                self._received(body)

    def _received(self, body: dict[str, Any]) -> None:
        with self.cond:
            self.frames.append((time.monotonic(), body))
            self.cond.notify_all()
        if "method" in body and "id" in body and body["method"] in self.answer:
            self.send({"jsonrpc": "2.0", "id": body["id"], "result": None})

    def close_stdout(self) -> None:
        """Close our reading end of the server's stdout (a broken pipe for the server)."""
        self._closing.set()
        self.reader.join(5)
        assert self.proc.stdout is not None
        self.proc.stdout.close()

    def send(self, message: dict[str, Any]) -> None:
        """Write one framed message to the server's stdin."""
        data = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.proc.stdin.flush()

    def request(self, msg_id: Any, method: str, params: Any = None) -> None:
        """Send a request without waiting for its answer."""
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}})

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def wait_frame(self, match: Any, timeout: float = 20.0) -> dict[str, Any]:
        """Wait for a frame for which `match(frame)` is true; raise TimeoutError."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for _, frame in self.frames:
                    if match(frame):
                        return frame
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no matching frame in {timeout} s")
                self.cond.wait(left)

    def wait_method(self, method: str, count: int = 1, timeout: float = 20.0) -> dict[str, Any]:
        """Wait until `count` frames with `method` arrived; return the last."""
        seen: list[dict[str, Any]] = []

        def match(frame: dict[str, Any]) -> bool:
            if frame.get("method") == method and not any(frame is s for s in seen):
                seen.append(frame)
            return len(seen) >= count

        return self.wait_frame(match, timeout)

    def wait_response(self, msg_id: Any, timeout: float = 20.0) -> dict[str, Any]:
        """Wait for the response to request `msg_id`."""
        return self.wait_frame(lambda f: f.get("id") == msg_id and "method" not in f, timeout)

    def frames_after(self, moment: float) -> list[dict[str, Any]]:
        """Return the frames that arrived after `moment` (time.monotonic)."""
        with self.cond:
            return [frame for at, frame in self.frames if at > moment]

    # -- session ------------------------------------------------------------------------

    def initialize(self) -> None:
        """initialize + initialized, like an editor."""
        uri = self.workspace.as_uri()
        self.request(
            "init",
            "initialize",
            {
                "processId": self.process_id,
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "project"}],
                "capabilities": CAPABILITIES,
                "initializationOptions": self.options,
                "clientInfo": {"name": "Process Test"},
            },
        )
        self.wait_response("init")
        self.notify("initialized")

    def close_pipes(self) -> None:
        """Close both pipes, as the kernel does when the editor dies."""
        self._closing.set()
        self.reader.join(5)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def stop(self) -> None:
        """Make sure the server is gone (test clean-up)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.close_pipes()
        self._stderr.close()


def script_for(state: str) -> list[Any]:
    """The model replies that bring a server into `state` (for the fake model)."""
    if state == "answered":
        return ["an answer"]
    if state == "streaming":
        return [{"text": "a long and slowly streamed answer " * 40, "chunk": 4, "delay": 0.05}]
    if state == "stalled":
        return [{"hang": "the first words, then nothing "}]
    if state == "tool":
        call = {"name": "write_file", "arguments": {"path": "notes/plan.md", "content": "# x\n"}}
        return [{"tool_calls": [call]}, "written"]
    return []


def bring_into(client: LspProcess, state: str) -> None:
    """Drive an initialized server into `state` (the model is scripted by `script_for`)."""
    if state == "prompt":
        client.wait_method("window/showMessageRequest")
        return
    client.wait_method("agentAssist/sessionChanged")
    if state == "idle":
        return
    client.request("chat-1", "agentAssist/chat", {"text": f"bring the server into {state}"})
    if state == "streaming":
        client.wait_method("agentAssist/chatDelta", count=3)
    elif state == "stalled":
        client.wait_method("agentAssist/chatDelta")
    elif state == "tool":
        client.wait_method("workspace/applyEdit")
    elif state == "answered":  # idle again after a whole turn
        client.wait_response("chat-1")


def main(argv: list[str] | None = None) -> int:
    """Run as an editor process: start a server, bring it into a state, wait to be killed."""
    parser = argparse.ArgumentParser(prog="python -m tests.process.driver")
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--state", choices=STATES, required=True)
    parser.add_argument("--stderr", type=Path, required=True)
    parser.add_argument("--model-url", required=True)
    args = parser.parse_args(argv)
    options = {
        "instanceId": "proc",
        "model": {"name": "m", "baseUrl": args.model_url, "apiKey": "k"},
    }
    client = LspProcess(args.workspace, args.home, options, args.stderr)
    client.initialize()
    bring_into(client, args.state)
    sys.stdout.write(f"{client.proc.pid}\n")
    sys.stdout.flush()
    while True:  # until killed
        time.sleep(3600)


if __name__ == "__main__":
    raise SystemExit(main())
