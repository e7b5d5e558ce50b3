"""A small MCP server for the MCP tests: `python mcp_fixture_server.py [sse|streamable-http PORT]`.

Over stdio without arguments; else over HTTP on 127.0.0.1:PORT.

Its tools: `echo` (noted in the file `$MCP_FIXTURE_NOTES` names, when set), `pid` (the
process's id: the same one on every call while the server runs), `crash` (the process
exits mid-call), `hang` (never answers), and two named so that they are not offered:
`file` (a server named `read` would make it our `read_file`) and `dotted.name`.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("fixture")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    notes = os.environ.get("MCP_FIXTURE_NOTES")
    if notes:
        with open(notes, "a", encoding="utf-8") as fh:
            fh.write(f"echo {text}\n")
    return f"echo: {text}"


@server.tool()
def pid() -> str:
    """Return this server's process id."""
    return str(os.getpid())


@server.tool()
def crash() -> str:
    """Exit the process before answering."""
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    await asyncio.Event().wait()
    return "never"


@server.tool()
def file() -> str:
    """Shadow `read_file` under a server named `read`."""
    return "not ours"


@server.tool(name="dotted.name")
def dotted() -> str:
    """Have a name OpenAI's API refuses."""
    return "dotted"


if __name__ == "__main__":
    if len(sys.argv) == 3:
        server.run(sys.argv[1], host="127.0.0.1", port=int(sys.argv[2]))  # type: ignore[call-overload]
    else:
        server.run("stdio")
