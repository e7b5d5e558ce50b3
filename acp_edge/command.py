"""`agent-assist acp`: an ACP agent on stdio (argument parsing only; the agent is lazy)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any


def options_from(args: argparse.Namespace) -> tuple[dict[str, Any], str | None]:
    """Return the options the command line gives (as `initializationOptions`), or an error."""
    options: dict[str, Any] = {}
    model: dict[str, Any] = {}
    if args.model is not None:
        model["name"] = args.model
    if args.base_url is not None:
        if not re.match(r"https?://[^/\s]", args.base_url):
            return {}, (
                f"--base-url {args.base_url!r} is not an http(s) URL "
                "(for example http://127.0.0.1:8080/v1)"
            )
        model["baseUrl"] = args.base_url
    if args.max_output_tokens is not None:
        if not 1 <= args.max_output_tokens <= 1_000_000:
            return {}, "--max-output-tokens must be 1-1000000"
        model["maxOutputTokens"] = args.max_output_tokens
    if model:
        options["model"] = model
    if args.store is not None:
        options["store"] = args.store
    if args.context_window is not None:
        options["contextWindow"] = args.context_window
    return options, None


def run_acp(args: argparse.Namespace) -> int:
    """`agent-assist acp`."""
    options, error = options_from(args)
    if error is not None:
        sys.stderr.write(f"agent-assist acp: {error}\n")
        return 2
    from .process import serve

    return serve(options)


def register(subparsers: Any) -> None:
    """Add `agent-assist acp`."""
    parser = subparsers.add_parser(
        "acp",
        help="run as an Agent Client Protocol agent on stdio (Zed, JetBrains, CodeCompanion…)",
        description="Serve the Agent Client Protocol (v1) on stdin/stdout over the same "
        "sessions as the language server. Logs go to stderr.",
    )
    parser.add_argument(
        "--model", metavar="NAME", help="the model to ask (default: $AGENT_ASSIST_LLM_MODEL_NAME)"
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="the OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 (default: "
        "$AGENT_ASSIST_LLM_BASE_URL); its key comes from $AGENT_ASSIST_LLM_API_KEY",
    )
    parser.add_argument(
        "--max-output-tokens",
        type=int,
        metavar="TOKENS",
        help="the most tokens of one answer, 1-1000000 (default: the model server's limit)",
    )
    parser.add_argument(
        "--context-window",
        type=int,
        metavar="TOKENS",
        help="the model's context window (compaction starts at 60%% of it)",
    )
    parser.add_argument(
        "--store",
        metavar="STORE",
        help="local, or a PostgreSQL connection string (default: $AGENT_ASSIST_STORE, else local)",
    )
    parser.set_defaults(func=run_acp)
