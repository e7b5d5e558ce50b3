"""The terminal's `/search`: filter words, the request it sends, the table it prints."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rich.console import Console

from lsp_server import protocol as proto
from lsp_server.client import LspError
from lsp_server.terminal.search import search, search_words


def test_filter_words_and_flags_are_taken_out_of_the_text() -> None:
    assert search_words("config.yaml since:1d kind:tool-call") == (
        "config.yaml",
        {"since": "1d", "kind": "tool-call"},
    )
    assert search_words("--tool write_file broke --path=conf/ it --until yesterday") == (
        "broke it",
        {"tool": "write_file", "path": "conf/", "until": "yesterday"},
    )
    # not filters: an unknown key, an empty value, a flag without its value, a URL
    assert search_words("a:b since: http://x --since") == ("a:b since: http://x --since", {})


class FakeChat:
    def __init__(self, answer: Any) -> None:
        self.console = Console(record=True, width=160)
        self.workspace = Path()
        self.instance_id = "t"
        self.answer = answer
        self.sent: list[tuple[str, dict[str, Any] | None]] = []
        self.lines: list[str] = []

    def say(self, text: str, style: str | None = None) -> None:
        self.lines.append(text)

    def warn(self, text: str) -> None:
        self.lines.append("warning: " + text)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self.sent.append((method, params))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_the_request_carries_the_filters_and_the_table_shows_step_and_time() -> None:
    hit = {
        "sessionId": "0123456789ab",
        "seq": 4,
        "turn": 2,
        "step": 3,
        "ts": "2026-12-05T09:41:07.5Z",
        "type": "tool/call",
        "snippet": "write_file {[conf]/app.yaml}",
        "score": 1.0,
    }
    chat = FakeChat({"results": [hit]})
    asyncio.run(search(chat, "conf since:yesterday tool:write_file"))  # type: ignore[arg-type]
    assert chat.sent == [
        (proto.SEARCH, {"query": "conf", "limit": 20, "since": "yesterday", "tool": "write_file"})
    ]
    shown = chat.console.export_text()
    assert "step" in shown and "2026-12-05 09:41" in shown and "tool/call" in shown


def test_a_filter_the_server_cannot_read_is_a_warning() -> None:
    refused = LspError(proto.INVALID_PARAMS, "agentAssist/search: invalid field 'since': …")
    chat = FakeChat(refused)
    asyncio.run(search(chat, "conf since:someday"))  # type: ignore[arg-type]
    assert chat.lines == ["warning: agentAssist/search: invalid field 'since': …"]
    chat = FakeChat({"results": []})
    asyncio.run(search(chat, "since:1d"))  # type: ignore[arg-type]
    assert chat.sent == [] and chat.lines[0].startswith("Usage: /search <text>")
