"""The ACP edge of agent-assist: an Agent Client Protocol agent on stdio over `session/`.

- `command`: `agent-assist acp` (argument parsing only; the rest is imported when it runs);
- `process`: the connection on stdio, the routes, the ways out (stdin closed, signals);
- `transport`: newline-delimited JSON-RPC, malformed input answered;
- `agent`: the handlers, one per ACP method (thin: check, call, convert);
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
