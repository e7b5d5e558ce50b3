"""File names a scan never tracks, and saying so.

A name that is not UTF-8 cannot be stored in the JSON manifest: it is skipped, and logged.
A name holding a control, line-separator or bidi character (CR, LF, ESC, NEL, U+2028…) would
reach the resume block, the drift message and a terminal: it is refused, and kept in the
manifest's `refused`, so how many a scan newly refused is logged once, the names escaped.
"""

from __future__ import annotations

import logging
import os

from ..terminal_text import has_controls, inert_line
from .manifest import is_utf8

logger = logging.getLogger(__name__)


class RefusedNames:
    """The names one scan refused, over those its previous manifest had refused."""

    def __init__(self, previous: frozenset[str]) -> None:
        self.previous = previous
        self.found: set[str] = set()

    def refuses_entry(self, directory: str, entry_name: str) -> bool:
        """Return True if the entry `entry_name` of `directory` is never to be tracked."""
        if not is_utf8(entry_name):
            # Not representable in the JSON manifest: skipped, said once.
            logger.warning(
                "%r: file name is not UTF-8; not tracked", os.path.join(directory, entry_name)
            )
            return True
        if has_controls(entry_name):
            self.found.add(f"{directory}/{entry_name}" if directory else entry_name)
            return True
        return False

    def refuses_path(self, relative: str) -> bool:
        """Return True (and remember it) if the path `relative` holds a control character."""
        if has_controls(relative):
            self.found.add(relative)
            return True
        return False

    def all(self) -> frozenset[str]:
        """Return the names refused, by this scan or before."""
        return self.previous | self.found

    def report_new(self) -> None:
        """Log the names this scan refused that the previous manifest had not."""
        new = sorted(self.found - self.previous)
        if new:
            shown = ", ".join(f"'{inert_line(name)}'" for name in new[:5])
            more = f" and {len(new) - 5} more" if len(new) > 5 else ""
            logger.warning(
                "%d file name(s) with control or line-separator characters skipped, not "
                "tracked: %s%s",
                len(new),
                shown,
                more,
            )
