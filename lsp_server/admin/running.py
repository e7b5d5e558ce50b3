"""How an admin command ends: exit codes, the errors that set them, and running a command.

Exit codes: 0 ok, 1 a problem was found (or a deletion was refused or not confirmed),
2 usage.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

OK, PROBLEM, USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad arguments (exit code 2)."""


class ProblemError(Exception):
    """Something the user should know went wrong (exit code 1)."""


def quiet_session_logs(args: argparse.Namespace) -> int:
    """Damage is reported by the command itself; the library's warnings would repeat it.

    Return the level to put back afterwards (the commands also run in-process).
    """
    logger = logging.getLogger("session")
    previous = logger.level
    if not getattr(args, "verbose", False):
        logger.setLevel(logging.ERROR)
    return previous


def run_command(args: argparse.Namespace, fn: Callable[[argparse.Namespace], int]) -> int:
    """Run a command body, mapping errors to exit codes."""
    from session.errors import SessionError
    from session.storage import StorageError

    level = quiet_session_logs(args)
    try:
        return int(fn(args))
    except UsageError as exc:
        sys.stderr.write(f"agent-assist: {exc}\n")
        return USAGE
    except (ProblemError, SessionError, StorageError, OSError) as exc:
        sys.stderr.write(f"agent-assist: {exc}\n")
        return PROBLEM
    finally:
        logging.getLogger("session").setLevel(level)
