"""What an editor does with a server's `workspace/applyEdit`: URIs, text edits, files.

Edits are applied to files on disk inside the workspace only, never through a symlink.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlparse


def path_to_uri(path: Path) -> str:
    """Return the `file://` URI of an absolute path."""
    return "file://" + quote(str(path.absolute()), safe="/")


def uri_to_path(uri: str) -> Path | None:
    """Return the local path of a `file://` URI (None for anything else)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def _offset(text: str, line: int, character: int) -> int:
    """Turn an LSP position (UTF-16 code units) into an index into `text`."""
    lines = text.split("\n")
    if line >= len(lines):
        return len(text)
    start = sum(len(chunk) + 1 for chunk in lines[:line])
    units = 0
    for index, char in enumerate(lines[line]):
        if units >= character:
            return start + index
        units += 2 if ord(char) > 0xFFFF else 1
    return start + len(lines[line])


def apply_text_edits(text: str, edits: Sequence[Mapping[str, Any]]) -> str:
    """Apply LSP `TextEdit`s (non-overlapping, any order) to `text`."""
    spans = []
    for edit in edits:
        rng = edit["range"]
        start = _offset(text, rng["start"]["line"], rng["start"]["character"])
        end = _offset(text, rng["end"]["line"], rng["end"]["character"])
        spans.append((start, end, str(edit.get("newText", ""))))
    for start, end, new in sorted(spans, key=lambda s: s[0], reverse=True):
        text = text[:start] + new + text[end:]
    return text


class WorkspaceEditor:
    """Applies `workspace/applyEdit` to files on disk, inside the workspace only."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.applied: list[str] = []

    def _target(self, uri: str) -> Path:
        path = uri_to_path(uri)
        if path is None:
            raise ValueError(f"not a file URI: {uri}")
        parent = path.parent.resolve()
        if parent != self.root and self.root not in parent.parents:
            raise ValueError(f"{path} is outside the workspace")
        target = parent / path.name
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISLNK(os.lstat(target).st_mode):
                raise ValueError(f"{target} is a symlink; not followed")
        return target

    def _read(self, target: Path) -> str:
        try:
            return target.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def _write(self, target: Path, text: str) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(target, flags, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        self.applied.append(target.relative_to(self.root).as_posix())

    def apply(self, edit: Mapping[str, Any]) -> tuple[bool, str | None]:
        """Apply a `WorkspaceEdit`; return (applied, failure reason)."""
        try:
            for change in edit.get("documentChanges") or []:
                kind = change.get("kind")
                if kind == "create":
                    target = self._target(change["uri"])
                    overwrite = (change.get("options") or {}).get("overwrite", False)
                    if not target.exists() or overwrite:
                        self._write(target, "")
                elif kind is None:
                    target = self._target(change["textDocument"]["uri"])
                    self._write(target, apply_text_edits(self._read(target), change["edits"]))
                else:
                    return False, f"resource operation {kind!r} is not supported"
            for uri, edits in (edit.get("changes") or {}).items():
                target = self._target(uri)
                self._write(target, apply_text_edits(self._read(target), edits))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return False, str(exc)
        return True, None
