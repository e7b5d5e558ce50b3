"""`agent-assist mcp` end to end: the official SDK's client over stdio, on both stores.

One server per store serves the whole module (`served`); `--all-projects` gets one more.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.conftest import run_cli

from .conftest import SECRET, Client, Stores, spawn, stored_digest

TOOLS = {
    "search_sessions",
    "list_sessions",
    "read_session",
    "resume_context",
    "file_history",
    "decisions",
}


def test_the_tools_are_described_read_only(client: Client) -> None:
    listed = client.run(client.session.list_tools()).tools
    assert {tool.name for tool in listed} == TOOLS
    for tool in listed:
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.annotations is not None and tool.annotations.read_only_hint, tool.name
        assert tool.annotations.destructive_hint is False
        assert tool.input_schema["type"] == "object"
    search = next(tool for tool in listed if tool.name == "search_sessions")
    assert search.input_schema["required"] == ["query"]
    assert search.input_schema["properties"]["limit"]["maximum"] == 100


def test_list_sessions_pages_newest_first(client: Client, stores: Stores) -> None:
    first = client.ok("list_sessions", {"limit": 2})
    assert first["total"] == 5 and len(first["sessions"]) == 2
    assert first["next_offset"] == 2
    rest = client.ok("list_sessions", {"offset": 2, "limit": 10})
    assert "next_offset" not in rest
    every = first["sessions"] + rest["sessions"]
    ids = [row["session_id"] for row in every]
    assert sorted(ids) == sorted(v for k, v in stores.ids.items() if k != "other")
    times = [row["last_active"] for row in every]
    assert times == sorted(times, reverse=True)
    assert ids[0] == stores.ids["meta"]  # recorded last
    row = next(r for r in every if r["session_id"] == stores.ids["plain0"])
    assert row["title"] == "question 0 about zebras" and row["turns"] == 1
    if stores.kind == "postgresql":
        assert row["machine"]  # the listing has it there


def test_search_finds_hits_with_where_they_are(client: Client, stores: Stores) -> None:
    found = client.ok("search_sessions", {"query": "zebras"})
    ids = {hit["session_id"] for hit in found["hits"]}
    assert {stores.ids[f"plain{n}"] for n in range(3)} <= ids
    assert stores.ids["other"] not in ids  # another project's
    hit = next(h for h in found["hits"] if h["session_id"] == stores.ids["plain1"])
    assert hit["turn"] == 1 and hit["time"] and "[zebras]" in hit["snippet"].lower()
    narrow = client.ok("search_sessions", {"query": "zebras", "kind": "assistant"})
    assert narrow["hits"] == []
    tools = client.ok("search_sessions", {"query": "fox", "tool": "read_file", "limit": 1})
    assert len(tools["hits"]) == 1 and tools["hits"][0]["step"] == 1
    assert client.ok("search_sessions", {"query": "zebras", "until": "2001-01-01"})["hits"] == []


def test_read_session_within_a_budget(client: Client, stores: Stores) -> None:
    session = stores.ids["tools"]
    whole = client.ok("read_session", {"session_id": session, "max_bytes": 200_000})
    assert [t["turn"] for t in whole["turns"]] == [1, 2, 3] and whole["complete"]
    assert whole["turns"][2]["answer"] == "The log holds 2000 fox lines."
    assert whole["turns"][2]["tools_called"] == ["read_file"]
    assert SECRET not in json.dumps(whole)  # redacted when it was written
    steps = client.ok(
        "read_session",
        {"session_id": session[:6], "from_turn": 3, "steps": True, "max_bytes": 100_000},
    )
    tool = steps["turns"][0]["steps"][0]["tools"][0]
    assert tool["folded"] and tool["result_bytes"] > 50_000 and len(tool["result"]) <= 2000
    small = client.ok("read_session", {"session_id": session, "max_bytes": 1000})
    is_error, text = client.call("read_session", {"session_id": session, "max_bytes": 1000})
    assert len(text.encode()) <= 1000
    assert not small["complete"] and small["next_from_turn"] > small["turns"][-1]["turn"]
    assert "from_turn" in small["note"]
    cut = client.ok(
        "read_session", {"session_id": session, "from_turn": 3, "steps": True, "max_bytes": 3000}
    )
    assert cut["turns"][0]["cut"] and "folded" in cut["note"]


def test_metadata_sessions_give_metadata_only(client: Client, stores: Stores) -> None:
    read = client.ok("read_session", {"session_id": stores.ids["meta"]})
    assert read["session"]["persistence"] == "metadata" and read["turns"] == []
    assert "walrus" not in json.dumps(read) and "metadata-only" in read["note"]
    resumed = client.ok("resume_context", {"session_id": stores.ids["meta"]})
    assert "walrus" not in json.dumps(resumed)
    assert "walrus" not in json.dumps(client.ok("decisions"))
    assert client.ok("search_sessions", {"query": "walruses"})["hits"] == []


def test_resume_context_and_decisions(client: Client, stores: Stores) -> None:
    resumed = client.ok("resume_context", {"session_id": stores.ids["tools"]})
    assert "# Resumed Session Context" in resumed["context"]
    assert "Keep the config in YAML" in resumed["decisions"]
    assert isinstance(resumed["files_changed_since"], dict)
    newest = client.ok("resume_context")
    assert newest["session"]["session_id"] == stores.ids["meta"]
    found = client.ok("decisions")["decisions"]
    texts = [d["decision"] for d in found]
    assert "Keep the config in YAML" in texts and "Port 8080" in texts
    yaml = next(d for d in found if d["decision"] == "Keep the config in YAML")
    assert yaml["session_id"] == stores.ids["tools"] and yaml["turn"] == 2 and yaml["time"]
    assert len(client.ok("decisions", {"limit": 1})["decisions"]) == 1


def test_file_history_with_diffs_and_a_budget(client: Client) -> None:
    found = client.ok("file_history", {"path": "config.yaml"})
    kinds = [c["kind"] for c in found["changes"]]
    assert len(kinds) == 5 and found["complete"]
    assert any("+port: 8080" in (c["diff"] or "") for c in found["changes"])
    port = client.ok("file_history", {"path": "config.yaml", "line": "port"})
    assert 1 <= len(port["changes"]) < 5
    tight = client.ok("file_history", {"path": "config.yaml", "max_bytes": 1000})
    assert not tight["complete"] and "max_bytes" in tight["note"]


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("read_session", {"session_id": "zz-not-hex"}, "invalid session id"),
        ("read_session", {"session_id": "0123456789ab"}, "no session 0123456789ab"),
        ("read_session", {"session_id": "x" * 5000}, "session_id"),
        ("read_session", {"session_id": "abcd", "from_turn": 5, "to_turn": 2}, ""),
        ("read_session", {"session_id": "0123456789ab", "max_bytes": 10**12}, "max_bytes"),
        ("list_sessions", {"limit": 10**9}, "limit"),
        ("list_sessions", {"offset": -1}, "offset"),
        ("search_sessions", {"query": "a\x1b]0;pwn\x07"}, "control characters"),
        ("search_sessions", {"query": "   "}, "empty"),
        ("search_sessions", {"query": "x", "since": "the day after never"}, "since"),
        ("search_sessions", {"query": "x", "kind": "everything"}, "kind"),
        ("file_history", {"path": "../../etc/passwd"}, ""),
        ("file_history", {"path": "/etc/passwd"}, ""),
        ("file_history", {"path": ".git/config\n"}, "control characters"),
        ("decisions", {"since": "\x00"}, "control characters"),
        ("resume_context", {"session_id": 12}, "session_id"),
    ],
)
def test_hostile_arguments_are_tool_errors(
    client: Client, tool: str, arguments: dict[str, object], says: str
) -> None:
    is_error, text = client.call(tool, arguments)
    assert is_error, text
    assert says in text and "Traceback" not in text


def test_the_other_project_is_not_seen_by_id(client: Client, stores: Stores) -> None:
    is_error, text = client.call("read_session", {"session_id": stores.ids["other"]})
    assert is_error and "no session" in text


def test_the_resource_is_the_session_as_markdown(client: Client, stores: Stores) -> None:
    from mcp.shared.exceptions import MCPError

    uri = f"agent-assist://session/{stores.ids['plain2']}"
    read = client.run(client.session.read_resource(uri))
    text = read.contents[0].text
    assert text.startswith(f"# Session {stores.ids['plain2']}") and "answer 2" in text
    with pytest.raises(MCPError):
        client.run(client.session.read_resource(f"agent-assist://session/{stores.ids['other']}"))


def test_all_projects_shows_the_other_project(stores: Stores, tmp_path: Path) -> None:
    with contextmanager(spawn)(stores, tmp_path, "--all-projects") as (client, log):
        listed = client.ok("list_sessions", {"limit": 100})
        assert stores.ids["other"] in {row["session_id"] for row in listed["sessions"]}
        assert listed["total"] == 6
        hits = client.ok("search_sessions", {"query": "secret elsewhere"})["hits"]
        assert [hit["session_id"] for hit in hits] == [stores.ids["other"]]
        read = client.ok("read_session", {"session_id": stores.ids["other"]})
        assert read["turns"][0]["answer"] == "other answer"
    assert "Traceback" not in log.read_text()


def test_the_server_wrote_nothing_and_logged_no_traceback(
    served: tuple[Client, Path], stores: Stores
) -> None:
    client, log = served
    client.ok("list_sessions")
    assert "Traceback" not in log.read_text()
    assert stored_digest(stores) == stores.before  # every tool of the module ran before


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--project", "/no/such/folder"], 2, "--project: /no/such/folder is not a directory"),
        (["--store", "postgresql://who:s3cret-pw@127.0.0.1:1/nowhere"], 1, "127.0.0.1"),
        (["--store", "postgresql://[bad"], 2, ""),
    ],
)
def test_a_server_that_cannot_start_says_why_in_one_line(
    stores: Stores, args: list[str], code: int, says: str
) -> None:
    if stores.kind != "local":
        pytest.skip("the same with either store")
    done = run_cli("mcp", *args, env=stores.env)
    assert (done.returncode, done.stdout) == (code, "")
    assert done.stderr.startswith("agent-assist mcp: ") and says in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "s3cret" not in done.stderr
