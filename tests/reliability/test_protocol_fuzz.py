"""Hostile protocol: malformed JSON-RPC and wrong-typed params against one real server.

Raw Content-Length frames are written to the server's stdin. Every request must be
answered with the right code (-32602 bad params, -32601 unknown method, -32600 not a
request, -32700 not JSON, -32803 for what the user can fix) — never -32603 — and the
server must never exit.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_server import protocol as proto

from .conftest import FIGURES, is_long, register_store
from .rawlsp import RawServer

# Every request of the contract, with the params model it declares (one source of truth).
MODELS: dict[str, type[proto.Params]] = {r.method: r.params for r in proto.REQUESTS}
FIELDS = [
    "text",
    "deleteFiles",
    "number",
    "sessionId",
    "boundary",
    "query",
    "limit",
    "offset",
    "path",
    "dryRun",
]
IDS = itertools.count(1)

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63),
    st.floats(allow_nan=False),
    st.text(max_size=30),
    st.sampled_from(["abcdefabcdef", "../../etc", "", "x" * 13]),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)
params_strategy = st.one_of(
    json_value,
    st.dictionaries(st.sampled_from(FIELDS), json_value, max_size=4),
    st.fixed_dictionaries({}, optional={f: json_value for f in FIELDS}),
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    root = tmp_path_factory.mktemp("fuzz")
    workspace = root / "project"
    workspace.mkdir()
    (workspace / "agent_spec.md").write_text("# spec\n")
    raw = RawServer(workspace, register_store(root / "store"), {"instanceId": "fuzz"})
    assert raw.initialize() is not None
    yield raw
    assert raw.alive, "the server exited"
    raw.close()


def expected_codes(method: str, params: Any, command: bool) -> set[int | None]:
    """What a correct server may answer (None: a result)."""
    model = MODELS.get(method)
    if model is None:
        return {-32602} if command else {-32601}
    try:
        proto.parse_params(model, method, [params] if command else params)
    except proto.ParamsError:
        return {-32602}
    return {None, -32803}


def roundtrip(server: RawServer, message: Any) -> dict[str, Any]:
    msg_id = message["id"]
    server.send(message)
    reply = server.wait(msg_id, 30)
    assert reply is not None, f"no answer to {message!r}; alive={server.alive}"
    return reply


def _fuzz_request(
    server: RawServer, method: str, params: Any, as_command: bool, omit: bool
) -> None:
    msg_id = next(IDS)
    if as_command:
        name = proto.command_name(method) if "/" in method else method
        message = {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": "workspace/executeCommand",
            "params": {"command": name, "arguments": [params]},
        }
        if name not in {proto.command_name(m) for m in MODELS}:
            allowed: set[int | None] = {-32602}
        else:
            allowed = expected_codes(method, params, True)
    else:
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if not omit:
            message["params"] = params
        allowed = expected_codes(method, None if omit else params, False)
    reply = roundtrip(server, message)
    code = reply["error"]["code"] if "error" in reply else None
    FIGURES["protocol.messages"] += 1
    assert code in allowed, (message, reply)


GARBAGE = st.one_of(
    st.binary(min_size=1, max_size=40).filter(lambda b: not _is_json(b)),
    st.sampled_from(
        [
            b"[1,2]",
            b'"str"',
            b"42",
            b"null",
            b'{"jsonrpc":"2.0","id":5}',
            b'{"jsonrpc":"2.0","id":[1],"method":"agentAssist/status"}',
            b'{"jsonrpc":"2.0","id":{"a":1},"method":"agentAssist/status"}',
            b'{"jsonrpc":"2.0","id":6,"method":7}',
            b'{"id":9,"method":"x"}',
        ]
    ),
)


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _fuzz_garbage(server: RawServer, garbage: bytes) -> None:
    before = len(server.anonymous)
    server.write(garbage)
    reply = roundtrip(server, {"jsonrpc": "2.0", "id": next(IDS), "method": proto.STATUS})
    assert "result" in reply
    FIGURES["protocol.messages"] += 2
    bad_id = {
        b'{"jsonrpc":"2.0","id":5}': 5,
        b'{"jsonrpc":"2.0","id":6,"method":7}': 6,
        b'{"id":9,"method":"x"}': 9,
    }.get(garbage)
    if bad_id is not None:
        answer = server.wait(bad_id, 5)
        assert answer is not None and answer["error"]["code"] == -32600, answer
    else:
        assert len(server.anonymous) == before + 1, garbage
        code = server.anonymous[-1]["error"]["code"]
        assert code == (-32600 if _is_json(garbage) else -32700), (garbage, code)


def test_protocol_fuzz(server: RawServer, request: pytest.FixtureRequest) -> None:
    long = is_long(request.config)
    requests, garbage = (9000, 1000) if long else (1000, 200)
    common = {
        "deadline": None,
        "derandomize": True,
        "database": None,
        "suppress_health_check": list(HealthCheck),
    }

    @settings(max_examples=requests, **common)
    @given(
        method=st.sampled_from([*MODELS, "agentAssist/unknown", "agentAssist/chat/x"]),
        params=params_strategy,
        as_command=st.booleans(),
        omit=st.booleans(),
    )
    def run_requests(method: str, params: Any, as_command: bool, omit: bool) -> None:
        _fuzz_request(server, method, params, as_command, omit)

    @settings(max_examples=garbage, **common)
    @given(garbage=GARBAGE)
    def run_garbage(garbage: bytes) -> None:
        _fuzz_garbage(server, garbage)

    run_requests()
    run_garbage()
    assert server.alive
    FIGURES["protocol.server_exits"] += 0 if server.alive else 1
