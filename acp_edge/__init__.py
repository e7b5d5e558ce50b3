"""The ACP edge of agent-assist: an Agent Client Protocol agent on stdio over `session/`.

- `command`: `agent-assist acp` (argument parsing only; the rest is imported when it runs);
- `process`: the connection on stdio, the routes, the ways out (stdin closed, signals);
- `transport`: newline-delimited JSON-RPC, malformed input answered;
- `connection`: the SDK's router and `Connection` over the started transport;
- `hello`: the answer to `initialize`, declared once as JSON;
- `agent`: the handlers, one per ACP method (thin: check, call, convert);
- `host`: the engine's `Host` for one session (edits asked as permission requests);
- `commands`, `history_commands`: our commands in the editor's menu, run from a prompt;
- `asking`: a command's question to the user;
- `model_option`: the model as a session config option;
- `modes`: the seed's phases as ACP session modes;
- `sessions`: the sessions this process holds, one engine each;
- `checks`: what a request names (a directory, a session id) checked into our terms;
- `listing`, `replay`, `updates`: pure conversions into ACP's shapes;
- `turns`: a prompt run by the engine, streamed as `session/update`;
- `client`: what the agent asks of the client (updates, permission).

It never imports `lsp_server`, pygls or lsprotocol; pydantic-ai only when a turn runs.
"""

# Kept equal to pyproject.toml's version by tests/acp/test_initialize.py (the LSP edge keeps
# its own copy: the two edges never import each other).
__version__ = "0.1.0"
