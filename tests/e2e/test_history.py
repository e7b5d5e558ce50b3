"""Checkpoints, compaction and fork over LSP, against the loopback model."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor, stored

SMALL_WINDOW = {"contextWindow": 1000, "compactAt": 0.5}


def events_of(workspace: Path, home: Path, session_id: str) -> list:
    return stored(workspace, home).read_events(session_id).events


async def test_checkpoint_restore_brings_files_and_conversation_back(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    fake.add("first answer")
    await editor.request("agentAssist/chat", {"text": "first question"})
    saved = await editor.request("agentAssist/save")
    original = (workspace / "agent_spec.md").read_text()
    fake.add(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "agent_spec.md", "content": "# v2\n"}}
            ]
        },
        "rewrote the spec",
    )
    await editor.request("agentAssist/chat", {"text": "second question: rewrite the spec"})
    assert (workspace / "agent_spec.md").read_text() == "# v2\n"
    listing = await editor.request("agentAssist/checkpoint", {})
    numbers = [c["number"] for c in listing["checkpoints"]]
    assert numbers == [1, 2] and listing["checkpoints"][1]["title"] == "After turn 2"
    restored = await editor.request("agentAssist/checkpoint", {"number": saved["checkpoint"]})
    assert restored["restoredFiles"] == ["agent_spec.md"]
    assert (workspace / "agent_spec.md").read_text() == original
    if editor.client_name == "vscode":
        assert any("agent_spec.md" in (e.label or "") for e in editor.edits)  # undoable
    assert editor.notifications["agentAssist/sessionChanged"][-1]["reason"] == "restored"
    items = (await editor.request("agentAssist/history"))["items"]
    assert [i["text"] for i in items if i["role"] == "user"] == ["first question"]
    fake.add("third answer")
    reply = await editor.request("agentAssist/chat", {"text": "third question"})
    sent = json.dumps(fake.messages(-1))
    assert "first question" in sent and "second question" not in sent
    assert reply["turn"] == 3  # numbering continues; turn 2 stays in the log
    texts = [
        e.data.input
        for e in events_of(workspace, home, reply["sessionId"])
        if e.type == "turn/start"
    ]
    assert texts == ["first question", "second question: rewrite the spec", "third question"]
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/checkpoint", {"number": 99})
    assert info.value.code == -32803 and "no checkpoint 99" in info.value.message


@pytest.mark.parametrize("client_name", ["vscode"])
async def test_compact_with_model_summary(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    editor: Editor = make_editor(options={"instanceId": "w", **SMALL_WINDOW})
    await editor.start()
    await editor.ready()
    for i in range(4):
        fake.add(f"answer {i} " + "lorem ipsum " * 8)
        await editor.request(
            "agentAssist/chat", {"text": f"question {i} about the ALPHA-{i} design"}
        )
    fake.add(
        {
            "tool_calls": [
                {
                    "name": "final_result",
                    "arguments": {
                        "summary": "User asked about ALPHA designs 0-2.",
                        "decisions": ["Use ALPHA-2"],
                    },
                }
            ]
        }
    )
    result = await editor.request("agentAssist/compact")
    assert result["compacted"] and not result["fallback"]
    assert result["tokensAfter"] < result["tokensBefore"]
    assert result["messagesAfter"] < result["messagesBefore"]
    summarizer_request = json.dumps(fake.messages(-1))
    assert "ALPHA-0" in summarizer_request  # the old turns went to the summarizer
    fake.add("carry on")
    reply = await editor.request("agentAssist/chat", {"text": "next"})
    sent = json.dumps(fake.messages(-1))
    assert "User asked about ALPHA designs 0-2." in sent and "ALPHA-0 design" not in sent
    assert "ALPHA-3" in sent  # the recent tail is verbatim
    compacts = [
        e for e in events_of(workspace, home, reply["sessionId"]) if e.type == "session/compact"
    ]
    assert len(compacts) == 1 and compacts[0].data.decisions == ["Use ALPHA-2"]
    await editor.stop()
    again: Editor = make_editor(options={"instanceId": "w", **SMALL_WINDOW})
    await again.start()
    await again.ready()
    context = (await again.request("agentAssist/resume"))["context"]
    assert "User asked about ALPHA designs 0-2." in context and "- Use ALPHA-2" in context


@pytest.mark.parametrize("client_name", ["vscode"])
async def test_compact_without_a_usable_model_is_extractive_and_labelled(
    make_editor, fake: FakeOpenAI
) -> None:
    editor: Editor = make_editor(options={"instanceId": "w", **SMALL_WINDOW})
    await editor.start()
    await editor.ready()
    for i in range(4):
        fake.add(f"answer {i} " + "lorem ipsum " * 8)
        await editor.request("agentAssist/chat", {"text": f"question {i}"})
    fake.add({"error": 503, "message": "summarizer down"})
    result = await editor.request("agentAssist/compact")
    assert result["compacted"] and result["fallback"]
    assert any("extractive" in m.message for m in editor.client.messages)
    fake.add("ok")
    await editor.request("agentAssist/chat", {"text": "next"})
    assert "Extractive summary" in json.dumps(fake.messages(-1))


@pytest.mark.parametrize("client_name", ["vscode"])
async def test_automatic_compaction_past_the_threshold(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    editor: Editor = make_editor(
        options={"instanceId": "w", "contextWindow": 1000, "compactAt": 0.3}
    )
    await editor.start()
    await editor.ready()
    session_id = ""
    for i in range(6):
        fake.add(f"answer {i} " + "lorem ipsum " * 30)
        session_id = (await editor.request("agentAssist/chat", {"text": f"question {i}"}))[
            "sessionId"
        ]
    kinds = [e.type for e in events_of(workspace, home, session_id)]
    assert "session/compact" in kinds
    assert editor.client.progress_reports  # $/progress was shown


@pytest.mark.local_store
async def test_fork_switches_to_a_child_and_leaves_the_parent_alone(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    fake.add("a1", "a2")
    first = await editor.request("agentAssist/chat", {"text": "q1"})
    await editor.request("agentAssist/chat", {"text": "q2"})
    parent = first["sessionId"]
    events = events_of(workspace, home, parent)
    end_of_turn_1 = next(e.seq for e in events if e.type == "turn/end")
    turn_2_start = next(e.seq for e in events if e.type == "turn/start" and e.turn == 2)
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/fork", {"boundary": turn_2_start + 1})
    assert info.value.code == -32803 and "inside turn 2" in info.value.message
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/fork", {"boundary": 10_000})
    assert "out of range" in info.value.message
    parent_log = stored(workspace, home).layout.log_path(parent)
    before = parent_log.read_bytes()
    forked = await editor.request("agentAssist/fork", {"boundary": end_of_turn_1})
    assert forked["parentSessionId"] == parent and forked["boundary"] == end_of_turn_1
    assert editor.notifications["agentAssist/sessionChanged"][-1] == {
        "sessionId": forked["sessionId"],
        "reason": "forked",
    }
    fake.add("child answer")
    reply = await editor.request("agentAssist/chat", {"text": "q2 in the child"})
    assert reply["sessionId"] == forked["sessionId"] and reply["turn"] == 2
    sent = json.dumps(fake.messages(-1))
    assert "q1" in sent and '"q2"' not in sent
    assert parent_log.read_bytes() == before
    sessions = (await editor.request("agentAssist/sessions"))["sessions"]
    child_row = next(s for s in sessions if s["sessionId"] == forked["sessionId"])
    assert child_row["parentSessionId"] == parent and child_row["active"]
    assert sessions[0]["sessionId"] == forked["sessionId"]


async def test_search_is_literal_and_finds_hidden_turns(make_editor, fake: FakeOpenAI) -> None:
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    fake.add("The migration plan uses VUE-THREE routers.")
    first = await editor.request("agentAssist/chat", {"text": "plan the zebra migration"})
    saved = await editor.request("agentAssist/save")
    fake.add("Quokka details that will be rewound.")
    await editor.request("agentAssist/chat", {"text": "tell me about quokka"})
    await editor.request("agentAssist/checkpoint", {"number": saved["checkpoint"]})
    hits = (await editor.request("agentAssist/search", {"query": "zebra migration"}))["results"]
    assert hits and hits[0]["sessionId"] == first["sessionId"] and hits[0]["type"] == "turn/start"
    assert "[zebra]" in hits[0]["snippet"] or "[zebra" in hits[0]["snippet"]
    hidden = (await editor.request("agentAssist/search", {"query": "quokka"}))["results"]
    assert hidden, "a rewound turn stays searchable"
    for query in ['"', "NEAR(zebra", "zebra*", "a:b", "-zebra", "AND OR NOT", "(", "^"]:
        result = await editor.request("agentAssist/search", {"query": query})
        assert isinstance(result["results"], list)
    only = await editor.request(
        "agentAssist/search", {"query": "zebra", "sessionId": first["sessionId"]}
    )
    assert {h["sessionId"] for h in only["results"]} == {first["sessionId"]}
    with pytest.raises(JsonRpcException) as info:
        await editor.request("agentAssist/search", {"query": ""})
    assert info.value.code == -32602


async def test_search_finds_cjk_substrings_and_path_fragments(
    make_editor, fake: FakeOpenAI
) -> None:
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    fake.add("Saved the design to config/Agent.YAML, next to main.py.")
    reply = await editor.request("agentAssist/chat", {"text": "エージェントの設計を保存した"})
    hits = (await editor.request("agentAssist/search", {"query": "エージェント"}))["results"]
    assert [(h["sessionId"], h["type"]) for h in hits] == [(reply["sessionId"], "turn/start")]
    assert hits[0]["snippet"] == "[エージェント]の設計を保存した"
    assert (await editor.request("agentAssist/search", {"query": "の設計"}))["results"]
    hits = (await editor.request("agentAssist/search", {"query": "agent.ya"}))["results"]
    assert [h["type"] for h in hits] == ["assistant/message"]
    assert "config/[Agent.YA]ML" in hits[0]["snippet"]
    hits = (await editor.request("agentAssist/search", {"query": "n.p"}))["results"]
    assert [h["type"] for h in hits] == ["assistant/message"] and "mai[n.p]y" in hits[0]["snippet"]


def write_word_index(home: Path, workspace: Path, session_id: str, text: str) -> None:
    """Replace the project's search index by one as the previous version wrote it."""
    manager = stored(workspace, home)
    index = manager.layout.project_dir / "index.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    seq = next(e.seq for e in events_of(workspace, home, session_id) if e.type == "turn/start")
    conn = sqlite3.connect(index)
    conn.executescript(
        """
        CREATE TABLE sessions (num INTEGER PRIMARY KEY, session_id TEXT NOT NULL UNIQUE,
            log_offset INTEGER NOT NULL DEFAULT 0, last_seq INTEGER NOT NULL DEFAULT -1,
            line_hash BLOB, scanned_size INTEGER NOT NULL DEFAULT -1, stream_text TEXT,
            stream_seq INTEGER, stream_turn INTEGER);
        CREATE VIRTUAL TABLE event_text USING fts5(text, session_id UNINDEXED, seq UNINDEXED,
            turn UNINDEXED, type UNINDEXED, tokenize = 'unicode61 remove_diacritics 2');
        PRAGMA user_version = 2;
        """
    )
    conn.execute("INSERT INTO sessions (num, session_id) VALUES (1, ?)", (session_id,))
    conn.execute(
        "INSERT INTO event_text (rowid, text, session_id, seq, turn, type)"
        " VALUES (?, ?, ?, ?, 1, 'turn/start')",
        ((1 << 40) | (seq << 2), text, session_id, seq),
    )
    conn.commit()
    conn.close()


