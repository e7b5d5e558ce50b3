"""The contract declared once: models, generated files, docs, and how handlers use them."""

from __future__ import annotations

import asyncio
import logging
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from engine.config import parse_initialization_options
from engine.options import env_vars
from lsp_server import protocol as proto
from lsp_server.features import FEATURES, setup_features
from lsp_server.features.base import Feature, check_signature, install, lsp, request
from lsp_server.features.session_commands import sessions_result
from lsp_server.protocol import generate
from lsp_server.protocol.__main__ import main as protocol_main
from lsp_server.server import AgentAssistServer
from session.store.rows import SessionInfo, listed_row

REPO = Path(__file__).resolve().parents[2]


def test_generated_files_are_current() -> None:
    assert generate.stale_files() == []


def test_check_names_each_stale_file(tmp_path: Path) -> None:
    for path in generate.generated_files():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, tmp_path / path)
    assert generate.stale_files(tmp_path) == []
    lua = tmp_path / generate.LUA_PATH
    lua.write_text(lua.read_text().replace('chat = "agentAssist/chat"', 'chat = "x"'))
    (tmp_path / generate.SCHEMA_PATH).unlink()
    assert generate.stale_files(tmp_path) == [generate.SCHEMA_PATH, generate.LUA_PATH]
    assert generate.write_files(tmp_path) == [generate.SCHEMA_PATH, generate.LUA_PATH]
    assert generate.stale_files(tmp_path) == []


def test_check_command_exits_zero_on_the_checked_in_tree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert protocol_main(["--check"]) == 0
    assert capsys.readouterr().err == ""


def test_generated_clients_carry_every_method_and_type() -> None:
    files = generate.generated_files()
    ts, lua = files[generate.TYPESCRIPT_PATH], files[generate.LUA_PATH]
    for spec in proto.REQUESTS:
        assert f'"{spec.method}"' in ts and f'"{spec.method}"' in lua
        for model in generate.result_models(spec):
            assert f"export interface {model.__name__} " in ts
            assert f"---@class agent_assist.{model.__name__}" in lua
    for note in proto.NOTIFICATIONS:
        assert f"export interface {note.__name__} " in ts
    # the fields that were typed wrong by hand before
    assert "  turn: number | null;" in ts  # TranscriptItem, SearchHit
    assert "  title: string | null;" in ts  # SessionInfo
    assert "---@field title string?" in lua
    assert "  contextWindow?: number | null;" in ts and "  compactAt?: number | null;" in ts


def test_docs_document_every_method_and_field() -> None:
    docs = (REPO / generate.DOCS_PATH).read_text(encoding="utf-8")
    assert generate.undocumented(docs) == []
    broken = docs.replace("previousSessionId", "previous").replace("| `compactAt`", "| `x`")
    assert generate.undocumented(broken) == [
        "agentAssist/new: field previousSessionId",
        "initializationOptions: field compactAt",
    ]
    without_row = "\n".join(
        line for line in docs.splitlines() if not line.startswith("| `agentAssist/fork`")
    )
    assert "agentAssist/fork: no row in a table" in generate.undocumented(without_row)


def test_wire_form_keeps_nulls_and_leaves_off_omitted_fields() -> None:
    item = proto.TranscriptItem(turn=None, role="notice", text="Older turns were compacted.")
    assert item.wire() == {"turn": None, "role": "notice", "text": "Older turns were compacted."}
    cut = proto.TranscriptItem(
        turn=2, role="assistant", text="hal", end_reason="aborted", partial=True
    )
    assert cut.wire() == {
        "turn": 2,
        "role": "assistant",
        "text": "hal",
        "endReason": "aborted",
        "partial": True,
    }
    when = datetime(2026, 3, 31, 14, 22, tzinfo=UTC)
    info = proto.SessionInfo(
        session_id="a" * 12, title=None, created_at=when, updated_at=when, turns=0, active=True
    )
    assert info.wire() == {
        "sessionId": "a" * 12,
        "title": None,
        "createdAt": "2026-03-31T14:22:00Z",  # RFC 3339, UTC as Z
        "updatedAt": "2026-03-31T14:22:00Z",
        "turns": 0,
        "active": True,
    }
    schema = generate.build_schema()["$defs"]["SessionInfo"]
    assert set(schema["required"]) == {
        "sessionId",
        "title",
        "createdAt",
        "updatedAt",
        "turns",
        "active",
    }
    assert schema["properties"]["phase"] == {
        "$ref": "#/$defs/Phase",
        "description": "Absent when unset.",
    }


