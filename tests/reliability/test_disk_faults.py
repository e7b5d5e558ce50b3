"""Disk faults: the store on a full filesystem, and a store that turns read-only.

A small tmpfs is mounted for the store (this needs root, as in CI; otherwise the full-disk
tests are skipped and the read-only one falls back to file modes). The real server keeps
running, the user gets a clear error, the previous snapshot stays intact, and once space
(or write access) returns the server records and saves again.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI
from session.local.manager import SessionManager

from ..e2e.harness import Editor
from .conftest import FIGURES, model_options, register_store

FS_BYTES = 8 * 1024 * 1024
FAULT_WORDS = ("No space left on device", "Read-only file system", "Permission denied")


def _mount(target: Path, options: str) -> bool:
    target.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "agent-assist-test", str(target)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A fresh 8 MB tmpfs holding the store; unmounted afterwards."""
    mount_point = tmp_path / "small"
    if not _mount(mount_point, f"size={FS_BYTES},mode=0700"):
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(directory: Path) -> Path:
    """Fill the filesystem holding `directory` to the last byte; return the filler file."""
    filler = directory / "filler.bin"
    with open(filler, "wb", buffering=0) as fh:
        for size in (1 << 20, 1 << 16, 1 << 12, 1 << 8, 1):
            try:
                while True:
                    fh.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    return filler


def snapshot_bytes(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in home.rglob("*.json")}


def assert_fault_error(exc: BaseException) -> None:
    """A JSON-RPC RequestFailed whose message says what went wrong on the disk."""
    assert isinstance(exc, JsonRpcException), repr(exc)
    assert exc.code == -32803, (exc.code, exc.message)
    assert any(word in exc.message for word in FAULT_WORDS), exc.message


async def expect_fault(editor: Editor, method: str, params: dict[str, Any]) -> str:
    with pytest.raises(JsonRpcException) as caught:
        await editor.request(method, params)
    assert_fault_error(caught.value)
    return caught.value.message


def check_store(workspace: Path, home: Path, session_id: str, inputs: list[str]) -> None:
    """The log is whole (valid lines, dense seq) and holds every completed turn."""
    manager = SessionManager(workspace, home=home)
    log = manager.layout.log_path(session_id)
    records = [json.loads(line) for line in log.read_bytes().splitlines()]
    assert [r["seq"] for r in records] == list(range(len(records)))
    completed = {
        r["turn"] for r in records if r["type"] == "turn/end" and r["data"]["reason"] == "completed"
    }
    started = {r["turn"]: r["data"]["input"] for r in records if r["type"] == "turn/start"}
    assert [started[t] for t in sorted(completed)] == inputs
    opened = manager.open_session(session_id)
    try:
        assert not opened.read_only, opened.read_only_reason
        assert opened.open_turn is None
    finally:
        opened.close()
    assert not list(home.rglob(".*.tmp")), "temporary files left behind"


async def test_full_disk_keeps_the_snapshot_and_recovers(
    tmp_path: Path, small_fs: Path, workspace: Path
) -> None:
    home = register_store(small_fs / "store")
    with FakeOpenAI() as fake:
        editor = Editor(workspace, home, options={"instanceId": "w", "model": model_options(fake)})
        await editor.start()
        try:
            session_id = (await editor.ready())["sessionId"]
            done = []
            for text in ("first question", "second question"):
                reply = await editor.request("agentAssist/chat", {"text": text})
                assert reply["endReason"] == "completed"
                done.append(text)
            saved = await editor.request("agentAssist/save")
            before = snapshot_bytes(home)
            assert saved["path"] in {str(home / p) for p in before}

            filler = fill(small_fs)
            fake.add({"text": "a reply that cannot be stored " * 40, "chunk": 40})
            message = await expect_fault(editor, "agentAssist/chat", {"text": "third question"})
            FIGURES["disk.full.chat_errors"] += 1
            assert "session log" in message and "free some space" in message
            for method in ("agentAssist/save", "agentAssist/fork"):
                await expect_fault(editor, method, {})
            assert snapshot_bytes(home) == before  # the previous snapshot is intact
            found = await editor.request("agentAssist/search", {"query": "second question"})
            assert found["results"], "search answers from the index as it is"
            listed = await editor.request("agentAssist/sessions")
            assert [s["sessionId"] for s in listed["sessions"]] == [session_id]  # no half fork
            status = await editor.request("agentAssist/status")  # still answering
            assert status["sessionId"] == session_id
            assert editor.process.returncode is None

            filler.unlink()  # space returns
            reply = await editor.request("agentAssist/chat", {"text": "fourth question"})
            assert reply["endReason"] == "completed"
            done.append("fourth question")
            saved = await editor.request("agentAssist/save")
            after = json.loads(Path(saved["path"]).read_text())
            assert after["session_id"] == session_id
            FIGURES["disk.full.recovered"] += 1
        finally:
            with contextlib.suppress(Exception):
                await editor.stop()
    check_store(workspace, home, session_id, done)


