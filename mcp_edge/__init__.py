"""The MCP edge: `agent-assist mcp`, the sessions offered to other agents (#44).

A Model Context Protocol server on stdio (the official `mcp` SDK) over the store the CLI uses,
scoped to one project unless `--all-projects`. Read-only: it never opens a session for
writing, takes no lock, and on PostgreSQL its connections are read-only transactions.
Like `acp_edge/`, it may import `session` and `engine`, never another edge.

| module | concern |
|---|---|
| `command.py` | the subcommand's parser (the rest is imported when it runs) |
| `scope.py` | the store(s) and the project(s) a server answers for; which sessions it sees |
| `lookback.py` | the answers: listing, search, a session read within a budget, decisions |
| `resume.py` | the resume block a resumed session would get now; a file's history |
| `server.py` | the MCP tools and resource, their schemas, and their errors |
"""
