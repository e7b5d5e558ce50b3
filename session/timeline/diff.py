"""A change's two sides as text, and the unified diff between them (text only)."""

from __future__ import annotations

import difflib
from collections.abc import Callable

from .project import OLD_REASON, ChangeRow

MAX_BYTES = 2 << 20  # a side larger than this is not diffed
BINARY = "binary content"
TOO_LARGE = "too large to diff (over 2 MB)"
NOT_KEPT = "the content was not kept"

ReadBlob = Callable[[str], bytes | None]


def side_text(
    read_blob: ReadBlob, digest: str | None, withheld: str | None
) -> tuple[str | None, str | None]:
    """Return a side's text (`""` when the file did not exist), or None and why not."""
    if digest is None:
        return ("", None) if withheld != OLD_REASON else (None, OLD_REASON)
    data = side_bytes(read_blob, digest)
    if data is None:
        return None, withheld or NOT_KEPT
    return decoded(data)


def side_bytes(read_blob: ReadBlob, digest: str) -> bytes | None:
    """Return a side's content from the blob store, None if it is not there."""
    try:
        return read_blob(digest)
    except (OSError, ValueError):
        return None


def decoded(data: bytes) -> tuple[str | None, str | None]:
    """Return `data` as text, or None and why not (binary, too large)."""
    if len(data) > MAX_BYTES:
        return None, TOO_LARGE
    if b"\x00" in data:
        return None, BINARY
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, BINARY


def change_diff(read_blob: ReadBlob, row: ChangeRow) -> tuple[str | None, str | None]:
    """Return the unified diff of a change, before to after, or None and why there is none."""
    if row.before is None and row.after is None:
        return None, row.withheld or OLD_REASON
    before, why = side_text(read_blob, row.before, row.withheld)
    if before is None:
        return None, why
    after, why = side_text(read_blob, row.after, row.withheld)
    if after is None:
        return None, why
    return unified(row.path, before, after), None


def unified(path: str, before: str, after: str) -> str:
    """Return the unified diff `a/path` → `b/path` ("" when both sides are the same)."""
    if before == after:
        return ""
    old = _lines(before) if before else []
    lines = difflib.unified_diff(
        old, _lines(after) if after else [], f"a/{path}", f"b/{path}", lineterm=""
    )
    return "\n".join(lines) + "\n"


def _lines(text: str) -> list[str]:
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def touches(diff: str, text: str) -> bool:
    """Return True if the diff adds or removes a line containing `text`."""
    for line in diff.split("\n"):
        if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")) and text in line[1:]:
            return True
    return False
