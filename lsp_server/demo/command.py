"""`agent-assist demo`: the whole flow, offline, against the real server in a temp workspace."""

from __future__ import annotations

import argparse
import shutil
from typing import Any


def run_demo(args: argparse.Namespace) -> int:
    """`agent-assist demo`."""
    import asyncio

    from rich.console import Console

    from .flow import Demo

    console = Console(highlight=False, soft_wrap=True)
    demo = Demo(console, keep=args.keep, verbose=bool(getattr(args, "verbose", False)))
    try:
        return asyncio.run(demo.run())
    except KeyboardInterrupt:
        if not args.keep:
            shutil.rmtree(demo.tmp, ignore_errors=True)
        return 130


def register(subparsers: Any) -> None:
    """Add `agent-assist demo`."""
    parser = subparsers.add_parser(
        "demo",
        help="run the whole flow in a temporary workspace (offline without a model)",
        description="Chat, exit, edit a tracked file, relaunch and resume with drift, search, "
        "restore a checkpoint and fork, in a temporary workspace and store. Without a "
        "configured model a scripted local demo model answers.",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary data")
    parser.set_defaults(func=run_demo)