def test_listed_rows_go_on_the_wire_as_their_sessions_would() -> None:
    """Listed rows (text times, empty fields), validated in one call, send what a model
    built per session from its datetimes sends."""
    infos = [
        SessionInfo(
            "a" * 12,
            None,
            datetime(2026, 3, 31, 14, 22, tzinfo=UTC),
            datetime(2026, 3, 31, 14, 22, tzinfo=UTC),
            0,
        ),
        SessionInfo(
            "b" * 12,
            "Réglages du serveur",
            datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
            datetime(2026, 12, 3, 15, 10, 36, 578002, tzinfo=UTC),
            7,
            "a" * 12,
            "code",
        ),
        SessionInfo(
            "c" * 12,
            "",
            datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            datetime(2000, 1, 1, tzinfo=UTC),
            1,
            "",
            "",
        ),
    ]
    result = sessions_result([listed_row(info) for info in infos], 9, "b" * 12)
    one_by_one = proto.SessionsResult(
        sessions=[
            proto.SessionInfo(
                session_id=info.session_id,
                title=info.title,
                created_at=info.created_at,
                updated_at=info.updated_at,
                turns=info.turns,
                phase=info.phase or None,
                parent_session_id=info.parent_session_id or None,
                active=info.session_id == "b" * 12,
            )
            for info in infos
        ],
        total=9,
    )
    assert result == one_by_one and result.wire() == one_by_one.wire()
    assert result.wire()["sessions"][1]["updatedAt"] == "2026-12-03T15:10:36.578002Z"
    assert "phase" not in result.wire()["sessions"][2]
    # A phase this version does not know (a later one's, a snapshot edited by hand) is left
    # unset rather than failing the whole list.
    later = SessionInfo("d" * 12, "t", infos[0].created_at, infos[0].updated_at, 1, None, "ship")
    sent = sessions_result([listed_row(later)], 1, None).wire()["sessions"][0]
    assert "phase" not in sent and sent["sessionId"] == "d" * 12


def test_every_declared_option_is_parsed_by_the_server() -> None:
    bad: dict[str, Any] = {"model": {}}
    for name, info in proto.InitializationOptions.model_fields.items():
        if name not in ("model", "tools"):
            bad[info.alias or name] = {"not": "valid"}
    for name, info in proto.ModelOptions.model_fields.items():
        if name not in ("name", "base_url", "api_key"):
            bad["model"][info.alias or name] = "not valid"
    bad["tools"] = {
        info.alias or name: "not valid" for name, info in proto.ToolsOptions.model_fields.items()
    }
    _, warnings = parse_initialization_options(bad, "test", {})
    said = " ".join(warnings)
    nested = [f"{group}.{k}" for group in ("model", "tools") for k in bad[group]]
    for name in [*bad, *nested]:
        if name not in ("model", "tools"):
            assert name in said, f"{name}: an invalid value is not reported: {warnings}"


def test_every_environment_variable_of_an_option_is_documented_in_its_row() -> None:
    docs = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(" `"): line for line in docs.splitlines() if "| `" in line}
    for path, variables in env_vars().items():
        row = rows.get(path) or rows[path.split(".")[0]]
        assert all(v in row for v in variables), (path, variables)


def test_an_option_unset_takes_its_variable_and_a_bad_one_its_default() -> None:
    env = {"AGENT_ASSIST_LLM_MAX_RETRIES": "5", "AGENT_ASSIST_STORE": " postgresql://h/db "}
    config, warnings = parse_initialization_options({"model": {"maxRetries": None}}, "t", env)
    assert (config.model.max_retries, config.store, warnings) == (5, "postgresql://h/db", [])
    assert config.option("model.maxRetries") == "AGENT_ASSIST_LLM_MAX_RETRIES"  # named so
    env = {"AGENT_ASSIST_LLM_MAX_RETRIES": "many"}
    config, warnings = parse_initialization_options({}, "t", env)
    assert config.model.max_retries == 2
    assert warnings == ["model.maxRetries 'many' is invalid (0..10); using 2"]
    bad = {"driftMessages": 1, "compactAt": True, "model": {"name": 5, "apiKey": ["sk-secret"]}}
    config, warnings = parse_initialization_options(bad, "t", {"AGENT_ASSIST_MODEL": "m"})
    assert (config.drift_messages, config.compact_at, config.model.name) == (True, 0.6, None)
    assert [w.split(" ")[0] for w in warnings] == [
        "model.name",
        "model.apiKey",
        "compactAt",
        "driftMessages",
    ]
    assert "sk-secret" not in " ".join(warnings)


def test_tools_options_are_parsed_with_defaults_and_bounds() -> None:
    config, warnings = parse_initialization_options(
        {"tools": {"protectedPaths": ["deploy/**"], "maxCallsPerResponse": 8}}, "test", {}
    )
    assert warnings == []
    assert config.tools.protected_paths == ("deploy/**",)
    assert config.tools.max_calls_per_response == 8
    assert config.tools.max_calls_per_turn == 256
    config, warnings = parse_initialization_options({"tools": {"maxCallsPerTurn": 0}}, "t", {})
    assert config.tools.max_calls_per_turn == 256 and "tools.maxCallsPerTurn" in warnings[0]
    config, warnings = parse_initialization_options({"tools": "all"}, "t", {})
    assert config.tools.max_calls_per_response == 64 and "tools must be an object" in warnings[0]
    config, _ = parse_initialization_options({"model": {"maxReplyBytes": 100_000}}, "t", {})
    assert config.model.max_reply_bytes == 100_000


