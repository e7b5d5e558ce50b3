"""`agent-assist chat`: the terminal client, one more LSP client of `agent-assist serve`.

Only the argument parsing lives here (the command line imports it at every start); the
chat itself is imported when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import re
import sys
from pathlib import Path
from typing import Any

INSTANCE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def default_instance_id(workspace: Path) -> str:
    """Return the terminal's stable instance id for a directory: `terminal-<hash8>`."""
    digest = hashlib.sha256(str(workspace.resolve()).encode("utf-8", "surrogateescape"))
    return f"terminal-{digest.hexdigest()[:8]}"


def run_chat(args: argparse.Namespace) -> int:
    """`agent-assist chat`."""
    import asyncio

    from rich.console import Console

    from .app import ChatApp, approve_edits_setting
    from .input import LineReader, PlainReader, PromptReader, typed_ahead_unechoed

    workspace = Path(args.workspace or ".").expanduser()
    err = Console(stderr=True, highlight=False)
    if not workspace.is_dir():
        err.print(f"agent-assist chat: {workspace} is not a directory", markup=False)
        return 2
    workspace = workspace.resolve()
    instance_id = args.instance or default_instance_id(workspace)
    if not INSTANCE_RE.fullmatch(instance_id):
        err.print(
            f"agent-assist chat: invalid --instance {instance_id!r} (1-64 of A-Z a-z 0-9 _ . -)",
            markup=False,
        )
        return 2
    options: dict[str, Any] = {}
    if args.context_window is not None:
        options["contextWindow"] = args.context_window
    model: dict[str, Any] = {}
    if args.model is not None:
        model["name"] = args.model
    if args.max_output_tokens is not None:
        if not 1 <= args.max_output_tokens <= 1_000_000:
            err.print("agent-assist chat: --max-output-tokens must be 1-1000000", markup=False)
            return 2
        model["maxOutputTokens"] = args.max_output_tokens
    if args.base_url is not None:
        if not re.match(r"https?://[^/\s]", args.base_url):
            err.print(
                f"agent-assist chat: --base-url {args.base_url!r} is not an http(s) URL "
                "(for example http://127.0.0.1:8080/v1)",
                markup=False,
            )
            return 2
        model["baseUrl"] = args.base_url
    if model:
        options["model"] = model
    reader: LineReader = PromptReader() if sys.stdin.isatty() else PlainReader()
    # Not soft_wrap: the reply is wrapped by rich, so it knows how many rows it takes.
    console = Console(highlight=False)
    app = ChatApp(
        workspace,
        instance_id,
        console=console,
        reader=reader,
        options=options,
        verbose=bool(getattr(args, "verbose", False)),
        approve_edits=bool(args.yes) or approve_edits_setting(),
        resume=args.resume,
        latest=bool(args.continue_),
    )
    quiet = typed_ahead_unechoed() if reader.interactive else contextlib.nullcontext()
    try:
        with quiet:
            return asyncio.run(app.run())
    except KeyboardInterrupt:
        return 130


def register(subparsers: Any) -> None:
    """Add `agent-assist chat`."""
    parser = subparsers.add_parser(
        "chat",
        help="chat in the terminal (starts the server for this directory)",
        description="Chat with the assistant in the terminal. The server runs in a subprocess; "
        "the session is saved on exit and offered for resume next time.",
    )
    parser.add_argument("--workspace", metavar="DIR", help="project directory (default: .)")
    parser.add_argument(
        "--instance",
        metavar="ID",
        help="instance id: which previous session to offer (default: derived from the directory)",
    )
    parser.add_argument(
        "--model",
        metavar="NAME",
        help="the model to ask (default: $AGENT_ASSIST_LLM_MODEL_NAME)",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="the OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 (default: "
        "$AGENT_ASSIST_LLM_BASE_URL, else OpenAI's); its key comes from "
        "$AGENT_ASSIST_LLM_API_KEY (or $OPENAI_API_KEY), never from the command line",
    )
    parser.add_argument(
        "--max-output-tokens",
        type=int,
        metavar="TOKENS",
        help="the most tokens of one answer, 1-1000000 (default: "
        "$AGENT_ASSIST_LLM_MAX_OUTPUT_TOKENS, else the model server's limit)",
    )
    parser.add_argument(
        "--context-window",
        type=int,
        metavar="TOKENS",
        help="the model's context window (compaction starts at 60%% of it)",
    )
    start = parser.add_mutually_exclusive_group()
    start.add_argument(
        "--continue",
        "-c",
        dest="continue_",
        action="store_true",
        help="resume this project's latest session without asking",
    )
    start.add_argument(
        "--resume",
        "-r",
        nargs="?",
        const="",
        metavar="ID",
        help="resume session ID (a unique prefix is enough); without ID, pick from a list",
    )
    parser.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="write the model's file edits without showing the diff and asking "
        "(also AGENT_ASSIST_APPROVE_EDITS=1)",
    )
    parser.set_defaults(func=run_chat)
