"""A plain text table: columns padded to their display width, the widest one cut to fit.

`sessions list` prints one at every call; building it with rich cost ~35 ms of imports
and layout, a third of the listing's time at 10,000 sessions. This prints what `git` or
`gh` print: no borders, two spaces between columns, wide (CJK) characters counted as two
cells, newlines and tabs shown as spaces and other control characters visibly (`␛`: a title
is the user's text, see `session.terminal_text`), and on a terminal
the column named to shrink cut with `…` so that no line wraps. Piped, nothing is cut.
"""

from __future__ import annotations

import shutil
import sys
import unicodedata
from collections.abc import Sequence

from session.terminal_text import inert

GAP = "  "
ELLIPSIS = "…"
MIN_SHRUNK = 8  # the shrinking column keeps at least this many cells
QUOTED_CELLS = 60  # the most of a user's text that a one-line message repeats


def clean(text: str) -> str:
    """Return `text` on one line: newlines and tabs as spaces, escapes shown (`␛`)."""
    if text.isprintable():
        return text
    text = inert(text.replace("\n", " ").replace("\t", " "))
    return "".join(c if c.isprintable() else " " for c in text)


def cell_width(char: str) -> int:
    """Return how many terminal cells `char` takes (2 for wide East Asian, 0 combining)."""
    if char.isascii():
        return 1
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def width(text: str) -> int:
    """Return the display width of `text`."""
    return len(text) if text.isascii() else sum(cell_width(c) for c in text)


def cut(text: str, cells: int) -> str:
    """Return `text` cut to at most `cells` cells, ending in `…` when cut."""
    if width(text) <= cells:
        return text
    kept, used = [], 0
    for char in text:
        size = cell_width(char)
        if used + size > cells - 1:
            break
        kept.append(char)
        used += size
    return "".join(kept) + ELLIPSIS


def quoted(text: str, cells: int = QUOTED_CELLS) -> str:
    """Return `text` quoted for a one-line message; a long one cut, with its length said."""
    if width(text) <= cells:
        return repr(text)
    return f"{cut(text, cells)!r} ({len(text):,} characters)"


def render(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    shrink: int,
    right: Sequence[int] = (),
    columns: int | None = None,
) -> str:
    """Return the table as lines of text (each ending in a newline).

    `shrink` is the index of the column cut to fit `columns` cells (None: not cut); the
    columns in `right` are right-aligned (numbers).
    """
    cells = [[clean(h) for h in headers], *([clean(c) for c in row] for row in rows)]
    widths = [max(width(row[i]) for row in cells) for i in range(len(headers))]
    if columns is not None:
        over = sum(widths) + len(GAP) * (len(widths) - 1) - columns
        if over > 0:
            widths[shrink] = max(MIN_SHRUNK, widths[shrink] - over)
    lines = []
    for row in cells:
        parts = []
        for i, text in enumerate(row):
            text = cut(text, widths[i])
            pad = " " * (widths[i] - width(text))
            parts.append(pad + text if i in right else text + pad)
        lines.append(GAP.join(parts).rstrip() + "\n")
    return "".join(lines)


def terminal_columns() -> int | None:
    """Return the terminal's width when stdout is one, else None (piped: nothing is cut)."""
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns
