"""What admin commands print: a plain console, JSON on stdout, times, a y/N question."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def plain_console() -> Console:
    """Return a console that prints text as it is (no highlighting, soft wrap)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def write_json(value: Any) -> None:
    """Print `value` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def iso(moment: datetime) -> str:
    """Return an ISO timestamp in UTC, `Z`-suffixed."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def short(moment: datetime) -> str:
    """Return `YYYY-MM-DD HH:MM` in UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def confirm(question: str, assume_yes: bool) -> bool:
    """Ask y/N on the terminal (stderr, so `--json` output stays clean); EOF is no."""
    if assume_yes:
        return True
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")