async def test_exit_on_a_full_disk_then_resume(small_fs: Path, workspace: Path) -> None:
    """Closing the editor while the disk is full loses nothing that was recorded."""
    home = register_store(small_fs / "store")
    options: dict[str, Any]
    with FakeOpenAI() as fake:
        options = {"instanceId": "w", "model": model_options(fake)}
        editor = Editor(workspace, home, options=options)
        await editor.start()
        session_id = (await editor.ready())["sessionId"]
        reply = await editor.request("agentAssist/chat", {"text": "remember the number 42"})
        assert reply["endReason"] == "completed"
        await editor.request("agentAssist/save")
        before = snapshot_bytes(home)
        filler = fill(small_fs)
        # A reply longer than a page: tmpfs takes small appends into the log's last page,
        # partly filled, without a new block, so a short turn could fit (when the running
        # summary was written first, it did).
        fake.add({"text": "a reply that cannot be stored " * 300, "chunk": 40})
        await expect_fault(editor, "agentAssist/chat", {"text": "lost to the full disk"})
        await editor.stop()  # the exit autosave fails: logged, the process still exits
        assert await editor.process.wait() == 0
        assert snapshot_bytes(home) == before
        filler.unlink()

        again = Editor(workspace, home, options=options)
        await again.start()
        try:
            changed = await again.ready()
            assert changed["sessionId"] == session_id and changed["reason"] == "resumed"
            history = await again.request("agentAssist/history")
            users = [i["text"] for i in history["items"] if i["role"] == "user"]
            assert users[0] == "remember the number 42"
            reply = await again.request("agentAssist/chat", {"text": "what was the number?"})
            # Turn 2 is numbered if its start fit in the log's last page, else not recorded.
            assert reply["endReason"] == "completed" and reply["turn"] in (2, 3)
        finally:
            await again.stop()
    check_store(workspace, home, session_id, ["remember the number 42", "what was the number?"])
    FIGURES["disk.full.exits"] += 1


async def test_start_on_a_full_disk(small_fs: Path, workspace: Path) -> None:
    """A server started on a full store answers with clear errors, then works once freed."""
    home = register_store(small_fs / "store")
    home.mkdir()
    filler = fill(small_fs)
    with FakeOpenAI() as fake:
        editor = Editor(workspace, home, options={"instanceId": "w", "model": model_options(fake)})
        await editor.start()
        try:
            session_id = (await editor.ready())["sessionId"]
            await expect_fault(editor, "agentAssist/chat", {"text": "hello?"})
            await expect_fault(editor, "agentAssist/save", {})
            assert (await editor.request("agentAssist/status"))["sessionId"] == session_id
            filler.unlink()
            reply = await editor.request("agentAssist/chat", {"text": "hello again"})
            assert reply["endReason"] == "completed"
            saved = await editor.request("agentAssist/save")
            assert json.loads(Path(saved["path"]).read_text())["session_id"] == session_id
        finally:
            await editor.stop()
    check_store(workspace, home, session_id, ["hello again"])
    FIGURES["disk.full.starts"] += 1


async def test_read_only_store_keeps_the_snapshot_and_recovers(
    small_fs: Path, workspace: Path
) -> None:
    """A store that became read-only while the editor was closed (Linux refuses to remount a
    file system read-only while a file on it is open for writing, so not mid-session)."""
    home = register_store(small_fs / "store")
    with FakeOpenAI() as fake:
        options = {"instanceId": "w", "model": model_options(fake)}
        editor = Editor(workspace, home, options=options)
        await editor.start()
        session_id = (await editor.ready())["sessionId"]
        reply = await editor.request("agentAssist/chat", {"text": "before"})
        assert reply["endReason"] == "completed"
        await editor.stop()
        before = snapshot_bytes(home)

        subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
        editor = Editor(workspace, home, options=options)
        await editor.start()
        try:
            changed = await editor.ready()
            assert changed == {"sessionId": session_id, "reason": "resumed"}
            warnings = [m.message for m in editor.client.messages]
            assert any(str(home) in m and "not writable" in m for m in warnings), warnings
            status = await editor.request("agentAssist/status")
            assert status["readOnly"] and status["sessionId"] == session_id
            history = await editor.request("agentAssist/history")
            assert [i["text"] for i in history["items"] if i["role"] == "user"] == ["before"]
            message = await expect_fault(editor, "agentAssist/chat", {"text": "refused"})
            assert "make it writable" in message
            for method in ("agentAssist/save", "agentAssist/fork"):
                await expect_fault(editor, method, {})
            search = await editor.request("agentAssist/search", {"query": "before"})
            assert search["results"], "search answers from the index as it is"
            assert editor.process.returncode is None
            subprocess.run(["mount", "-o", "remount,rw", str(small_fs)], check=True)
            assert snapshot_bytes(home) == before
            reply = await editor.request("agentAssist/chat", {"text": "after"})
            assert reply["endReason"] == "completed"
            saved = await editor.request("agentAssist/save")
            assert json.loads(Path(saved["path"]).read_text())["session_id"] == session_id
            found = await editor.request("agentAssist/search", {"query": "after"})
            assert found["results"], "the index is written again"
        finally:
            await editor.stop()
    check_store(workspace, home, session_id, ["before", "after"])
    FIGURES["disk.read_only.recovered"] += 1