def test_every_request_is_served_and_is_a_command() -> None:
    server = AgentAssistServer()
    setup_features(server)
    assert [type(f) for f in server.features.values()] == FEATURES
    features = server.protocol.fm.features
    commands = server.protocol.fm.commands
    for spec in proto.REQUESTS:
        assert spec.method in features, spec.method
        assert proto.command_name(spec.method) in commands


def test_a_handler_that_does_not_match_the_contract_is_refused() -> None:
    class Wrong(Feature):
        name = "wrong"

        @request(proto.STATUS)
        async def status(self, params: proto.EmptyParams) -> proto.ResumeResult:
            """Answer the wrong shape."""
            return proto.ResumeResult(context="")

    with pytest.raises(TypeError, match="agentAssist/status"):
        check_signature(proto.STATUS, Wrong(AgentAssistServer()).status)
    server = AgentAssistServer()
    install(server, [Wrong])  # logged and skipped: the server starts without it
    assert server.features == {}
    assert proto.STATUS not in server.protocol.fm.features


class Flaky(Feature):
    """Fails its first call, answers the next ones."""

    name = "flaky"

    def __init__(self, server: AgentAssistServer) -> None:
        super().__init__(server)
        self.calls = 0

    @request(proto.RESUME)
    async def resume(self, params: proto.EmptyParams) -> proto.ResumeResult:
        """Raise once."""
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("boom")
        return proto.ResumeResult(
            session_id="a" * 12,
            context=f"call {self.calls}",
            origin=None,
            last_active=None,
            summary=None,
            decisions=[],
            changed_files=[],
        )


async def test_a_failing_handler_is_isolated_to_its_call() -> None:
    server = AgentAssistServer()
    install(server, [Flaky])
    server.ready.set()
    handler = server.protocol.fm.features[proto.RESUME]
    with pytest.raises(JsonRpcInternalError, match="agentAssist/resume: internal error: boom"):
        await handler({})
    assert (await handler({}))["context"] == "call 2"
    command = server.protocol.fm.commands[proto.command_name(proto.RESUME)]
    assert (await command({}))["context"] == "call 3"
    with pytest.raises(JsonRpcInvalidParams):
        await handler([1])
    assert server.get_feature(Flaky).calls == 3


class FlakyLsp(Feature):
    """LSP handlers (one inline, one async waiting for the session) that fail their first call."""

    name = "flaky lsp"

    def __init__(self, server: AgentAssistServer) -> None:
        super().__init__(server)
        self.saved: list[str] = []
        self.watched = 0

    @lsp(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(self, params: types.DidSaveTextDocumentParams) -> None:
        """Raise for the first document."""
        self.saved.append(params.text_document.uri)
        if len(self.saved) == 1:
            raise RuntimeError("inline boom")

    @lsp(types.WORKSPACE_DID_CHANGE_WATCHED_FILES, ready=True)
    async def changed(self, params: types.DidChangeWatchedFilesParams) -> None:
        """Raise the first time."""
        self.watched += 1
        if self.watched == 1:
            raise RuntimeError("async boom")


async def test_a_failing_lsp_handler_is_isolated_to_its_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = AgentAssistServer()
    install(server, [FlakyLsp])
    server.ready.set()
    feature = server.get_feature(FlakyLsp)
    did_save = server.protocol.fm.features[types.TEXT_DOCUMENT_DID_SAVE]
    saved = [
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        for uri in ("file:///a.md", "file:///b.md")
    ]
    with caplog.at_level(logging.ERROR, logger="lsp_server.features.base"):
        assert did_save(saved[0]) is None  # logged, not raised into pygls
        assert did_save(saved[1]) is None
        changed = server.protocol.fm.features[types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
        watched = types.DidChangeWatchedFilesParams(changes=[])
        assert await changed(watched) is None
        assert await changed(watched) is None
    assert feature.saved == ["file:///a.md", "file:///b.md"] and feature.watched == 2
    failures = [r for r in caplog.records if r.exc_info]
    assert [r.getMessage() for r in failures] == [
        f"{types.TEXT_DOCUMENT_DID_SAVE} failed",
        f"{types.WORKSPACE_DID_CHANGE_WATCHED_FILES} failed",
    ]
    assert [str(r.exc_info[1]) for r in failures if r.exc_info] == ["inline boom", "async boom"]


async def test_requests_wait_for_the_session_in_one_place() -> None:
    server = AgentAssistServer()
    install(server, [Flaky])
    handler = server.protocol.fm.features[proto.RESUME]
    call = asyncio.ensure_future(handler({}))
    await asyncio.sleep(0.05)
    assert not call.done() and server.get_feature(Flaky).calls == 0
    server.ready.set()
    with pytest.raises(JsonRpcInternalError):
        await call