async def rebuild_progress(editor: Editor, timeout: float = 20) -> list[Any]:
    """The index rebuild's `$/progress` reports, once its `end` has arrived."""

    def reports() -> list[Any]:
        for shown in editor.client.progress_reports.values():
            if shown and getattr(shown[0], "title", None) == "Rebuilding the search index":
                return list(shown)
        return []

    async def ended() -> list[Any]:
        while not (shown := reports()) or shown[-1].kind != "end":
            await asyncio.sleep(0.02)
        return shown

    try:
        return await asyncio.wait_for(ended(), timeout)
    except TimeoutError:
        pytest.fail(f"the rebuild's progress did not end within {timeout} s: {reports()}")


@pytest.mark.local_store  # the local index file and its migration
@pytest.mark.parametrize("client_name", ["vscode"])
async def test_an_old_index_answers_while_the_new_one_is_built_with_progress(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    fake.add("noted")
    session_id = (await editor.request("agentAssist/chat", {"text": "plan the zebra migration"}))[
        "sessionId"
    ]
    await editor.stop()
    write_word_index(home, workspace, session_id, "plan the zebra migration")

    editor = make_editor()
    await editor.start()
    await editor.ready()
    # the old index answers at once, as it did: words, punctuation ignored
    old = (await editor.request("agentAssist/search", {"query": "zebra, migration"}))["results"]
    assert [h["sessionId"] for h in old] == [session_id]
    assert "[zebra migration]" in old[0]["snippet"]

    async def rebuilt() -> list[dict[str, Any]]:
        while True:
            hits = (await editor.request("agentAssist/search", {"query": "ebra migr"}))["results"]
            if hits:
                return list(hits)
            await asyncio.sleep(0.05)

    hits = await asyncio.wait_for(rebuilt(), 20)
    assert "z[ebra migr]ation" in hits[0]["snippet"]
    assert (await editor.request("agentAssist/search", {"query": "zebra, migration"}))[
        "results"
    ] == []  # literal now
    # The new index answers as soon as it is swapped in; its `end` report is sent after that,
    # so it may reach us after the search's answer: wait for it, do not read it at once.
    reports = await rebuild_progress(editor)
    assert reports[0].title == "Rebuilding the search index" and reports[-1].kind == "end"


@pytest.mark.local_store  # the local index file and its migration
@pytest.mark.parametrize("client_name", ["vscode"])
async def test_a_filtered_search_of_an_old_index_finishes_its_rebuild_first(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    fake.add("noted")
    reply = await editor.request("agentAssist/chat", {"text": "plan the zebra migration"})
    await editor.stop()
    write_word_index(home, workspace, reply["sessionId"], "plan the zebra migration")
    editor = make_editor()
    await editor.start()
    await editor.ready()
    params = {"query": "ebra migr", "sessionId": reply["sessionId"], "kind": "user"}
    hits = (await editor.request("agentAssist/search", params))["results"]
    assert [(h["type"], h["turn"], h["step"]) for h in hits] == [("turn/start", 1, None)]
    assert hits[0]["ts"] and "z[ebra migr]ation" in hits[0]["snippet"]  # the new index


@pytest.mark.parametrize("client_name", ["vscode"])
async def test_restore_also_reverts_unsaved_editor_buffers(make_editor, workspace: Path) -> None:
    from lsprotocol import types
    from pygls.uris import from_fs_path

    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    saved = await editor.request("agentAssist/save")
    uri = from_fs_path(str(workspace / "agent_spec.md")) or ""
    editor.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text="unsaved edit\n"
            )
        )
    )
    restored = await editor.request("agentAssist/checkpoint", {"number": saved["checkpoint"]})
    assert restored["restoredFiles"] == ["agent_spec.md"]  # disk matched; the buffer did not
    assert any("agent_spec.md" in (e.label or "") for e in editor.edits)


