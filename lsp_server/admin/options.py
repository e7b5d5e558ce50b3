"""The options several admin commands share (kept apart: the parser imports no command)."""

from __future__ import annotations

import argparse


def add_store_options(
    parser: argparse.ArgumentParser, *, workspace: bool = True, to: str = "check"
) -> None:
    """Add `--store DSN` (else `AGENT_ASSIST_STORE`), `--schema` and the project it counts.

    Doctor's options; the `sessions` commands take them without `--workspace` (they have it).
    """
    parser.add_argument(
        "--store",
        metavar="DSN",
        help=f"local, or the PostgreSQL connection string to {to} (default: $AGENT_ASSIST_STORE)",
    )
    if workspace:
        parser.add_argument(
            "--workspace", metavar="DIR", help="the project whose sessions are counted (default: .)"
        )
    parser.add_argument("--schema", help=argparse.SUPPRESS)  # default $AGENT_ASSIST_STORE_SCHEMA
