"""The JSON-RPC transport: responses serialized in one step, or pygls' way when they must be."""

from __future__ import annotations

import json

from lsprotocol import types
from pygls.protocol import JsonRPCResponseMessage

from lsp_server.transport import _plain_response


def test_a_plain_json_result_is_serialized_as_pygls_would() -> None:
    result = {"sessions": [{"sessionId": "abc", "title": "日本語 ✓", "turns": 3}], "total": 1}
    body = _plain_response(JsonRPCResponseMessage(id=7, result=result, jsonrpc="2.0"))
    assert body is not None
    assert json.loads(body) == {"jsonrpc": "2.0", "id": 7, "result": result}


def test_what_orjson_cannot_write_is_left_to_pygls() -> None:
    lone_surrogate = {"text": "\ud800"}
    huge = {"n": 2**70}
    for result in (lone_surrogate, huge, None):
        assert _plain_response(JsonRPCResponseMessage(id=1, result=result, jsonrpc="2.0")) is None
    capabilities = types.InitializeResult(types.ServerCapabilities())
    typed = types.InitializeResponse(id=1, result=capabilities)
    assert _plain_response(typed) is None  # an lsprotocol message: pygls unstructures it