@pytest.mark.parametrize("client_name", ["vscode"])
async def test_compact_asked_for_compacts_a_small_history(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    editor: Editor = make_editor()  # the default 128k window: far from the threshold
    await editor.start()
    await editor.ready()
    fake.add("the only answer")
    await editor.request("agentAssist/chat", {"text": "the only question"})
    single = await editor.request("agentAssist/compact")
    assert single["compacted"] is False and "only one" in single["reason"]
    for n in range(2, 9):  # 8 turns of ~190 tokens, ~1,500 in all
        fake.add(f"answer {n} " + "lorem ipsum dolor " * 20)
        await editor.request("agentAssist/chat", {"text": f"question {n} " + "sit amet " * 20})
    fake.add(
        {
            "tool_calls": [
                {
                    "name": "final_result",
                    "arguments": {"summary": "Seven questions were answered.", "decisions": []},
                }
            ]
        }
    )
    result = await editor.request("agentAssist/compact")
    assert result["compacted"] is True and result["messagesAfter"] < result["messagesBefore"]
    fake.add("after")
    await editor.request("agentAssist/chat", {"text": "next"})
    sent = json.dumps(fake.messages(-1))
    assert "Seven questions were answered." in sent and "question 8" in sent  # newest kept
    assert "question 2 " not in sent


@pytest.mark.parametrize("client_name", ["vscode"])
async def test_a_save_during_a_reply_checkpoints_a_closed_turn(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    fake.add("first answer", {"text": "a slowly streamed second answer " * 5, "delay": 0.03})
    await editor.request("agentAssist/chat", {"text": "first"})
    _, pending = editor.start_request("agentAssist/chat", {"text": "second"})
    await editor.wait_for("agentAssist/chatDelta", count=3)
    saved = await editor.request("agentAssist/save")  # waits for the reply to end
    reply = await pending
    assert reply["endReason"] == "completed"
    events = events_of(workspace, home, reply["sessionId"])
    save = next(
        e for e in events if e.type == "session/save" and e.data.checkpoint == saved["checkpoint"]
    )
    ends = [e.seq for e in events if e.type == "turn/end"]
    assert save.seq > ends[-1]  # after the turn, never inside it
    fake.add("third answer")
    await editor.request("agentAssist/chat", {"text": "third"})
    await editor.request("agentAssist/checkpoint", {"number": saved["checkpoint"]})
    items = (await editor.request("agentAssist/history"))["items"]
    assert [i["text"] for i in items if i["role"] == "user"] == ["first", "second"]
    assert items[-1]["role"] == "assistant" and items[-1]["endReason"] == "completed"
    fake.add("after restore")
    await editor.request("agentAssist/chat", {"text": "fourth"})
    sent = json.dumps(fake.messages(-1))
    assert "a slowly streamed second answer" in sent and "third answer" not in sent


@pytest.mark.local_store
@pytest.mark.parametrize("client_name", ["vscode"])
async def test_a_secret_in_a_tracked_file_never_reaches_the_store(
    make_editor, fake: FakeOpenAI, workspace: Path, home: Path
) -> None:
    secret = "ghp_TRACKEDxxSECRETxx0123456789abcdefABCD"
    (workspace / "agent_spec.md").write_text(f"# Support agent\ntoken: {secret}\n")
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    fake.add(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "agent_spec.md"}}]},
        "I read it.",
    )
    await editor.request("agentAssist/chat", {"text": "read the spec"})
    saved = await editor.request("agentAssist/save")
    (workspace / "agent_spec.md").write_text("# Support agent\nno token\n")
    restored = await editor.request("agentAssist/checkpoint", {"number": saved["checkpoint"]})
    assert restored["withheldFiles"] == {"agent_spec.md": "not kept: contains a secret"}
    assert "agent_spec.md" in restored["skippedFiles"]
    assert (workspace / "agent_spec.md").read_text() == "# Support agent\nno token\n"
    await editor.stop()
    for path in home.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


