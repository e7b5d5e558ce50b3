"""`agent-assist mcp`: the MCP server's parser (the server itself is imported when it runs)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def run_mcp(args: argparse.Namespace) -> int:
    """`agent-assist mcp`: serve until the client closes stdin."""
    from .scope import ScopeError, open_scope

    try:
        scope = open_scope(args.store, args.project, all_projects=args.all_projects)
    except ScopeError as exc:
        sys.stderr.write(f"agent-assist mcp: {exc}\n")
        return exc.code
    from .server import serve

    try:
        serve(scope)
    finally:
        scope.close()
    return 0


def register(subparsers: Any) -> None:
    """Add `agent-assist mcp`."""
    parser = subparsers.add_parser(
        "mcp",
        help="serve this project's sessions to other agents (Model Context Protocol, stdio)",
        description="Serve the Model Context Protocol on stdin/stdout: tools that search, "
        "list and read this project's sessions, their decisions, a file's history and the "
        "resume block, for other agents (Claude Code, Codex, VS Code, Zed…). Read-only. "
        "Logs go to stderr.",
    )
    parser.add_argument(
        "--store",
        metavar="STORE",
        help="local, or a PostgreSQL connection string (default: $AGENT_ASSIST_STORE, else local)",
    )
    parser.add_argument(
        "--project",
        metavar="DIR",
        help="the project whose sessions are served (default: the current directory)",
    )
    parser.add_argument(
        "--all-projects",
        action="store_true",
        help="serve the sessions of every project in the store",
    )
    parser.set_defaults(func=run_mcp)
