"""A raw JSON-RPC client over the server's stdio: bytes in, framed messages out."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.e2e.harness import REPO, server_env


class RawServer:
    """The real server as a subprocess, spoken to in raw Content-Length frames."""

    def __init__(self, workspace: Path, home: Path, options: dict[str, Any]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lsp_server.cli", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=server_env(home),
            cwd=str(REPO),
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.responses: dict[Any, dict[str, Any]] = {}
        self.anonymous: list[dict[str, Any]] = []  # error responses with "id": null
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.workspace = workspace
        self.options = options

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            assert length is not None
            body = json.loads(stream.read(length))
            if "method" in body and "id" in body:  # a request from the server: answer null
                self.send({"jsonrpc": "2.0", "id": body["id"], "result": None})
            elif "id" in body and body["id"] is None:
                with self.cond:
                    self.anonymous.append(body)
            elif "id" in body:
                with self.cond:
                    self.responses[json.dumps(body["id"])] = body
                    self.cond.notify_all()

    def write(self, payload: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.write(json.dumps(message).encode())

    def wait(self, msg_id: Any, timeout: float = 30) -> dict[str, Any] | None:
        with self.cond:
            key = json.dumps(msg_id)
            self.cond.wait_for(lambda: key in self.responses, timeout)
            return self.responses.pop(key, None)

    def initialize(self) -> dict[str, Any] | None:
        uri = self.workspace.as_uri()
        self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "processId": None,
                    "rootUri": uri,
                    "workspaceFolders": [{"uri": uri, "name": "project"}],
                    "capabilities": {},
                    "initializationOptions": self.options,
                },
            }
        )
        result = self.wait("init")
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return result

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.alive:
            try:
                self.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
                self.wait("bye", 10)
                self.send({"jsonrpc": "2.0", "method": "exit"})
                self.proc.wait(10)
            except Exception:
                self.proc.kill()
                self.proc.wait()
