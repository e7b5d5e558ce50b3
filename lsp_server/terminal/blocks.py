"""Where streamed Markdown can be cut: the top-level blocks that are complete.

A block is complete once a blank line outside a code fence is followed by a line that
starts at the margin (an indented line may still belong to the block above: a list item's
second paragraph, indented code). The terminal prints complete blocks for good and keeps
only the last, growing one on its live line.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def complete_blocks(text: str) -> tuple[list[str], int]:
    """Return the complete top-level blocks of `text` and where the rest begins."""
    blocks: list[str] = []
    fence: str | None = None
    start = 0  # where the current block begins
    blank_seen = False  # a blank line outside a fence since the block's last content
    offset = 0
    lines = text.split("\n")
    for number, line in enumerate(lines):
        last = number == len(lines) - 1  # a line still streaming: not judged yet
        line_start = offset
        offset += len(line) + 1
        if last:
            break
        match = _FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                if not line[match.end() :].strip():
                    fence = None
            continue
        if not line.strip():
            blank_seen = True
            continue
        if blank_seen and not line[:1].isspace():
            block = text[start:line_start].strip("\n")
            if block:
                blocks.append(block)
            start = line_start
        blank_seen = False
        if match:
            fence = match.group(1)
    return blocks, start