async def test_fork_takes_the_childs_id_and_refuses_a_taken_or_invalid_one(
    make_editor, fake: FakeOpenAI
) -> None:
    """The seed's `fork(source, boundary?, childSessionId?)`."""
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    fake.add("a1")
    parent = (await editor.request("agentAssist/chat", {"text": "q1"}))["sessionId"]
    for taken in (parent, "abcdefabcdef"):
        if taken == "abcdefabcdef":
            forked = await editor.request("agentAssist/fork", {"childSessionId": taken})
            assert forked["sessionId"] == taken and forked["parentSessionId"] == parent
            continue
        with pytest.raises(JsonRpcException) as info:
            await editor.request("agentAssist/fork", {"sessionId": parent, "childSessionId": taken})
        assert taken in info.value.message
    with pytest.raises(JsonRpcException) as info:  # the same id again: now taken
        await editor.request(
            "agentAssist/fork", {"sessionId": parent, "childSessionId": "abcdefabcdef"}
        )
    assert "abcdefabcdef" in info.value.message and "exists" in info.value.message
    for invalid in ("ABCDEFABCDEF", "../../etc/x", "abc"):
        with pytest.raises(JsonRpcException) as info:
            await editor.request("agentAssist/fork", {"childSessionId": invalid})
        assert info.value.code == -32602  # invalid params, before any path is built
    status = await editor.request("agentAssist/status")
    assert status["sessionId"] == "abcdefabcdef"


async def test_search_hits_have_step_and_time_and_filters_narrow_them(
    make_editor, fake: FakeOpenAI
) -> None:
    editor: Editor = make_editor()
    await editor.start()
    await editor.ready()
    args = {"path": "conf/pelican.yaml", "content": "pelican: 1\n"}
    fake.add({"tool_calls": [{"name": "write_file", "arguments": args}]}, "pelican file written")
    await editor.request("agentAssist/chat", {"text": "write the pelican config"})

    async def found(**params: Any) -> list[dict[str, Any]]:
        result = await editor.request("agentAssist/search", {"query": "pelican", **params})
        return result["results"]

    hits = await found()
    by_type = {h["type"]: h for h in hits}
    assert {"turn/start", "tool/call", "tool/result", "assistant/message"} <= set(by_type)
    assert by_type["tool/call"]["turn"] == 1 and by_type["tool/call"]["step"] == 1
    assert by_type["assistant/message"]["step"] == 2 and by_type["turn/start"]["step"] is None
    assert all(h["ts"].startswith("20") for h in hits)
    assert {h["type"] for h in await found(kind="tool-call")} == {"tool/call"}
    assert {h["type"] for h in await found(tool="write_file")} == {"tool/call", "tool/result"}
    assert [h["type"] for h in await found(path="conf")] == ["tool/call"]
    assert await found(path="conf/pelican") == []
    assert len(await found(since="1h", until="2999-01-01")) == len(hits)
    first = min(h["ts"] for h in hits)
    assert await found(until=first) == []  # `until` excludes its own moment
    last = datetime.fromisoformat(max(h["ts"] for h in hits).replace("Z", "+00:00"))
    after = (last + timedelta(seconds=1)).isoformat()
    assert len(await found(since=first, until=after)) == len(hits)
    assert await found(since=after) == []
    for field, value in (("since", "last tuesday"), ("until", "1y"), ("kind", "tools")):
        with pytest.raises(JsonRpcException) as info:
            await found(**{field: value})
        assert info.value.code == -32602 and f"'{field}'" in info.value.message
    with pytest.raises(JsonRpcException, match="one of user, assistant"):
        await found(kind="tools")
